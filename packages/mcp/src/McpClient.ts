/**
 * The MCP client engine: one implementation of request routing, initialize and version
 * negotiation, pagination, result extraction and cancellation, running on any `Transport`.
 *
 * Cancellation is interruption: a request waits in its caller's fiber, and when that fiber is
 * interrupted while waiting (a user's stop, a closing scope) the engine runs `abandon` — the one
 * place that sends `notifications/cancelled` — as the fiber ends, or sooner if it makes another
 * request while it unwinds; the call timeout abandons a request the same way.
 *
 * @since 0.1.0
 */
import type * as McpCallResult from "@skald/domain/McpCallResult"
import * as McpError from "@skald/domain/McpError"
import type * as McpPrompt from "@skald/domain/McpPrompt"
import type * as McpResource from "@skald/domain/McpResource"
import type * as McpTool from "@skald/domain/McpTool"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Tracer from "effect/Tracer"
import * as Elicitation from "./Elicitation.js"
import * as Connection from "./internal/connection.js"
import { initialize } from "./internal/initialize.js"
import * as Listing from "./internal/listing.js"
import * as Prompts from "./internal/prompts.js"
import * as Reader from "./internal/reader.js"
import * as Requests from "./internal/requests.js"
import * as Resources from "./internal/resources.js"
import * as ServerRequests from "./internal/serverRequests.js"
import * as Span from "./internal/span.js"
import * as TaskCalls from "./internal/taskCalls.js"
import * as TaskPoller from "./internal/taskPoller.js"
import * as ToolCache from "./internal/toolCache.js"
import * as ToolCalls from "./internal/toolCalls.js"
import type * as JsonRpc from "./JsonRpc.js"
import * as McpEvents from "./McpEvents.js"
import * as McpLog from "./McpLog.js"
import * as Protocol from "./Protocol.js"
import * as Roots from "./Roots.js"
import * as Sampling from "./Sampling.js"
import { Transport } from "./Transport.js"

/** A JSON object as it came off the wire. */
export type JsonObject = McpTool.JsonObject

/** How the client introduces itself and how patient it is. */
export interface Options {
  /** `clientInfo` in `initialize` (default `{name: "skald", version}`). */
  readonly clientInfo?: { readonly name: string; readonly version: string } | undefined
  /** The default timeout of every request after initialize (default 120 s). */
  readonly callTimeout?: Duration.DurationInput | undefined
  /** The timeout of `initialize` (default 120 s). */
  readonly startTimeout?: Duration.DurationInput | undefined
  /** The most `tools/list` pages followed (default 50). */
  readonly maxToolPages?: number | undefined
  /** The most pages of `resources/list`, `resources/templates/list` and `prompts/list` followed (default 50). */
  readonly maxListPages?: number | undefined
  /** The `ttl` requested for task-augmented calls (default: none, the server's choice). */
  readonly taskTtl?: Duration.DurationInput | undefined
  /** The longest wait for a task that has no ttl (default 1 h). */
  readonly maxTaskWait?: Duration.DurationInput | undefined
  /** The bounds a server's `pollInterval` is clamped to (default 500 ms – 30 s). */
  readonly pollIntervalBounds?:
    | { readonly min: Duration.DurationInput; readonly max: Duration.DurationInput }
    | undefined
  /** How long an abandoned task-augmented call waits for its task handle, to cancel it (default 10 s). */
  readonly taskHandleGrace?: Duration.DurationInput | undefined
  /** How long a person has to answer an elicitation before it is answered `cancel` (default 5 min). */
  readonly userDeadline?: Duration.DurationInput | undefined
  /**
   * With a `Roots` service: how long the connection waits after `notifications/initialized` for
   * the server's first `roots/list` (and the answer handed to the transport) before the client is
   * returned, so no request reaches a server that has not learnt its roots yet — server-filesystem,
   * for one, asks only then and refuses every path until it has (default 1 s; a server that never
   * asks costs that once per connection). Clients without roots never wait.
   */
  readonly rootsWait?: Duration.DurationInput | undefined
  /**
   * Name the server by its `serverInfo.name` once `initialize` has answered, in errors and log
   * lines (default false: the transport's `server` throughout). For an ad-hoc client whose
   * transport could only name the server by its command line or URL; a host keeps its own names.
   */
  readonly nameFromServerInfo?: boolean | undefined
  /**
   * Whether a `notifications/progress` for a `tools/call` restarts its timeout (default true): a
   * tool that keeps reporting progress is not given up on while it does.
   */
  readonly resetTimeoutOnProgress?: boolean | undefined
  /**
   * The longest a `tools/call` may run while its progress keeps restarting its timeout (default
   * 1 h, as the longest task wait); never shorter than the call's own timeout.
   */
  readonly maxTotalTimeout?: Duration.DurationInput | undefined
}

/** What the server said about itself in `initialize`. */
export interface ServerIdentity {
  readonly protocolVersion: string
  readonly capabilities: JsonObject
  readonly serverInfo: JsonObject
  readonly instructions: string | undefined
}

/** Every tool of the server: decoded, and exactly as the server sent them (all pages merged). */
export interface ToolList {
  readonly tools: ReadonlyArray<McpTool.McpTool>
  readonly wire: ReadonlyArray<JsonObject>
}

/** Every resource of the server: decoded, and exactly as sent (all pages merged). */
export interface ResourceList {
  readonly resources: ReadonlyArray<McpResource.McpResource>
  readonly wire: ReadonlyArray<JsonObject>
}

/** Every resource template of the server: decoded, and exactly as sent (all pages merged). */
export interface ResourceTemplateList {
  readonly templates: ReadonlyArray<McpResource.McpResourceTemplate>
  readonly wire: ReadonlyArray<JsonObject>
}

/** A `resources/read` answer: its contents (blobs decoded to bytes) and the result exactly as sent. */
export interface ReadOutcome {
  readonly contents: ReadonlyArray<McpResource.McpResourceContents>
  readonly wire: JsonObject
}

/** Every prompt of the server: decoded, and exactly as sent (all pages merged). */
export interface PromptList {
  readonly prompts: ReadonlyArray<McpPrompt.McpPrompt>
  readonly wire: ReadonlyArray<JsonObject>
}

/** A `prompts/get` answer: decoded, and exactly as sent. */
export interface PromptOutcome {
  readonly result: McpPrompt.PromptResult
  readonly wire: JsonObject
}

/** What a completion is for: a prompt's argument, or a resource template's variable. */
export type CompletionRef =
  | { readonly type: "ref/prompt"; readonly name: string }
  | { readonly type: "ref/resource"; readonly uri: string }

/** Per-request options. */
export interface RequestOptions {
  /** Overrides the client's timeout for this request (for a task: for the call that creates it). */
  readonly timeout?: Duration.DurationInput | undefined
  /** Told each status of a task-augmented call while it is polled. */
  readonly onTaskStatus?: ((progress: TaskPoller.TaskProgress) => Effect.Effect<void>) | undefined
  /**
   * Told each `notifications/progress` the server sends for this `tools/call` (every call carries
   * a `_meta.progressToken`). Runs on the connection's reader: keep it quick.
   */
  readonly onProgress?: ((progress: Progress) => Effect.Effect<void>) | undefined
  /** Overrides the client's `maxTotalTimeout` for this call. */
  readonly maxTotalTimeout?: Duration.DurationInput | undefined
  /**
   * @internal The request's span (set by the engine under an installed tracer; internal/span.ts):
   * its trace context goes in `params._meta.traceparent`.
   */
  readonly traceSpan?: Tracer.Span | undefined
}

/** One `notifications/progress` of a call. */
export interface Progress {
  /** The server's progress value (it increases with each report). */
  readonly progress: number
  /** The total, when the server knows it. */
  readonly total: number | undefined
  /** What the server says it is doing (2025-03-26 on). */
  readonly message: string | undefined
  /** Since the call was sent. */
  readonly elapsedMillis: number
}

/** A task's status while it is polled. */
export type TaskProgress = TaskPoller.TaskProgress

/** A `tools/call` answer: the classified result and the `CallToolResult` exactly as sent. */
export interface CallOutcome {
  readonly result: McpCallResult.McpCallResult
  readonly wire: JsonObject
}

/** A connected, initialized MCP client. */
export interface Service {
  /** The server name, for logs and errors. */
  readonly server: string
  /** What the server said in `initialize`. */
  readonly identity: ServerIdentity
  /** Lists every tool now (following `nextCursor`) and updates the cached list. */
  readonly refreshTools: Effect.Effect<ToolList, McpError.McpError>
  /** The cached tool list; lists on first use and waits for a refresh under way. */
  readonly tools: Effect.Effect<ReadonlyArray<McpTool.McpTool>, McpError.McpError>
  /** The cached tool list with the wire entries; lists on first use and waits for a refresh under way. */
  readonly toolList: Effect.Effect<ToolList, McpError.McpError>
  /** Each new tool list, starting with the current one once listed. */
  readonly toolListChanges: Stream.Stream<ToolList>
  /** Calls a tool and classifies its result. `isError` results succeed, with `isError: true`. */
  readonly callTool: (
    name: string,
    args?: JsonObject,
    options?: RequestOptions
  ) => Effect.Effect<CallOutcome, McpError.McpError>
  /** Lists every resource (following `nextCursor`). Needs the server's `resources` capability. */
  readonly listResources: Effect.Effect<ResourceList, McpError.McpError>
  /** Lists every resource template (following `nextCursor`). Needs `resources`. */
  readonly listResourceTemplates: Effect.Effect<ResourceTemplateList, McpError.McpError>
  /** Reads a resource: text, or blobs decoded from base64. Needs `resources`. */
  readonly readResource: (uri: string) => Effect.Effect<ReadOutcome, McpError.McpError>
  /** `resources/subscribe`. Needs `resources.subscribe`. */
  readonly subscribeResource: (uri: string) => Effect.Effect<void, McpError.McpError>
  /** `resources/unsubscribe`. Needs `resources.subscribe`. */
  readonly unsubscribeResource: (uri: string) => Effect.Effect<void, McpError.McpError>
  /**
   * Subscribes to `uri` for as long as the stream runs (unsubscribing when it ends) and emits the
   * URI on each `notifications/resources/updated` for it.
   */
  readonly watchResource: (uri: string) => Stream.Stream<string, McpError.McpError>
  /** The URI of every `notifications/resources/updated`. */
  readonly resourceUpdates: Stream.Stream<string>
  /** One element per `notifications/resources/list_changed`. */
  readonly resourceListChanges: Stream.Stream<void>
  /** Lists every prompt (following `nextCursor`). Needs the server's `prompts` capability. */
  readonly listPrompts: Effect.Effect<PromptList, McpError.McpError>
  /** `prompts/get` with string arguments. Needs `prompts`. */
  readonly getPrompt: (
    name: string,
    args?: Readonly<Record<string, string>>
  ) => Effect.Effect<PromptOutcome, McpError.McpError>
  /** One element per `notifications/prompts/list_changed`. */
  readonly promptListChanges: Stream.Stream<void>
  /**
   * `completion/complete`: values for a prompt's argument or a resource template's variable;
   * `context` holds the arguments already chosen. Needs the server's `completions` capability.
   */
  readonly complete: (
    ref: CompletionRef,
    argument: { readonly name: string; readonly value: string },
    context?: Readonly<Record<string, string>>
  ) => Effect.Effect<McpPrompt.Completion, McpError.McpError>
  /** `logging/setLevel`: the least severe level the server should send. Needs `logging`. */
  readonly setLogLevel: (level: McpLog.Level) => Effect.Effect<void, McpError.McpError>
  /** Sends any request and returns its raw `result`. */
  readonly request: (
    method: string,
    params?: unknown,
    options?: RequestOptions
  ) => Effect.Effect<unknown, McpError.McpError>
  /** Sends a notification. */
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void>
  /**
   * Notifications whose method is not the protocol's own (outside `notifications/`): the seed's
   * `event/*` push events.
   */
  readonly events: Stream.Stream<JsonRpc.Notification>
  /** Protocol notifications the engine does not consume itself (progress, resources/updated, …). */
  readonly notifications: Stream.Stream<JsonRpc.Notification>
  /**
   * Waits until the connection has ended — the server exited, the transport failed, or the
   * scope closed — and returns why. Every request still pending has failed with that reason.
   */
  readonly closed: Effect.Effect<McpError.McpConnectionError>
}

/** The client of one MCP server. */
export class McpClient extends Context.Tag("@skald/mcp/McpClient")<McpClient, Service>() {}

/** The error code of "URL elicitation required" (2025-11-25). */
export const URL_ELICITATION_REQUIRED = Connection.URL_ELICITATION_REQUIRED

/** Reason sent in `notifications/cancelled` when the waiting fiber was interrupted by a stop. */
export const STOP_REASON = Connection.STOP_REASON
/** Reason sent in `notifications/cancelled` when the call timeout fired. */
export const TIMEOUT_REASON = Connection.TIMEOUT_REASON

const path = (root: unknown, ...keys: Array<string>): unknown =>
  keys.reduce<unknown>((node, key) => (Predicate.isRecord(node) ? node[key] : undefined), root)

/**
 * Connects over the `Transport` in context: starts the reader, initializes, and returns the
 * client. The connection lives as long as the scope.
 *
 * The engine's parts live in internal/: requests and deadlines (`requests.ts`, the hot path),
 * server requests (`serverRequests.ts`), the tool cache (`toolCache.ts`), initialize and version
 * negotiation (`initialize.ts`), task-augmented calls (`taskCalls.ts`, over `taskPoller.ts`),
 * `tools/call` (`toolCalls.ts`) and the reader (`reader.ts`). Each part is built once per
 * connection from the one `Connection` context; here they are wired together, in the order the
 * connection needs them.
 */
export const make = (options: Options = {}): Effect.Effect<Service, McpError.McpError, Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const elicitationHandler = Option.getOrUndefined(yield* Effect.serviceOption(Elicitation.ElicitationHandler))
    const roots = Option.getOrUndefined(yield* Effect.serviceOption(Roots.Roots))
    const samplingHandler = Option.getOrUndefined(yield* Effect.serviceOption(Sampling.SamplingHandler))
    // Every line of this connection goes to the sink in place at connect time, whichever fiber logs it.
    const sink = yield* McpLog.McpLogSink
    const clock = yield* Effect.clock
    const conn = new Connection.Connection(transport, Connection.settings(options), clock, sink)

    // --- requests and deadlines ------------------------------------------------------------
    const taskSignals = TaskPoller.makeStatusSignals()
    /** Progress of task-augmented calls under way, by their progress token. */
    const taskProgress: TaskCalls.ProgressTable = new Map()
    const requests = yield* Requests.make(conn, taskSignals)

    // --- streams of what the server pushes -------------------------------------------------
    const events = yield* PubSub.unbounded<JsonRpc.Notification>()
    const notifications = yield* PubSub.unbounded<JsonRpc.Notification>()
    const eventSink = yield* McpEvents.McpEventSink
    yield* Effect.addFinalizer(() => Effect.zipRight(PubSub.shutdown(events), PubSub.shutdown(notifications)))

    // --- server requests, the tool cache, the reader ---------------------------------------
    const serverRequests = yield* ServerRequests.make(
      conn,
      elicitationHandler,
      {
        pause: requests.pauseTimeouts,
        resume: requests.resumeTimeouts
      },
      roots,
      samplingHandler
    )
    const cache = yield* ToolCache.make(conn, requests.request)
    const reader = Reader.make(conn, {
      requests,
      serverRequests,
      onToolsChanged: cache.onToolsChanged,
      taskSignals,
      taskProgress,
      events,
      notifications,
      eventSink,
      scope: yield* Effect.scope
    })
    yield* Effect.forkScoped(reader)
    yield* Effect.forkScoped(requests.timer)
    yield* Effect.addFinalizer(() => requests.stop)

    // --- initialize ------------------------------------------------------------------------
    const identity = yield* initialize(
      conn,
      elicitationHandler,
      roots !== undefined,
      requests.send,
      requests.notify,
      samplingHandler
    )
    const serverName = typeof identity.serverInfo.name === "string" ? identity.serverInfo.name : "unknown"
    if (roots !== undefined) {
      // A server may ask roots/list only once told `initialized` (server-filesystem does, and until
      // it has taken in the answer every path is outside its empty allowed list): hold the first
      // request until that answer is on its way and a `ping` after it came back (the server has
      // read the answer and had a turn to apply it: server-filesystem resolves the folders with
      // two awaits first), or the bound passes (a server that never asks).
      yield* Deferred.await(serverRequests.rootsListed).pipe(
        Effect.zipRight(Effect.ignore(requests.request("ping", undefined))),
        Effect.timeoutTo({
          duration: conn.settings.rootsWait,
          onSuccess: () => Effect.void,
          onTimeout: () =>
            conn.log("debug", `the server did not ask roots/list within ${Duration.format(conn.settings.rootsWait)}`)
        }),
        Effect.flatten
      )
    }

    // --- tasks and tools/call (what the negotiated revision has) -----------------------------
    const features = Protocol.features(identity.protocolVersion)
    const serverTaskCalls = features.tasks &&
      Predicate.isRecord(path(identity.capabilities, "tasks", "requests", "tools", "call"))
    const serverTaskCancel = Predicate.isRecord(path(identity.capabilities, "tasks", "cancel"))
    const tasks = TaskCalls.make(
      conn,
      requests,
      taskSignals,
      taskProgress,
      serverTaskCancel,
      yield* Effect.runtime<never>()
    )
    yield* conn.log("lifecycle", `connected: ${serverName}, protocol ${identity.protocolVersion}`)
    const { callTool } = ToolCalls.make(conn, requests, cache, features, serverTaskCalls, tasks.callAsTask)

    const server = conn.server
    const request: Service["request"] = (method, params, options) =>
      Span.hot(
        method,
        () => Span.requestAttributes(server, method),
        (span) => requests.request(method, params, span === undefined ? options : { ...options, traceSpan: span })
      )
    // --- roots, resources, prompts, completions, log levels ----------------------------------
    if (roots !== undefined) {
      yield* roots.changes.pipe(
        Stream.runForEach(() => requests.notify("notifications/roots/list_changed")),
        Effect.forkScoped
      )
    }
    const resources = Resources.make(conn, identity.capabilities, request, notifications)
    const prompts = Prompts.make(conn, identity.capabilities, request, notifications)
    const setLogLevel = (level: McpLog.Level) =>
      Effect.zipRight(
        Listing.requireCapability(conn, identity.capabilities, "logging", "logging/setLevel"),
        request("logging/setLevel", { level })
      ).pipe(Effect.asVoid)

    return {
      server,
      identity,
      refreshTools: cache.refreshTools,
      tools: Effect.map(cache.currentTools, (list) => list.tools),
      toolList: cache.currentTools,
      toolListChanges: cache.toolList.changes.pipe(Stream.filterMap((x) => x)),
      callTool,
      ...resources,
      ...prompts,
      setLogLevel,
      request,
      notify: requests.notify,
      events: Stream.fromPubSub(events),
      notifications: Stream.fromPubSub(notifications),
      closed: Deferred.await(requests.closedSignal)
    } satisfies Service
  })

/** The client as a layer over a `Transport` layer. */
export const layer = (options?: Options): Layer.Layer<McpClient, McpError.McpError, Transport> =>
  Layer.scoped(McpClient, make(options))
