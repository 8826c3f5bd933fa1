/**
 * The Servers page: every registered server with its live status (connected / starting / failed
 * with the error and the next retry / disabled), enable/disable and restart; a server's tools
 * with their input schemas, its log tail following live, and its recent events; a server added
 * (stdio or HTTP, secrets as references: AddServer.tsx).
 */
import type { McpServerEntry, McpTool } from "@skald/domain"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { useEffect, useRef, useState } from "react"
import { type AddPayload, AddServerForm } from "./AddServer.js"
import { type AnyRuntime, useAction, useStreamFold } from "./hooks.js"

/** One recent event of a server, as the page shows it. */
export interface EventView {
  readonly id: number
  readonly method: string
  readonly receivedAt: string
  readonly params: unknown
}

/** What the page needs from the host. */
export interface ServersApi<R> {
  /** The servers, the whole list again on each change (re-subscribed after a reconnect). */
  readonly servers: Stream.Stream<ReadonlyArray<McpServerEntry.ServerSummary>, unknown, R>
  readonly tools: (name: string) => Stream.Stream<ReadonlyArray<McpTool.McpTool>, unknown, R>
  /** The log's last lines, then each new line; `null` starts it over (a fresh subscription). */
  readonly logs: (name: string) => Stream.Stream<string | null, unknown, R>
  readonly events: (name: string) => Stream.Stream<ReadonlyArray<EventView>, unknown, R>
  readonly setEnabled: (name: string, enabled: boolean) => Effect.Effect<unknown, unknown, R>
  readonly restart: (name: string) => Effect.Effect<unknown, unknown, R>
  /** Unregisters the server (and the secrets moved in for it). */
  readonly remove: (name: string) => Effect.Effect<unknown, unknown, R>
  /** Registers a server (it connects at once). */
  readonly add: (payload: AddPayload) => Effect.Effect<unknown, unknown, R>
  /**
   * Authorizes an HTTP server with OAuth, run by the host: the URL to open first, then
   * `Authorized` (the server is restarted with its tokens). Interrupting it gives up.
   */
  readonly login: (name: string) => Stream.Stream<LoginStep, unknown, R>
}

/** A step of an authorization (McpRpcs.LoginStep). */
export type LoginStep = { readonly _tag: "Open"; readonly url: string } | { readonly _tag: "Authorized" }

/**
 * Whether authorizing would help: the server failed on its OAuth login (none yet, expired or the
 * flow failed) — not on a refused configured client, which a login cannot fix.
 */
const needsLogin = (s: McpServerEntry.ServerSummary): boolean => {
  const cause = s.errorCause
  return s.transport === "http" && cause?._tag === "McpHttpError" && cause.oauth !== undefined &&
    cause.oauth !== "client"
}

/**
 * The Authorize button and what follows it. The tab is opened on the click itself (a tab opened
 * later, when the URL arrives, is what popup blockers stop), blank and with no way back to this
 * page, then sent to the URL; the link is shown as well, for when no tab could be opened.
 */
const Authorize = <R extends unknown>({ runtime, api, name, needed }: {
  readonly runtime: AnyRuntime<R>
  readonly api: ServersApi<R>
  readonly name: string
  /** Whether the server's status says a login would help (the button is offered). */
  readonly needed: boolean
}) => {
  const [state, setState] = useState<
    | { readonly _tag: "Idle" }
    | { readonly _tag: "Waiting"; readonly url?: string }
    | { readonly _tag: "Authorized" }
    | { readonly _tag: "Failed"; readonly error: string }
  >({ _tag: "Idle" })
  const fiber = useRef<Fiber.RuntimeFiber<unknown, unknown> | undefined>(undefined)
  useEffect(() => () => {
    if (fiber.current !== undefined) runtime.runFork(Fiber.interrupt(fiber.current))
  }, [runtime])
  const start = () => {
    const tab = window.open("about:blank", "_blank")
    if (tab !== null) tab.opener = null
    setState({ _tag: "Waiting" })
    let sent = false
    const run = runtime.runFork(Stream.runForEach(api.login(name), (step) =>
      Effect.sync(() => {
        if (step._tag === "Open") {
          sent = true
          if (tab !== null && !tab.closed) tab.location.href = step.url
          setState({ _tag: "Waiting", url: step.url })
        } else {
          // A grant with no one to ask (client credentials) never sent the tab anywhere.
          if (!sent) tab?.close()
          setState({ _tag: "Authorized" })
        }
      })))
    fiber.current = run
    run.addObserver((exit) => {
      if (Exit.isFailure(exit) && !Exit.isInterrupted(exit)) {
        const error = Cause.squash(exit.cause)
        tab?.close()
        setState({ _tag: "Failed", error: errorOf(error) })
      }
    })
  }
  if (!needed && state._tag === "Idle") return null
  // The redirect goes to 127.0.0.1 of the machine the browser runs on: the host's only when the
  // page is on a loopback address too.
  const remote = !["127.0.0.1", "localhost", "[::1]"].includes(window.location.hostname)
  return (
    <div className="authorize" data-testid={`authorize-${name}`}>
      {needed || state._tag === "Waiting"
        ? (
          <button
            type="button"
            disabled={state._tag === "Waiting"}
            onClick={start}
            aria-label={`Authorize ${name}`}
          >
            Authorize…
          </button>
        )
        : null}
      {state._tag === "Waiting"
        ? (
          <p className="muted" role="status">
            {state.url === undefined ? "Starting the authorization…" : (
              <>
                Waiting for the authorization in the opened tab (5 minutes at most); if none opened,{" "}
                <a href={state.url} target="_blank" rel="noopener noreferrer">open the authorization page</a>.
              </>
            )}
          </p>
        )
        : null}
      {remote && needed
        ? (
          <p className="muted">
            The authorization ends at 127.0.0.1 on the host's machine: authorize from a browser there, or run{" "}
            <code>skald mcp login {name}</code> on it.
          </p>
        )
        : null}
      {state._tag === "Authorized" ? <p role="status">Authorized: the server reconnects with its new login.</p> : null}
      {state._tag === "Failed" ? <p role="alert" className="error">{state.error}</p> : null}
    </div>
  )
}

const stateText = (s: McpServerEntry.ServerSummary): string => {
  switch (s.state) {
    case "connected":
      return s.toolCount === undefined ? "connected" : `connected (${s.toolCount} tools)`
    case "host-not-running":
      return "host not running"
    default:
      return s.state
  }
}

const errorOf = (message: unknown): string =>
  message instanceof Error ? message.message : typeof message === "string" ? message : JSON.stringify(message)

const ServerRow = <R extends unknown>({ runtime, api, server, selected, onSelect }: {
  readonly runtime: AnyRuntime<R>
  readonly api: ServersApi<R>
  readonly server: McpServerEntry.ServerSummary
  readonly selected: boolean
  readonly onSelect: () => void
}) => {
  const action = useAction(runtime)
  const [confirming, setConfirming] = useState(false)
  const name = server.name
  return (
    <tr aria-selected={selected} data-server={name}>
      <th scope="row">
        <button type="button" className="link" onClick={onSelect} aria-pressed={selected}>
          {name}
        </button>
        {server.friendlyName !== undefined || server.description !== undefined
          ? <div className="muted">{server.friendlyName ?? server.description}</div>
          : null}
      </th>
      <td>{server.transport}</td>
      <td>
        <span className={`state state-${server.state}`} data-testid={`state-${name}`}>{stateText(server)}</span>
        {server.error !== undefined ? <div className="error">{server.error}</div> : null}
        {server.transport === "http"
          ? <Authorize runtime={runtime} api={api} name={name} needed={needsLogin(server)} />
          : null}
        {server.nextRetryAt !== undefined
          ? <div className="muted">next retry at {new Date(server.nextRetryAt).toLocaleTimeString()}</div>
          : null}
      </td>
      <td>
        <div className="actions">
          <button
            type="button"
            disabled={action.pending}
            onClick={() => action.run(api.setEnabled(name, !server.enabled))}
            aria-label={`${server.enabled ? "Disable" : "Enable"} ${name}`}
          >
            {server.enabled ? "Disable" : "Enable"}
          </button>
          <button
            type="button"
            disabled={action.pending || !server.enabled}
            onClick={() => action.run(api.restart(name))}
            aria-label={`Restart ${name}`}
          >
            Restart
          </button>
          <button
            type="button"
            disabled={action.pending || confirming}
            onClick={() => setConfirming(true)}
            aria-label={`Remove ${name}…`}
          >
            Remove…
          </button>
        </div>
        {confirming
          ? (
            <div className="confirm" role="group" aria-label={`Confirm removing ${name}`}>
              <p>Remove {name}? It is unregistered and stopped, and the secrets stored for it are deleted.</p>
              <button
                type="button"
                className="danger"
                onClick={() => {
                  setConfirming(false)
                  action.run(api.remove(name))
                }}
              >
                Remove {name}
              </button>
              <button type="button" onClick={() => setConfirming(false)} autoFocus>Cancel</button>
            </div>
          )
          : null}
        {action.error !== undefined ? <div role="alert" className="error">{action.error}</div> : null}
      </td>
    </tr>
  )
}

const LogTail = <R extends unknown>({ runtime, api, name }: {
  readonly runtime: AnyRuntime<R>
  readonly api: ServersApi<R>
  readonly name: string
}) => {
  const { state: lines, error } = useStreamFold(
    runtime,
    () => api.logs(name),
    [] as ReadonlyArray<string>,
    (all, line) => line === null ? [] : all.length >= 500 ? [...all.slice(-499), line] : [...all, line],
    [name]
  )
  const box = useRef<HTMLPreElement>(null)
  const [follow, setFollow] = useState(true)
  useEffect(() => {
    if (follow && box.current !== null) box.current.scrollTop = box.current.scrollHeight
  }, [lines, follow])
  return (
    <section aria-labelledby="logs-title">
      <h3 id="logs-title">Log</h3>
      <label className="inline">
        <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow
      </label>
      <pre ref={box} className="log" tabIndex={0} aria-label={`Log of ${name}`} data-testid="log">
        {lines.join("\n")}
      </pre>
      {error !== undefined ? <p role="alert" className="error">{errorOf(error)}</p> : null}
    </section>
  )
}

const Tools = <R extends unknown>({ runtime, api, name, state, toolCount }: {
  readonly runtime: AnyRuntime<R>
  readonly api: ServersApi<R>
  readonly name: string
  /** Asked again whenever the server's state or tool count changes. */
  readonly state: McpServerEntry.ServerState
  readonly toolCount: number | undefined
}) => {
  const { state: tools, error } = useStreamFold(
    runtime,
    () => api.tools(name),
    undefined as ReadonlyArray<McpTool.McpTool> | undefined,
    (_, next) => next,
    [name, state, toolCount]
  )
  return (
    <section aria-labelledby="tools-title">
      <h3 id="tools-title">Tools{tools !== undefined ? ` (${tools.length})` : ""}</h3>
      {error !== undefined ? <p role="alert" className="error">{errorOf(error)}</p> : null}
      {tools === undefined && error === undefined ? <p className="muted">Loading…</p> : null}
      <ul className="tools">
        {(tools ?? []).map((tool) => (
          <li key={tool.name}>
            <details>
              <summary>
                <code>{tool.name}</code>
                {tool.title !== undefined || tool.description !== undefined
                  ? <span className="muted">— {tool.title ?? tool.description}</span>
                  : null}
              </summary>
              {tool.description !== undefined ? <p>{tool.description}</p> : null}
              <pre className="json" aria-label={`Input schema of ${tool.name}`}>
                {JSON.stringify(tool.inputSchema, null, 2)}
              </pre>
            </details>
          </li>
        ))}
      </ul>
    </section>
  )
}

const Events = <R extends unknown>({ runtime, api, name }: {
  readonly runtime: AnyRuntime<R>
  readonly api: ServersApi<R>
  readonly name: string
}) => {
  const { state: events, error } = useStreamFold(
    runtime,
    () => api.events(name),
    [] as ReadonlyArray<EventView>,
    (_, next) => next,
    [name]
  )
  return (
    <section aria-labelledby="events-title">
      <h3 id="events-title">Recent events</h3>
      {error !== undefined ? <p role="alert" className="error">{errorOf(error)}</p> : null}
      {events.length === 0 ? <p className="muted">None.</p> : null}
      <ol className="events">
        {events.map((event) => (
          <li key={event.id}>
            <code>{event.method}</code> <time dateTime={event.receivedAt}>{event.receivedAt}</time>
            <pre className="json">{JSON.stringify(event.params, null, 2)}</pre>
          </li>
        ))}
      </ol>
    </section>
  )
}

export const ServersPage = <R extends unknown>({ runtime, api, live }: {
  readonly runtime: AnyRuntime<R>
  readonly api: ServersApi<R>
  /** Connected: the status shown is current (else it is the last known one). */
  readonly live: boolean
}) => {
  const { state: servers, error } = useStreamFold(
    runtime,
    () => api.servers,
    undefined as ReadonlyArray<McpServerEntry.ServerSummary> | undefined,
    (_, next) => next,
    []
  )
  const [selected, setSelected] = useState<string | undefined>(undefined)
  const current = servers?.find((s) => s.name === selected)
  const [adding, setAdding] = useState(false)
  const [added, setAdded] = useState<string | undefined>(undefined)
  const add = useAction(runtime)
  return (
    <div className="servers">
      <h2>Servers</h2>
      {adding
        ? (
          <AddServerForm
            pending={add.pending}
            error={add.error}
            onDone={() => setAdding(false)}
            onAdd={(payload) =>
              add.run(Effect.tap(api.add(payload), () =>
                Effect.sync(() => {
                  setAdding(false)
                  setAdded(payload.name)
                })))}
          />
        )
        : (
          <p className="actions">
            <button
              type="button"
              onClick={() => {
                setAdded(undefined)
                setAdding(true)
              }}
            >
              Add a server…
            </button>
            {added !== undefined ? <span role="status">Added {added}.</span> : null}
          </p>
        )}
      {!live && servers !== undefined
        ? <p className="muted" data-testid="stale">Last known status: not live while disconnected.</p>
        : null}
      {error !== undefined ? <p role="alert" className="error">{errorOf(error)}</p> : null}
      {servers === undefined ? <p className="muted">Loading…</p> : null}
      {servers !== undefined && servers.length === 0
        ? <p>No servers registered yet.</p>
        : null}
      {servers !== undefined && servers.length > 0
        ? (
          <table className={live ? undefined : "stale"}>
            <thead>
              <tr>
                <th scope="col">Server</th>
                <th scope="col">Transport</th>
                <th scope="col">Status</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {servers.map((server) => (
                <ServerRow
                  key={server.name}
                  runtime={runtime}
                  api={api}
                  server={server}
                  selected={server.name === selected}
                  onSelect={() => setSelected(server.name === selected ? undefined : server.name)}
                />
              ))}
            </tbody>
          </table>
        )
        : null}
      {current !== undefined
        ? (
          <div className="detail" aria-label={`Server ${current.name}`} role="region">
            <h2>{current.name}</h2>
            <Tools
              runtime={runtime}
              api={api}
              name={current.name}
              state={current.state}
              toolCount={current.toolCount}
            />
            <LogTail runtime={runtime} api={api} name={current.name} />
            <Events runtime={runtime} api={api} name={current.name} />
          </div>
        )
        : null}
    </div>
  )
}
