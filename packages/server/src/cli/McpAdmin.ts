/**
 * The `skald mcp` administration commands' two paths behind one interface (docs/rpc.md *The CLI as
 * a client*): through the running host's Mcp group when a `skald serve` runs for the home
 * (`viaHost`), else in this process over the home's database (`local`). The handlers
 * (McpHandlers.ts) format what either gives, once; `open` picks the path (HostPath.ts).
 *
 * Over RPC the host's errors come back as the group's Schema errors; here they become the same
 * host errors the local path fails with (`ServerNotFound` → `UnknownServer`, `ServerExists` →
 * `ServerAlreadyRegistered`, `InvalidServer` → `InvalidServerEntry`), so a command says the same
 * thing, with the same hint and exit status, on both paths.
 *
 * @since 0.1.0
 */
import type { McpServerEntry, ServerName } from "@skald/domain"
import { McpRpcs, McpTool as McpToolSchema } from "@skald/domain"
import type { McpTool } from "@skald/domain"
import { Elicitation } from "@skald/mcp"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import { EventRepo } from "../host/EventRepo.js"
import {
  InvalidServerEntry,
  ServerAlreadyRegistered,
  ServerDisabled,
  ServerNotConnected,
  UnknownServer
} from "../host/HostError.js"
import { McpServerRepo } from "../host/McpServerRepo.js"
import * as OneOffConnection from "../host/OneOffConnection.js"
import * as Registration from "../host/Registration.js"
import * as ServerList from "../host/ServerList.js"
import { readLog, ServerLogs } from "../host/ServerLogs.js"
import * as ServerSecrets from "../host/ServerSecrets.js"
import { storedEventOf } from "../rpc/McpHandlers.js"
import * as Elicit from "./Elicit.js"
import * as HostPath from "./HostPath.js"
import * as Host from "./HostRuntime.js"
import * as RpcHost from "./RpcHost.js"
import type * as Settings from "./Settings.js"

/** A registered server: its status and its registration as it may be shown. */
export interface Server {
  readonly summary: McpServerEntry.ServerSummary
  readonly description: McpRpcs.ServerDescription
}

/** What `add` did. */
export interface Added {
  readonly name: string
  readonly replaced: boolean
  readonly storedSecrets: ReadonlyArray<string>
  readonly droppedSecrets: ReadonlyArray<string>
  /** The running host's pid (it connects the server), when one runs. */
  readonly host: Option.Option<number>
}

/** A server's tools: decoded, and exactly as the server sent them. */
export interface Tools {
  readonly tools: ReadonlyArray<McpTool.McpTool>
  readonly wire: ReadonlyArray<unknown>
}

/** What the commands ask, whichever path answers. Failures are the host's errors (see above). */
export interface Admin {
  /** Which path this is. */
  readonly path: "host" | "local"
  readonly list: Effect.Effect<ReadonlyArray<Server>, unknown>
  readonly show: (name: ServerName.ServerName) => Effect.Effect<Server, unknown>
  readonly add: (request: Registration.Request) => Effect.Effect<Added, unknown>
  readonly setEnabled: (name: ServerName.ServerName, enabled: boolean) => Effect.Effect<void, unknown>
  /** The names of the secrets removed with it. */
  readonly remove: (name: ServerName.ServerName) => Effect.Effect<ReadonlyArray<string>, unknown>
  readonly restart: (
    name: ServerName.ServerName
  ) => Effect.Effect<{ readonly enabled: boolean; readonly host: Option.Option<number> }, unknown>
  readonly tools: (name: ServerName.ServerName) => Effect.Effect<Tools, unknown>
  /** The log file (all of it), then with `follow` what is appended. */
  readonly logs: (name: ServerName.ServerName, follow: boolean) => Stream.Stream<Uint8Array | string, unknown>
  readonly events: (
    options: { readonly pending: boolean; readonly limit?: number | undefined }
  ) => Effect.Effect<ReadonlyArray<McpRpcs.StoredEvent>, unknown>
}

/** What the local path runs on: the home's services (HostRuntime.ts) and the settings. */
type Services = Layer.Layer.Success<ReturnType<typeof Host.layer>> | Settings.Settings

const encodeTool = Schema.encodeSync(McpToolSchema.McpTool)

const describe = (entry: McpServerEntry.McpServerEntry) => McpRpcs.ServerDescription.make(Registration.describe(entry))

/** The admin of the home in this process: its database, secret store and log files. */
export const local: Effect.Effect<Admin, never, Services> = Effect.gen(function*() {
  const context = yield* Effect.context<Services>()
  const run = <A, E>(effect: Effect.Effect<A, E, Services>) => Effect.provide(effect, context)
  const listed = run(Effect.gen(function*() {
    const summaries = yield* ServerList.summaries()
    const entries = new Map((yield* (yield* McpServerRepo).list).map((e) => [e.name as string, e]))
    return summaries.flatMap((summary) => {
      const entry = entries.get(summary.name)
      return entry === undefined ? [] : [{ summary, description: describe(entry) }]
    })
  }))
  return {
    path: "local",
    list: listed,
    show: (name) =>
      Effect.flatMap(listed, (all) => {
        const found = all.find((s) => s.summary.name === name)
        return found === undefined ? Effect.fail(new UnknownServer({ name })) : Effect.succeed(found)
      }),
    add: (request) =>
      run(Effect.gen(function*() {
        const done = yield* (yield* Registration.Registration).register(request)
        return {
          name: done.entry.name,
          replaced: done.replaced,
          storedSecrets: done.secrets.map((s) => s.name),
          droppedSecrets: done.droppedSecrets,
          host: yield* ServerList.hostRunning()
        }
      })),
    setEnabled: (name, enabled) =>
      run(Effect.gen(function*() {
        if (!(yield* (yield* McpServerRepo).setEnabled(name, enabled))) return yield* new UnknownServer({ name })
      })),
    remove: (name) =>
      run(Effect.flatMap(ServerSecrets.unregister(name), (removed) =>
        Option.match(removed, {
          onNone: () => Effect.fail(new UnknownServer({ name })),
          onSome: Effect.succeed
        }))),
    restart: (name) => run(ServerList.requestRestart(name)),
    tools: (name) =>
      run(Effect.gen(function*() {
        const options = { ...(yield* Host.connectOptions), origin: `cli pid ${process.pid}` }
        return yield* OneOffConnection.use(name, options, ({ client }) =>
          Effect.gen(function*() {
            yield* client.refreshTools
            yield* client.toolListChanges.pipe(Stream.timeout("300 millis"), Stream.runDrain)
            return yield* client.toolList
          })).pipe(
            Effect.provideService(
              Elicitation.ElicitationHandler,
              process.stdin.isTTY === true ? Elicit.terminal : Elicit.declining
            )
          )
      })).pipe(Effect.scoped),
    logs: (name, follow) =>
      Stream.unwrap(run(Effect.gen(function*() {
        const current = yield* readLog(name)
        const head = Option.match(current, { onNone: () => Stream.empty, onSome: (bytes) => Stream.make(bytes) })
        if (!follow) return head
        const from = Option.match(current, { onNone: () => 0, onSome: (bytes) => bytes.length })
        return Stream.concat(head, (yield* ServerLogs).follow(name, { from }))
      }))),
    events: ({ limit, pending }) =>
      run(Effect.map(
        Effect.flatMap(EventRepo, (repo) => repo.list({ pending, ...(limit === undefined ? {} : { limit }) })),
        (events) => events.map(storedEventOf)
      ))
  } satisfies Admin
})

/** The group's errors as the host errors the local path gives. */
const hostError = (error: unknown): unknown => {
  if (typeof error !== "object" || error === null || !("_tag" in error)) return error
  const e = error as { readonly _tag: string; readonly name?: string; readonly problem?: string }
  switch (e._tag) {
    case "ServerNotFound":
      return new UnknownServer({ name: e.name ?? "" })
    case "ServerExists":
      return new ServerAlreadyRegistered({ name: e.name ?? "" })
    case "InvalidServer":
      return new InvalidServerEntry({ reason: e.problem ?? "" })
    default:
      return error
  }
}

/** The admin of the running host, over its RPC. */
export const viaHost = (host: HostPath.Host): Admin => {
  const { client, pid, url } = host
  const call = <A, E>(effect: Effect.Effect<A, E>) =>
    effect.pipe(RpcHost.reaching(url), Effect.mapError(hostError)) as Effect.Effect<A, unknown>
  const show = (name: string) =>
    call(Effect.all({ description: client.Mcp.Show({ name }), list: client.Mcp.List() }, { concurrency: 2 })).pipe(
      Effect.flatMap(({ description, list }) => {
        const summary = list.find((s) => s.name === name)
        return summary === undefined
          ? Effect.fail(new UnknownServer({ name }))
          : Effect.succeed<Server>({ summary, description })
      })
    )
  return {
    path: "host",
    list: call(client.Mcp.List()).pipe(
      Effect.flatMap((summaries) =>
        Effect.forEach(
          summaries,
          (summary) =>
            call(client.Mcp.Show({ name: summary.name })).pipe(
              Effect.map((description): ReadonlyArray<Server> => [{ summary, description }]),
              // Removed between the two calls: not listed, as the local path would not list it.
              Effect.catchIf((e) => e instanceof UnknownServer, () => Effect.succeed([]))
            ),
          { concurrency: 4 }
        )
      ),
      Effect.map((all) => all.flat())
    ),
    show,
    add: (request) => {
      const t = request.transport
      const o = t._tag === "http" ? t.oauth : undefined
      const oauth = o === undefined ? {} : Object.fromEntries(
        Object.entries({
          clientId: o.clientId,
          clientSecret: o.clientSecret,
          privateKey: o.privateKey,
          signingAlgorithm: o.signingAlgorithm,
          clientMetadataUrl: o.clientMetadataUrl,
          scope: o.scope,
          grant: o.grant
        }).filter(([, v]) => v !== undefined)
      ) as (typeof McpRpcs.HttpTransport.Type)["oauth"]
      return call(client.Mcp.Add({
        name: request.name,
        transport: t._tag === "stdio"
          ? { _tag: "stdio", command: t.command, args: t.args, env: t.env, secretEnv: t.secretEnv }
          : {
            _tag: "http",
            url: t.url,
            ...(t.apiKey === undefined ? {} : { apiKey: t.apiKey }),
            ...(t.apiKeyVariable === undefined ? {} : { apiKeyVariable: t.apiKeyVariable }),
            ...(oauth === undefined || Object.keys(oauth).length === 0 ? {} : { oauth })
          },
        ...(request.description === undefined ? {} : { description: request.description }),
        ...(request.friendlyName === undefined ? {} : { friendlyName: request.friendlyName }),
        ...(request.enabled === undefined ? {} : { enabled: request.enabled }),
        // Roots are this process's folders: made absolute here, not in the host's working folder.
        ...(request.roots === undefined ? {} : { roots: request.roots.map((root) => Path.resolve(root)) }),
        ...(request.replace === undefined ? {} : { replace: request.replace })
      })).pipe(Effect.map((done) => ({ name: request.name, ...done, host: Option.some(pid) })))
    },
    setEnabled: (name, enabled) => call(client.Mcp.SetEnabled({ name, enabled })),
    remove: (name) => Effect.map(call(client.Mcp.Remove({ name })), (done) => done.removedSecrets),
    restart: (name) =>
      Effect.map(call(client.Mcp.Restart({ name })), ({ enabled }) => ({ enabled, host: Option.some(pid) })),
    tools: (name) =>
      Effect.gen(function*() {
        const infos = yield* call(client.Mcp.Tools({ name }))
        if (infos.length === 0) {
          // The host lists the tools of its connection: none while the server is off or not connected.
          const { summary } = yield* show(name)
          if (!summary.enabled) return yield* new ServerDisabled({ name })
          if (summary.state !== "connected") {
            return yield* new ServerNotConnected({
              server: name,
              state: summary.state,
              ...(summary.error === undefined ? {} : { reason: summary.error })
            })
          }
        }
        return {
          tools: infos.map((i) => i.tool),
          wire: infos.map((i) => i.wire ?? encodeTool(i.tool))
        }
      }),
    logs: (name, follow) =>
      client.Mcp.Logs({ name, follow, tailBytes: Number.MAX_SAFE_INTEGER }).pipe(
        Stream.mapError(hostError),
        Stream.catchAll((error) =>
          typeof error === "object" && error !== null && "_tag" in error && error._tag === "RpcClientError"
            ? Stream.fail(
              new RpcHost.HostUnreachable({ url, problem: String((error as { message?: unknown }).message) })
            )
            : Stream.fail(error)
        )
      ),
    events: ({ limit, pending }) => call(client.Mcp.Events({ pending, ...(limit === undefined ? {} : { limit }) }))
  } satisfies Admin
}

/** The admin for this command: the running host's when one runs for the home, else this process's. */
export const open = (
  args: { readonly home: Option.Option<string>; readonly verbose: boolean }
): Effect.Effect<Admin, unknown, Scope.Scope | Settings.Settings> =>
  Effect.flatMap(
    HostPath.choose(args.home, { verbose: args.verbose }),
    Option.match({
      onSome: (host) => Effect.succeed(viaHost(host)),
      onNone: () => Effect.flatMap(Layer.build(Host.layer(args.home)), (context) => Effect.provide(local, context))
    })
  )
