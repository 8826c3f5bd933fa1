/**
 * The MCP manager: keeps one running connection per enabled server in the registry.
 *
 * The database is the one source of truth. The manager *reconciles* its connections with the
 * `mcp_servers` rows — at once after its own writes, and within about a second after another
 * process's (it watches SQLite's `PRAGMA data_version`). Each server runs in its own fiber (a
 * `FiberMap` keyed by name): connect within the start timeout, serve until the connection ends,
 * and, when a server dies or could not start, try again after a capped exponential backoff — or
 * at once when asked: `restart`, a re-registration, `enable`, or (from another process, through
 * `host_requests`) `skald mcp restart` and `skald secret set` of a secret it refers to.
 * Stopping a server is interrupting its fiber: the transport's finalizer reaps the process.
 * Statuses and a heartbeat go to the status table, so `skald mcp list` in another process sees
 * them.
 *
 * @since 0.1.0
 */
import type { McpError, McpPrompt, McpResource, McpServerEntry, McpTool, ServerName, ToolResult } from "@skald/domain"
import { ToolName } from "@skald/domain"
import type { McpClient } from "@skald/mcp"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberMap from "effect/FiberMap"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as HostedElicitation from "../inbox/HostedElicitation.js"
import { Inbox } from "../inbox/Inbox.js"
import * as Connector from "./Connector.js"
import { EventRecorder } from "./EventRecorder.js"
import {
  CorruptRow,
  type DatabaseError,
  HostAlreadyRunning,
  InvalidServerEntry,
  InvalidToolName,
  ServerNotConnected,
  UnknownServer
} from "./HostError.js"
import { McpServerRepo } from "./McpServerRepo.js"
import * as MediaStore from "./MediaStore.js"
import * as Orphans from "./Orphans.js"
import { Paths } from "./Paths.js"
import * as Redactor from "./Redactor.js"
import { SamplingSource } from "./SamplingSource.js"
import * as SecretNames from "./SecretNames.js"
import * as SecretStoreModule from "./SecretStore.js"
import { SecretStore } from "./SecretStore.js"
import * as ServerEnvironment from "./ServerEnvironment.js"
import * as ServerList from "./ServerList.js"
import { ServerLogs } from "./ServerLogs.js"
import * as ServerSecrets from "./ServerSecrets.js"
import { StatusRepo } from "./StatusRepo.js"
import { isoOf, nowIso } from "./Time.js"

/** How the manager behaves; every duration is configurable so tests run in seconds. */
export interface Options extends Connector.Options {
  /** How often the database is checked for other processes' writes (default 500 ms). */
  readonly watchInterval?: Duration.DurationInput | undefined
  /** How often the heartbeat is written (default 2 s). */
  readonly heartbeatInterval?: Duration.DurationInput | undefined
  /** The first restart delay after a crash (default 1 s), doubled per attempt… */
  readonly restartBase?: Duration.DurationInput | undefined
  /** …up to this (default 60 s). */
  readonly restartMax?: Duration.DurationInput | undefined
  /** A connection that lasted this long resets the backoff (default 60 s). */
  readonly stableAfter?: Duration.DurationInput | undefined
  /** How long a previous host's leftover process group gets after SIGTERM before SIGKILL (default 2 s). */
  readonly orphanGrace?: Duration.DurationInput | undefined
  /** The host's HTTP address (`http://127.0.0.1:8787`), when it serves media: links become absolute. */
  readonly mediaBaseUrl?: string | undefined
  /**
   * A guest manager (a one-off command's, e.g. `skald agent run`): it connects the enabled servers
   * for this process only and claims nothing of the home — no host check or heartbeat, no status
   * writes, no reaping of a previous host's servers, no requests taken — so a running host is not
   * disturbed. Its servers' states are in `started`. Default false (the host's manager).
   */
  readonly guest?: boolean | undefined
  /**
   * How long a person has to answer a server's elicitation (default 5 min; then `cancel`). The
   * servers declare elicitation only when an `Inbox` is in the manager's context: their requests
   * become inbox items (inbox/HostedElicitation.ts). Likewise sampling: with a `SamplingSource` in
   * the context (sampling/HostSampling.ts), servers connected while a model is configured declare
   * `sampling` and are answered by the host's model, each request approved in the inbox.
   */
  readonly elicitationDeadline?: Duration.DurationInput | undefined
}

/** A server's state in this manager (a guest's are nowhere else). */
export interface LocalState {
  readonly name: string
  readonly state: "starting" | "connected" | "failed"
  readonly error?: string | undefined
}

/** A tool of a connected server, with its `mcp__<server>__<tool>` name. */
export interface QualifiedTool {
  readonly name: string
  readonly server: ServerName.ServerName
  readonly tool: McpTool.McpTool
}

/** Why a call did not produce a result. */
export type CallError =
  | InvalidToolName
  | ServerNotConnected
  | McpError.McpError
  | MediaStore.MediaWriteError

/** What asking a connected server for something other than a tool call can fail with. */
export type ServerError = ServerNotConnected | McpError.McpError | MediaStore.MediaWriteError

/** A server's resources and templates. */
export interface ResourceListing {
  readonly resources: ReadonlyArray<McpResource.McpResource>
  readonly templates: ReadonlyArray<McpResource.McpResourceTemplate>
}

/** The manager. */
export interface Service {
  /** Validates and stores the entry, then (re)connects it, replacing a running server of that name. */
  readonly register: (
    entry: McpServerEntry.McpServerEntry
  ) => Effect.Effect<void, InvalidServerEntry | DatabaseError | CorruptRow>
  /** Deletes the entry and the secrets moved in for it (their names returned), and disconnects the server. */
  readonly unregister: (
    name: ServerName.ServerName
  ) => Effect.Effect<ReadonlyArray<string>, UnknownServer | DatabaseError | CorruptRow>
  /** Switches a server on or off, live. */
  readonly setEnabled: (
    name: ServerName.ServerName,
    enabled: boolean
  ) => Effect.Effect<void, UnknownServer | DatabaseError | CorruptRow>
  /** Every registered server with its status. */
  readonly list: Effect.Effect<ReadonlyArray<McpServerEntry.ServerSummary>, DatabaseError | CorruptRow>
  /**
   * A number that changes whenever the connected servers do (one connects or goes, its tool list
   * changes): what `tools`, `toolsFor`, `instructions` and `declaring` answer is the same while it is.
   */
  readonly version: Effect.Effect<number>
  /** The tools of every connected server. */
  readonly tools: Effect.Effect<ReadonlyArray<QualifiedTool>>
  /** One connected server's tool list, decoded and exactly as it sent it; none when it is not connected. */
  readonly toolList: (name: string) => Effect.Effect<Option.Option<McpClient.ToolList>>
  /** The tools of the connected servers named in `grants`. */
  readonly toolsFor: (grants: Iterable<string>) => Effect.Effect<ReadonlyArray<QualifiedTool>>
  /** The `instructions` the connected servers gave in `initialize`, by server name. */
  readonly instructions: Effect.Effect<ReadonlyMap<string, string>>
  /** Calls `mcp__<server>__<tool>`. */
  readonly call: (
    qualifiedName: string,
    args?: McpClient.JsonObject,
    options?: McpClient.RequestOptions
  ) => Effect.Effect<ToolResult.ToolResult, CallError>
  /** The connected servers whose `initialize` declared `capability` (`resources`, `prompts`, …), sorted. */
  readonly declaring: (capability: string) => Effect.Effect<ReadonlyArray<string>>
  /** A connected server's resources and resource templates (none when it has no `templates/list`). */
  readonly listResources: (server: string) => Effect.Effect<ResourceListing, ServerError>
  /**
   * Reads a connected server's resource as markdown text: text contents as they are, blobs saved
   * in the media store and linked like media tool results (MediaStore.fromResourceContents).
   */
  readonly readResource: (server: string, uri: string) => Effect.Effect<string, ServerError>
  /** A connected server's prompts. */
  readonly listPrompts: (server: string) => Effect.Effect<ReadonlyArray<McpPrompt.McpPrompt>, ServerError>
  /** `prompts/get` of a connected server. */
  readonly getPrompt: (
    server: string,
    name: string,
    args?: Readonly<Record<string, string>>
  ) => Effect.Effect<McpPrompt.PromptResult, ServerError>
  /** `completion/complete` for a prompt's argument of a connected server. */
  readonly completePrompt: (
    server: string,
    prompt: string,
    argument: { readonly name: string; readonly value: string },
    context?: Readonly<Record<string, string>>
  ) => Effect.Effect<McpPrompt.Completion, ServerError>
  /** Restarts a server now (a failed one is retried at once); a disabled one stays off. */
  readonly restart: (name: ServerName.ServerName) => Effect.Effect<void, UnknownServer | DatabaseError | CorruptRow>
  /** Brings the running connections in line with the registry now (normally automatic). */
  readonly reconcile: Effect.Effect<void, DatabaseError | CorruptRow>
  /** The process ids of the running stdio servers, by server name. */
  readonly pids: Effect.Effect<ReadonlyMap<string, number>>
  /**
   * Waits until every enabled server has connected or failed once (each start is bounded by the
   * start timeout), and gives their states.
   */
  readonly started: Effect.Effect<ReadonlyArray<LocalState>>
}

/** The manager, a scoped service: `McpManager.Default(options)`; closing its scope stops every server. */
export class McpManager extends Effect.Service<McpManager>()("@skald/server/McpManager", {
  scoped: (options: Options) => make(options)
}) {}

interface Running {
  readonly entry: McpServerEntry.McpServerEntry
  /** Redacts the values its references resolved to from the errors of its calls. */
  readonly redactor: Redactor.Redactor
  readonly client: McpClient.Service
  readonly pid: number | undefined
  readonly tools: ReadonlyArray<McpTool.McpTool>
}

/** What decides whether a running server must be restarted: its config. */
const fingerprint = (entry: McpServerEntry.McpServerEntry): string => JSON.stringify(entry.config)

/** Checks what the schema cannot: a stdio command, an http(s) URL without credentials in it. */
export const validate = (entry: McpServerEntry.McpServerEntry): Effect.Effect<void, InvalidServerEntry> => {
  const config = entry.config
  if (config._tag === "http") {
    if (!URL.canParse(config.url) || !/^https?:$/.test(new URL(config.url).protocol)) {
      return Effect.fail(
        new InvalidServerEntry({ reason: `the url must be http(s), got ${JSON.stringify(config.url)}` })
      )
    }
    // A url is stored and printed as given: a credential in it would reach the database and the logs.
    const credentials = SecretStoreModule.credentialsInUrl(config.url)
    if (credentials !== undefined) {
      return Effect.fail(
        new InvalidServerEntry({
          reason: `the url carries a credential (${credentials}), which would be stored and logged in clear; ` +
            "give the server an api key instead, as a ${NAME} reference to a stored secret (sent as a bearer token)"
        })
      )
    }
  } else if (config.command.trim().length === 0) {
    return Effect.fail(new InvalidServerEntry({ reason: "the command is empty" }))
  }
  for (const key of config._tag === "stdio" ? Object.keys(config.env) : []) {
    if (!SecretNames.isValidName(key)) {
      return Effect.fail(new InvalidServerEntry({ reason: `invalid environment variable name ${JSON.stringify(key)}` }))
    }
  }
  return Effect.void
}

/** The `${NAME}` references of a config. */
const referencesOf = (config: McpServerEntry.McpServerEntry["config"]): ReadonlyArray<string> =>
  SecretNames.secretFields(config).flatMap(([, template]) => SecretNames.references(template))

const describe = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

/** A tagged error's `_tag` and plain fields (strings redacted): the status's `errorCause`. */
const causeOf = (error: unknown, redact: (text: string) => string): McpServerEntry.ErrorCause | undefined => {
  if (typeof error !== "object" || error === null || !("_tag" in error) || typeof error._tag !== "string") {
    return undefined
  }
  const fields: Record<string, string | number | boolean> = {}
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === "string") fields[key] = redact(value)
    else if (typeof value === "number" || typeof value === "boolean") fields[key] = value
  }
  return { ...fields, _tag: error._tag }
}

/** Builds the manager in the current scope; closing the scope stops every server. */
const make = (
  options: Options
): Effect.Effect<
  Service,
  HostAlreadyRunning | DatabaseError | CorruptRow,
  McpServerRepo | StatusRepo | SecretStore | Paths | ServerLogs | EventRecorder | Scope
> =>
  Effect.gen(function*() {
    const repo = yield* McpServerRepo
    const statuses = yield* StatusRepo
    const paths = yield* Paths
    const secretStore = yield* SecretStore
    const logs = yield* ServerLogs
    const recorder = yield* EventRecorder
    const watchInterval = Duration.decode(options.watchInterval ?? "500 millis")
    const heartbeatInterval = Duration.decode(options.heartbeatInterval ?? "2 seconds")
    const restartBase = Duration.decode(options.restartBase ?? "1 second")
    const restartMax = Duration.decode(options.restartMax ?? "60 seconds")
    const stableAfter = Duration.decode(options.stableAfter ?? "60 seconds")
    const orphanGrace = Duration.decode(options.orphanGrace ?? "2 seconds")
    const guest = options.guest === true
    // Elicitations go to the inbox when there is one (HostedElicitation.ts); else none is declared.
    const inbox = yield* Effect.serviceOption(Inbox)
    const elicitationDeadline = options.elicitationDeadline ?? HostedElicitation.DEFAULT_DEADLINE
    const elicitation = Option.map(inbox, (i) => HostedElicitation.make(i, elicitationDeadline))
    // Sampling goes to the host's model when there is a source (sampling/HostSampling.ts) and a model.
    const sampling = yield* Effect.serviceOption(SamplingSource)
    // Stdio servers get the home's server environment, not this process's (ServerEnvironment.ts).
    const connectOptions: Connector.Options = {
      ...options,
      environment: options.environment ?? ServerEnvironment.make(paths),
      ...(Option.isSome(inbox) ? { userDeadline: HostedElicitation.engineDeadline(elicitationDeadline) } : {})
    }

    /** Stops the groups of guests that no longer run, and forgets them; says so per server. */
    const reapGuestLeftovers = Effect.gen(function*() {
      const gone = (yield* statuses.guestGroups).filter((g) => {
        const owner = Orphans.stat(g.ownerPid)
        return owner === undefined || owner.startTime !== g.ownerStartTime || owner.state === "Z"
      })
      if (gone.length === 0) return
      const stopped = yield* Orphans.reap(gone, orphanGrace)
      for (const g of gone) yield* statuses.guestStopped(g.pgid, g.startTime)
      for (const name of stopped) {
        yield* logs.lifecycle(name, "stopped a process a killed command left running")
        yield* Effect.logWarning(`stopped MCP server '${name}', left running by a command that was killed`)
      }
    })

    // One host per database (a guest is not one).
    const other = guest
      ? Option.none()
      : yield* ServerList.hostRunning(Duration.sum(heartbeatInterval, Duration.seconds(8)))
    if (Option.isSome(other) && other.value !== process.pid) return yield* new HostAlreadyRunning({ pid: other.value })

    // A secrets folder others can read is worth a warning at every start (the fix is the user's).
    const exposed = yield* secretStore.exposed.pipe(Effect.orElseSucceed(() => []))
    for (const e of exposed) yield* Effect.logWarning(SecretStoreModule.exposedWarning(e))

    const startedAt = yield* nowIso
    const beat = Effect.flatMap(nowIso, (beatAt) => statuses.beat({ pid: process.pid, startedAt, beatAt }))
    // Servers a killed host left behind are stopped first: their process groups are still recorded
    // (Orphans.ts says how a group is recognised, whatever its command line reads now).
    const reaped = guest ? [] : yield* Orphans.reap(
      (yield* statuses.all).flatMap((status) =>
        status.pgid === undefined || status.startTime === undefined
          ? []
          : [{ name: status.name, pgid: status.pgid, startTime: status.startTime }]
      ),
      orphanGrace
    )
    for (const name of reaped) {
      yield* logs.lifecycle(name, "stopped a process a previous host left running")
      yield* Effect.logWarning(`stopped MCP server '${name}', left running by a previous host that did not shut down`)
    }
    // And those a killed guest (a one-off command's manager) left behind, whoever starts now: the
    // groups whose guest no longer runs (a guest that runs keeps its own).
    yield* reapGuestLeftovers.pipe(
      Effect.catchAll((error) =>
        Effect.logWarning(`could not look for servers a killed command left: ${error.message}`)
      )
    )
    if (!guest) {
      yield* statuses.clear
      // Requests made to a previous host are moot: this one starts every enabled server anyway.
      yield* statuses.takeRequests
      yield* beat
      // Registered before the runners exist, so it runs after they have all stopped.
      yield* Effect.addFinalizer(() =>
        Effect.zipRight(statuses.stopBeating(process.pid), statuses.clear).pipe(Effect.ignore)
      )
    }
    /** This process, as a guest's groups name their owner (undefined without `/proc`: nothing recorded). */
    const self = guest ? Orphans.stat(process.pid) : undefined
    /** A guest's record of a server's group (undefined for a host, or without the group's ids). */
    const guestGroup = (name: string, group: { readonly pgid?: number; readonly startTime?: number }) =>
      self === undefined || group.pgid === undefined || group.startTime === undefined
        ? undefined
        : { name, pgid: group.pgid, startTime: group.startTime, ownerPid: self.pid, ownerStartTime: self.startTime }
    /** A guest records each server's group as it is spawned, and forgets it when the server is stopped. */
    const rememberGroup = (name: string, group: { readonly pgid?: number; readonly startTime?: number }) => {
      const g = guestGroup(name, group)
      return g === undefined
        ? Effect.void
        : statuses.guestStarted(g).pipe(Effect.catchAll((error) => Effect.logWarning(error.message)))
    }
    const forgetGroup = (name: string, group: { readonly pgid?: number; readonly startTime?: number }) => {
      const g = guestGroup(name, group)
      return g === undefined ? Effect.void : statuses.guestStopped(g.pgid, g.startTime).pipe(Effect.ignore)
    }

    /** This manager's own view of its servers' states (a guest's only record of them). */
    const local = yield* Ref.make<ReadonlyMap<string, LocalState>>(new Map())
    const firstReconcile = yield* Deferred.make<void>()

    const connections = yield* Ref.make<ReadonlyMap<string, Running>>(new Map())
    /** The config each runner was started with, by server name. */
    const launched = new Map<string, string>()
    /** The row's `updated_at` each runner was started with: a rewrite retries a failed server. */
    const launchedStamp = new Map<string, string | undefined>()
    /** The servers whose last recorded state is `failed` (waiting for their next attempt). */
    const failing = new Set<string>()
    const runners = yield* FiberMap.make<string>()
    const lock = yield* Effect.makeSemaphore(1)

    const record = (name: string, state: "starting" | "connected" | "failed" | "disabled", extra: {
      readonly error?: string
      readonly errorCause?: McpServerEntry.ErrorCause | undefined
      readonly toolCount?: number
      readonly pid?: number | undefined
      readonly pgid?: number | undefined
      readonly startTime?: number | undefined
      readonly nextRetryAt?: string | undefined
    } = {}) =>
      Effect.gen(function*() {
        if (state === "failed") failing.add(name)
        else failing.delete(name)
        yield* Ref.update(local, (map) => {
          const next = new Map(map)
          if (state === "disabled") next.delete(name)
          else next.set(name, { name, state, error: extra.error })
          return next
        })
        if (guest) return
        yield* statuses.set({ name, state, since: yield* nowIso, ...extra })
      }).pipe(
        Effect.catchAll((error) => Effect.logWarning(`could not record the status of '${name}': ${error.message}`))
      )

    /** Counts the changes of `connections` (the service's `version`). */
    let version = 0
    const setConnection = (name: string, running: Running | undefined) =>
      Ref.update(connections, (map) => {
        const next = new Map(map)
        if (running === undefined) next.delete(name)
        else next.set(name, running)
        version++
        return next
      })

    /** One connection's life: connect, record, serve until it ends. Fails when it cannot connect. */
    const session = (entry: McpServerEntry.McpServerEntry, secrets: Array<Redacted.Redacted<string>>) =>
      Effect.gen(function*() {
        const name = entry.name
        const resolved = yield* secretStore.resolve(name, entry.config)
        secrets.splice(0, secrets.length, ...resolved.secrets)
        // The process group and its leader's start time, recorded as soon as it is spawned: what the
        // next host needs to find it if this one is killed (even while it is still starting).
        let group: { pid?: number; pgid?: number; startTime?: number } = {}
        // A guest forgets the group once the session has stopped it (registered first: runs last).
        if (guest) yield* Effect.addFinalizer(() => forgetGroup(name, group))
        const auth = yield* Connector.oauthFor(name, resolved).pipe(Effect.provideService(SecretStore, secretStore))
        // Declared only while a model is configured: a server connected before one was set gets it on restart.
        const samplingHandler = Option.isSome(sampling) && (yield* sampling.value.available)
          ? sampling.value.handler
          : undefined
        const connection = yield* Connector.connectResolved(name, resolved, connectOptions, {
          auth,
          elicitation: Option.getOrUndefined(elicitation),
          sampling: samplingHandler,
          log: logs.sink(name, resolved.secrets),
          events: recorder.sink,
          spawned: (pid) => {
            const leader = Orphans.stat(pid)
            group = leader === undefined ? { pid } : { pid, pgid: leader.pgid, startTime: leader.startTime }
            return Effect.zipRight(record(name, "starting", group), rememberGroup(name, group))
          }
        }, entry.config.roots)
        const list = yield* connection.client.tools
        const running: Running = {
          entry,
          redactor: Redactor.make(resolved.secrets),
          client: connection.client,
          pid: connection.pid,
          tools: list
        }
        yield* setConnection(name, running)
        yield* Effect.addFinalizer(() => setConnection(name, undefined))
        yield* record(name, "connected", { toolCount: list.length, ...group })
        // The tool list follows the server's list_changed notifications.
        yield* connection.client.toolListChanges.pipe(
          Stream.runForEach((changed) =>
            Effect.zipRight(
              setConnection(name, { ...running, tools: changed.tools }),
              record(name, "connected", { toolCount: changed.tools.length, ...group })
            )
          ),
          Effect.forkScoped
        )
        const since = yield* Clock.currentTimeMillis
        const reason = yield* connection.client.closed
        const lasted = (yield* Clock.currentTimeMillis) - since
        return { reason, lasted }
      }).pipe(Effect.scoped)

    /**
     * A server's fiber: runs sessions, trying again with capped exponential backoff after a crash or
     * a failed start (a bad command, a start timeout, a missing secret, EMFILE/ENFILE, …). A new
     * fiber (restart, re-registration, …) starts over at once, with the backoff reset.
     */
    const runner = (entry: McpServerEntry.McpServerEntry) =>
      Effect.gen(function*() {
        const name = entry.name
        let attempt = 0
        // The values of this server's secrets: never in a status, a log line or a warning.
        const secrets: Array<Redacted.Redacted<string>> = []
        const lifecycle = (text: string) => logs.lifecycle(name, text, secrets)
        const redact = (text: string) => Redactor.make(secrets).redact(text)
        while (true) {
          yield* record(name, "starting")
          const outcome = yield* Effect.either(session(entry, secrets))
          let reason: string
          const failedToStart = Either.isLeft(outcome)
          const cause = causeOf(Either.isLeft(outcome) ? outcome.left : outcome.right.reason, redact)
          if (Either.isLeft(outcome)) {
            reason = redact(describe(outcome.left))
            yield* lifecycle(`failed to start: ${reason}`)
          } else {
            reason = redact(describe(outcome.right.reason))
            yield* lifecycle(`disconnected: ${reason}`)
            if (Duration.greaterThanOrEqualTo(Duration.millis(outcome.right.lasted), stableAfter)) attempt = 0
          }
          const delay = Duration.min(Duration.times(restartBase, 2 ** attempt), restartMax)
          attempt++
          const retryAt = (yield* Clock.currentTimeMillis) + Duration.toMillis(delay)
          yield* lifecycle(`restarting in ${Duration.format(delay)} (attempt ${attempt})`)
          yield* Effect.logWarning(
            `MCP server '${name}' ${failedToStart ? "failed to start" : "stopped"}: ${reason}; restarting in ${
              Duration.format(delay)
            }`
          )
          yield* record(name, "failed", {
            error: `${reason} — restarting in ${Duration.format(delay)} (attempt ${attempt})`,
            errorCause: cause,
            nextRetryAt: isoOf(retryAt)
          })
          yield* Effect.sleep(delay)
        }
      }).pipe(
        Effect.onInterrupt(() =>
          logs.lifecycle(entry.name, "stopped by the host (disabled, removed, replaced or shutting down)")
        )
      )

    /**
     * Stops what must stop and starts what must run. `force`: servers to restart whatever their
     * state; `changedSecrets`: secret names whose failed users are retried. A failed server whose
     * row was written again (re-registered, enabled while enabled) is retried too.
     */
    const reconcileNow = (force: ReadonlySet<string> = new Set(), changedSecrets: ReadonlySet<string> = new Set()) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const entries = yield* repo.list
        const stamps = yield* repo.stamps
        const wanted = new Map(entries.filter((e) => e.enabled).map((e) => [e.name as string, e]))
        yield* Ref.update(local, (map) => new Map([...map].filter(([name]) => wanted.has(name))))
        const stop = [...launched.keys()].filter((name) => {
          const entry = wanted.get(name)
          if (entry === undefined || force.has(name) || launched.get(name) !== fingerprint(entry)) return true
          if (!failing.has(name)) return false
          return launchedStamp.get(name) !== stamps.get(name) ||
            referencesOf(entry.config).some((ref) => changedSecrets.has(ref))
        })
        yield* Effect.forEach(stop, (name) => FiberMap.remove(runners, name), {
          concurrency: "unbounded",
          discard: true
        })
        for (const name of stop) {
          launched.delete(name)
          failing.delete(name)
        }

        if (!guest) {
          const recorded = new Map((yield* statuses.all).map((s) => [s.name, s.state]))
          const names = new Set(entries.map((e) => e.name as string))
          for (const [name] of recorded) if (!names.has(name)) yield* statuses.remove(name)
          for (const entry of entries) {
            if (!entry.enabled && recorded.get(entry.name) !== "disabled") yield* record(entry.name, "disabled")
          }
        }
        for (const [name, entry] of wanted) {
          if (launched.has(name)) continue
          launched.set(name, fingerprint(entry))
          launchedStamp.set(name, stamps.get(name))
          yield* Ref.update(local, (map) => new Map(map).set(name, { name, state: "starting" }))
          yield* FiberMap.run(runners, name, runner(entry))
        }
      }))

    // Another process's writes (the repository's `changes`: SQLite's PRAGMA data_version). Its
    // requests (`skald mcp restart`, `skald secret set`) come with them, in `host_requests`.
    const changes = yield* repo.changes(watchInterval)
    const warn = (error: { readonly message: string }) =>
      Effect.logWarning(`could not check the registry for changes: ${error.message}`)
    yield* changes.pipe(
      Stream.tapError(warn),
      Stream.retry(Schedule.spaced(watchInterval)),
      Stream.runForEach(() =>
        Effect.gen(function*() {
          // A guest leaves the requests to the host they were made to.
          const requests = guest ? [] : yield* statuses.takeRequests
          yield* reconcileNow(
            new Set(requests.filter((r) => r.kind === "restart").map((r) => r.name)),
            new Set(requests.filter((r) => r.kind === "secret").map((r) => r.name))
          )
        }).pipe(Effect.catchAll(warn))
      ),
      Effect.forkScoped
    )
    if (!guest) {
      yield* beat.pipe(
        Effect.catchAll((error) => Effect.logWarning(`could not write the host heartbeat: ${error.message}`)),
        Effect.repeat(Schedule.spaced(heartbeatInterval)),
        Effect.forkScoped
      )
    }
    // Available at once: the first reconciliation starts every enabled server in the background.
    yield* Effect.forkScoped(
      reconcileNow().pipe(
        Effect.catchAll((error) => Effect.logError(error.message)),
        Effect.ensuring(Deferred.succeed(firstReconcile, undefined))
      )
    )

    const connected = Effect.map(Ref.get(connections), (map) => [...map.values()])
    const qualify = (running: Running): ReadonlyArray<QualifiedTool> =>
      running.tools.map((tool) => ({
        name: ToolName.format(running.entry.name, tool.name),
        server: running.entry.name,
        tool
      }))

    const notConnected = (server: string) =>
      Effect.gen(function*() {
        const summary = (yield* ServerList.summaries().pipe(Effect.orElseSucceed(() => []))).find((s) =>
          s.name === server
        )
        return new ServerNotConnected({
          server,
          state: summary?.state ?? "not registered",
          ...(summary?.error === undefined ? {} : { reason: summary.error })
        })
      }).pipe(Effect.provideService(McpServerRepo, repo), Effect.provideService(StatusRepo, statuses))

    const call: Service["call"] = (qualifiedName, args, callOptions) =>
      Effect.gen(function*() {
        const parsed = ToolName.parse(qualifiedName)
        if (Option.isNone(parsed)) return yield* new InvalidToolName({ name: qualifiedName })
        const running = (yield* Ref.get(connections)).get(parsed.value.server)
        if (running === undefined) return yield* Effect.flatMap(notConnected(parsed.value.server), Effect.fail)
        // An error can carry what the server printed (a dying server's stderr tail): redacted.
        const outcome = yield* running.client.callTool(parsed.value.tool, args, callOptions).pipe(
          Effect.mapError((error) => Redactor.redactFields(running.redactor, error))
        )
        return yield* MediaStore.fromCallResult(outcome.result, paths.mediaDir, options.mediaBaseUrl)
      }).pipe(Effect.withSpan("McpManager.call", { attributes: { "mcp.tool": qualifiedName } }))

    /** Runs `f` on a connected server's client; its errors redacted like a call's. */
    const using = <A>(
      server: string,
      what: string,
      f: (client: McpClient.Service) => Effect.Effect<A, McpError.McpError | MediaStore.MediaWriteError>
    ): Effect.Effect<A, ServerError> =>
      Effect.gen(function*() {
        const running = (yield* Ref.get(connections)).get(server)
        if (running === undefined) return yield* Effect.flatMap(notConnected(server), Effect.fail)
        return yield* f(running.client).pipe(
          Effect.mapError((error) =>
            error._tag === "MediaWriteError" ? error : Redactor.redactFields(running.redactor, error)
          )
        )
      }).pipe(Effect.withSpan(`McpManager.${what}`, { attributes: { "mcp.server": server } }))

    const afterWrite = (name: string, force: boolean) => reconcileNow(force ? new Set([name]) : new Set())

    return {
      register: (entry) =>
        Effect.gen(function*() {
          yield* validate(entry)
          // Secrets moved in for the entry it replaces and no longer used go (ServerSecrets.ts).
          yield* ServerSecrets.upsert(entry).pipe(
            Effect.provideService(McpServerRepo, repo),
            Effect.provideService(SecretStore, secretStore)
          )
          yield* afterWrite(entry.name, true)
        }).pipe(Effect.withSpan("McpManager.register", { attributes: { "mcp.server": entry.name } })),
      unregister: (name) =>
        Effect.gen(function*() {
          // The secrets moved in for it go with it (ServerSecrets.ts).
          const removed = yield* ServerSecrets.unregister(name).pipe(
            Effect.provideService(McpServerRepo, repo),
            Effect.provideService(SecretStore, secretStore)
          )
          if (Option.isNone(removed)) return yield* new UnknownServer({ name })
          yield* afterWrite(name, false)
          return removed.value
        }).pipe(Effect.withSpan("McpManager.unregister", { attributes: { "mcp.server": name } })),
      setEnabled: (name, enabled) =>
        Effect.gen(function*() {
          if (!(yield* repo.setEnabled(name, enabled))) return yield* new UnknownServer({ name })
          yield* afterWrite(name, false)
        }).pipe(Effect.withSpan("McpManager.setEnabled", { attributes: { "mcp.server": name, enabled } })),
      list: ServerList.summaries().pipe(
        Effect.provideService(McpServerRepo, repo),
        Effect.provideService(StatusRepo, statuses)
      ),
      version: Effect.sync(() => version),
      tools: Effect.map(connected, (all) => all.flatMap(qualify)),
      toolList: (name) =>
        Effect.flatMap(Ref.get(connections), (map) => {
          const running = map.get(name)
          return running === undefined
            ? Effect.succeedNone
            : running.client.toolList.pipe(
              Effect.orElseSucceed(() => ({ tools: running.tools, wire: [] })),
              Effect.map(Option.some)
            )
        }),
      toolsFor: (grants) => {
        const granted = new Set(grants)
        return Effect.map(connected, (all) => all.filter((r) => granted.has(r.entry.name)).flatMap(qualify))
      },
      instructions: Effect.map(connected, (all) => {
        const said = new Map<string, string>()
        for (const r of all) {
          if (r.client.identity.instructions !== undefined) said.set(r.entry.name, r.client.identity.instructions)
        }
        return said
      }),
      call,
      declaring: (capability) =>
        Effect.map(connected, (all) =>
          all.filter((r) => Predicate.isRecord(r.client.identity.capabilities[capability]))
            .map((r) => r.entry.name as string)
            .sort()),
      listResources: (server) =>
        using(server, "listResources", (client) =>
          Effect.gen(function*() {
            const resources = yield* client.listResources
            // An SDK server with resources but no templates handler answers "method not found".
            const templates = yield* client.listResourceTemplates.pipe(
              Effect.map((list) => list.templates),
              Effect.catchIf(
                (error) => error._tag === "McpRequestError" && error.code === -32601,
                () => Effect.succeed([])
              )
            )
            return { resources: resources.resources, templates } satisfies ResourceListing
          })),
      readResource: (server, uri) =>
        using(server, "readResource", (client) =>
          Effect.flatMap(
            client.readResource(uri),
            (outcome) => MediaStore.fromResourceContents(outcome.contents, paths.mediaDir, options.mediaBaseUrl)
          )),
      listPrompts: (server) =>
        using(server, "listPrompts", (client) => Effect.map(client.listPrompts, (list) => list.prompts)),
      getPrompt: (server, name, args) =>
        using(server, "getPrompt", (client) => Effect.map(client.getPrompt(name, args), (outcome) => outcome.result)),
      completePrompt: (server, prompt, argument, context) =>
        using(
          server,
          "completePrompt",
          (client) => client.complete({ type: "ref/prompt", name: prompt }, argument, context)
        ),
      restart: (name) =>
        Effect.gen(function*() {
          if (Option.isNone(yield* repo.get(name))) {
            return yield* new UnknownServer({ name })
          }
          yield* afterWrite(name, true)
        }).pipe(Effect.withSpan("McpManager.restart", { attributes: { "mcp.server": name } })),
      reconcile: reconcileNow(),
      pids: Effect.map(Ref.get(connections), (map) => {
        const pids = new Map<string, number>()
        for (const [name, running] of map) {
          if (running.pid !== undefined) {
            pids.set(name, running.pid)
          }
        }
        return pids
      }),
      started: Effect.gen(function*() {
        yield* Deferred.await(firstReconcile)
        while (true) {
          const states = [...(yield* Ref.get(local)).values()]
          if (
            states.every((s) => s.state !== "starting")
          ) return states
          yield* Effect.sleep("50 millis")
        }
      })
    } satisfies Service
  })

type Scope = import("effect/Scope").Scope
