/**
 * The MCP client engine: one implementation of request routing, initialize and version
 * negotiation, pagination, result extraction and cancellation, running on any `Transport`.
 *
 * Cancellation is interruption: a request waits in an interruptible region under a failure handler
 * that runs `abandon` — the one place that sends `notifications/cancelled` — whenever the waiting
 * fiber is interrupted (a user's stop, a closing scope); the call timeout abandons it the same way.
 *
 * @since 0.1.0
 */
import { McpError, McpTool } from "@skald/domain"
import type { McpCallResult } from "@skald/domain"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Either from "effect/Either"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as FiberMap from "effect/FiberMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Runtime from "effect/Runtime"
import * as RuntimeFlags from "effect/RuntimeFlags"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as CallResult from "./CallResult.js"
import * as Elicitation from "./Elicitation.js"
import * as Deadlines from "./internal/deadlines.js"
import * as DirectDelivery from "./internal/directDelivery.js"
import * as PendingTable from "./internal/pendingTable.js"
import * as Span from "./internal/span.js"
import * as TaskPoller from "./internal/taskPoller.js"
import * as JsonRpc from "./JsonRpc.js"
import * as McpEvents from "./McpEvents.js"
import * as McpLog from "./McpLog.js"
import * as OutputSchema from "./OutputSchema.js"
import * as Protocol from "./Protocol.js"
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
  /** The `ttl` requested for task-augmented calls (default: none, the server's choice). */
  readonly taskTtl?: Duration.DurationInput | undefined
  /** The longest wait for a task that has no ttl (default 1 h). */
  readonly maxTaskWait?: Duration.DurationInput | undefined
  /** The bounds a server's `pollInterval` is clamped to (default 500 ms – 30 s). */
  readonly pollIntervalBounds?: { readonly min: Duration.DurationInput; readonly max: Duration.DurationInput } | undefined
  /** How long an abandoned task-augmented call waits for its task handle, to cancel it (default 10 s). */
  readonly taskHandleGrace?: Duration.DurationInput | undefined
  /** How long a person has to answer an elicitation before it is answered `cancel` (default 5 min). */
  readonly userDeadline?: Duration.DurationInput | undefined
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

interface Pending extends Deadlines.Node<Pending> {
  readonly id: number
  readonly method: string
  /** A plain tools/call: abandoning it sends notifications/cancelled. */
  readonly cancellable: boolean
  readonly timeoutMillis: number
  /** Completes the fiber waiting for this request (called at most once: the entry leaves `pending` first). */
  resume: (outcome: Effect.Effect<unknown, McpError.McpError>) => void
  /**
   * A plain tools/call: the answer is classified where it is delivered (the transport's read
   * callback, or the reader), and the waiting fiber resumes with the `CallOutcome` — no further
   * step of its own.
   */
  readonly toolName: string | undefined
  readonly tool: McpTool.McpTool | undefined
  /**
   * A task-augmented tools/call: when its caller stops before the answer (the CreateTaskResult)
   * came, the entry stays a little longer and the answer goes here, to cancel the task.
   */
  readonly late: ((answer: unknown) => void) | undefined
  /** Abandoned by its caller; kept only to catch a late answer. */
  orphaned: boolean
  /** When it was sent (epoch millis; set for requests with a timeout). */
  startedAt: number
  /** A plain tools/call: told its progress. */
  readonly onProgress: ((progress: Progress) => Effect.Effect<void>) | undefined
  /** A plain tools/call: the longest it may run while progress restarts its timeout. */
  readonly maxTotalMillis: number
  /** Its deadline was moved by progress. */
  extended: boolean
}

/**
 * A pending entry is built with `new`, never as an object literal: V8 tracks a literal's
 * allocation site and, when its objects tend to survive a scavenge (an in-flight request does),
 * allocates them straight in the old generation, where each drags everything it points to (the
 * waiting fiber's resume chain, the answer) along. Measured on the engine alone (256 in flight,
 * docs/performance.md): with a literal here ~0.8 KB per call reached the old generation and a
 * call cost 5.9 µs of CPU instead of 3.8.
 */
class PendingEntry implements Pending {
  /** Assigned when the request is sent. */
  id = -1
  resume: Pending["resume"] = notWaiting
  orphaned = false
  deadline = 0
  startedAt = 0
  extended = false
  prev: Pending | undefined = undefined
  next: Pending | undefined = undefined
  list: Deadlines.List<Pending> | undefined = undefined
  constructor(
    readonly method: string,
    /** The request's params until it is sent. */
    public params: unknown,
    readonly cancellable: boolean,
    readonly timeoutMillis: number,
    readonly toolName: string | undefined,
    readonly tool: McpTool.McpTool | undefined,
    readonly late: ((answer: unknown) => void) | undefined,
    readonly onProgress: ((progress: Progress) => Effect.Effect<void>) | undefined = undefined,
    readonly maxTotalMillis: number = timeoutMillis
  ) {}
}

const notWaiting = () => {}

const isObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

/** The error code of "URL elicitation required" (2025-11-25). */
export const URL_ELICITATION_REQUIRED = -32042

/** How a server says a tool does not exist ("Unknown tool: x", "Tool x not found", …). */
const SAYS_UNKNOWN = /\b(unknown|not found|no such|does not exist|doesn't exist|not exist)\b/i

/** Reason sent in `notifications/cancelled` when the waiting fiber was interrupted by a stop. */
export const STOP_REASON = "cancelled by the client"
/** Reason sent in `notifications/cancelled` when the call timeout fired. */
export const TIMEOUT_REASON = "timeout"

/**
 * Connects over the `Transport` in context: starts the reader, initializes, and returns the
 * client. The connection lives as long as the scope.
 */
export const make = (options: Options = {}): Effect.Effect<Service, McpError.McpError, Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    // The name in errors and log lines: the transport's, or (nameFromServerInfo) the server's own
    // once initialize has answered; errors the transport raises after that are relabelled.
    let server = transport.server
    let renamed = false
    const relabel = <E extends McpError.McpError>(error: E): E => renamed ? McpError.withServer(error, server) : error
    const callTimeoutMillis = Duration.toMillis(options.callTimeout ?? Protocol.DEFAULT_CALL_TIMEOUT_MILLIS)
    const lateGraceMillis = Duration.toMillis(options.taskHandleGrace ?? "10 seconds")
    const resetOnProgress = options.resetTimeoutOnProgress ?? true
    const maxTotalMillis = Duration.toMillis(options.maxTotalTimeout ?? Protocol.DEFAULT_MAX_TOTAL_TIMEOUT_MILLIS)
    const userDeadline = Duration.decode(options.userDeadline ?? "5 minutes")
    const elicitationHandler = Option.getOrUndefined(yield* Effect.serviceOption(Elicitation.ElicitationHandler))
    const taskTtlMillis = options.taskTtl === undefined ? undefined : Duration.toMillis(options.taskTtl)
    const taskBounds: TaskPoller.Bounds = {
      ...TaskPoller.defaultBounds,
      ...(options.maxTaskWait !== undefined ? { maxWaitMillis: Duration.toMillis(options.maxTaskWait) } : {}),
      ...(options.pollIntervalBounds !== undefined
        ? {
          minPollMillis: Duration.toMillis(options.pollIntervalBounds.min),
          maxPollMillis: Duration.toMillis(options.pollIntervalBounds.max)
        }
        : {})
    }
    const startTimeoutMillis = Duration.toMillis(options.startTimeout ?? Protocol.DEFAULT_START_TIMEOUT_MILLIS)
    const maxToolPages = options.maxToolPages ?? Protocol.MAX_TOOL_PAGES
    // Every line of this connection goes to the sink in place at connect time, whichever fiber logs it.
    const sink = yield* McpLog.McpLogSink
    const log = (tag: McpLog.Tag, text: string) => sink.emit({ server, tag, text })

    // --- requests -------------------------------------------------------------------------
    // The pending table is the engine's hot path; it is private to this closure and only touched
    // synchronously (registration, routing, abandonment, the timer), so no interleaving sees it
    // half-done. (Not a `Map`: see internal/pendingTable.ts.)
    const pending = PendingTable.make<Pending>()
    let nextId = 0
    let closed: McpError.McpConnectionError | undefined

    // Timeouts: one timer fiber per connection sleeps (on Effect's Clock) until the earliest
    // deadline; deadlines live in one FIFO list per distinct timeout, so each request costs O(1).
    const clock = yield* Effect.clock
    const deadlines = Deadlines.make<Pending>()
    let wake = Deferred.unsafeMake<void>(FiberId.none)
    let sleepingUntil = Infinity

    const settle = (entry: Pending) => {
      pending.remove(entry)
      deadlines.remove(entry)
    }

    /**
     * The ONE place a request is given up on — when the fiber waiting for it is interrupted (a
     * stop, a closing scope) and when its deadline passes. It removes the entry and, for a plain
     * `tools/call` still unanswered (DESIGN §2; never `initialize`), sends
     * `notifications/cancelled` exactly once. False when the request had already settled.
     */
    const abandon = (entry: Pending, reason: string): boolean => {
      if (pending.get(entry.id) !== entry) return false
      if (entry.late !== undefined && !entry.orphaned) {
        // Wait briefly for the task handle, so the task can be cancelled (DESIGN §2).
        const late = entry.late
        entry.orphaned = true
        entry.resume = (outcome) => {
          if (Exit.isExit(outcome) && Exit.isSuccess(outcome)) late(outcome.value)
        }
        deadlines.remove(entry)
        deadlines.add(clock.unsafeCurrentTimeMillis(), lateGraceMillis, entry)
        if (entry.deadline < sleepingUntil) Deferred.unsafeDone(wake, Exit.void)
        return true
      }
      settle(entry)
      if (entry.cancellable) {
        transport.send(JsonRpc.notification("notifications/cancelled", { requestId: entry.id, reason }))
      }
      return true
    }

    const expire = (entry: Pending) => {
      if (entry.orphaned) return settle(entry)
      // Taken before abandoning: a task call that times out keeps listening for its handle.
      const resume = entry.resume
      // Progress kept it going until the longest total time: say that, not the timeout.
      const total = entry.extended && entry.deadline >= entry.startedAt + entry.maxTotalMillis
      if (abandon(entry, TIMEOUT_REASON)) {
        resume(Exit.fail(
          new McpError.McpTimeout({
            server,
            method: entry.method,
            timeoutMillis: entry.timeoutMillis,
            ...(total ? { totalMillis: entry.maxTotalMillis } : {})
          })
        ))
      }
    }

    // While an elicitation is open, no request times out: a person is answering. When the last one
    // closes, every pending request's timeout restarts in full.
    let openElicitations = 0
    const pauseTimeouts = () => {
      openElicitations++
      Deferred.unsafeDone(wake, Exit.void)
    }
    const resumeTimeouts = () => {
      openElicitations--
      if (openElicitations > 0) return
      const now = clock.unsafeCurrentTimeMillis()
      for (const entry of pending.values()) {
        if (!Deadlines.isLinked(entry)) continue
        deadlines.remove(entry)
        deadlines.add(now, entry.orphaned ? lateGraceMillis : entry.timeoutMillis, entry)
      }
      Deferred.unsafeDone(wake, Exit.void)
    }

    /**
     * A `notifications/progress` for a pending plain `tools/call`: its timeout restarts, bounded by
     * its longest total time, and its caller is told (the effect returned, run by the reader).
     */
    const onCallProgress = (entry: Pending, params: JsonObject): Effect.Effect<void> | undefined => {
      if (typeof params.progress !== "number") return undefined
      const now = clock.unsafeCurrentTimeMillis()
      if (resetOnProgress && Deadlines.isLinked(entry) && !entry.orphaned) {
        const cap = entry.startedAt + entry.maxTotalMillis
        const until = Math.min(now + entry.timeoutMillis, cap)
        if (until > entry.deadline) {
          deadlines.remove(entry)
          // A deadline short of the cap keeps to its timeout's list; the last one, at the cap, gets its own.
          deadlines.add(now, until === cap ? cap - now : entry.timeoutMillis, entry)
          entry.extended = true
        }
      }
      if (entry.onProgress === undefined) return undefined
      return entry.onProgress({
        progress: params.progress,
        total: typeof params.total === "number" ? params.total : undefined,
        message: typeof params.message === "string" ? params.message : undefined,
        elapsedMillis: now - entry.startedAt
      })
    }

    const timer = Effect.gen(function*() {
      while (true) {
        if (openElicitations > 0) {
          wake = Deferred.unsafeMake<void>(FiberId.none)
          sleepingUntil = -Infinity
          yield* Deferred.await(wake)
          continue
        }
        const now = clock.unsafeCurrentTimeMillis()
        deadlines.expire(now, expire)
        const next = deadlines.earliest()
        wake = Deferred.unsafeMake<void>(FiberId.none)
        sleepingUntil = next ?? Infinity
        if (next === undefined) yield* Deferred.await(wake)
        else yield* Effect.raceFirst(Effect.sleep(next - now), Deferred.await(wake))
      }
    })

    const taskSignals = TaskPoller.makeStatusSignals()
    /** Progress of task-augmented calls under way, by their progress token. */
    const taskProgress = new Map<string, (params: JsonObject) => Effect.Effect<void> | undefined>()
    let taskCallCount = 0

    const closedSignal = yield* Deferred.make<McpError.McpConnectionError>()
    const closeWith = (error: McpError.McpConnectionError) =>
      Effect.sync(() => {
        if (closed !== undefined) return
        closed = relabel(error)
        Deferred.unsafeDone(closedSignal, Exit.succeed(closed))
        const entries = pending.values()
        pending.clear()
        deadlines.clear()
        const reason = relabel(error)
        for (const entry of entries) entry.resume(Exit.fail(reason))
        // Task pollers asleep between polls wake up and find the connection closed.
        taskSignals.notifyAll()
      })

    /**
     * Registers a request: its id, the entry, its deadline and the message go out in one
     * synchronous step. `toolName` marks a plain tools/call whose answer is classified as it is
     * delivered (see `deliver`).
     */
    const register = (entry: PendingEntry, resume: Pending["resume"]) => {
      entry.id = nextId++
      entry.resume = resume
      pending.add(entry)
      if (entry.timeoutMillis !== Infinity) {
        const now = clock.unsafeCurrentTimeMillis()
        entry.startedAt = now
        deadlines.add(now, entry.timeoutMillis, entry)
        if (entry.deadline < sleepingUntil) Deferred.unsafeDone(wake, Exit.void)
      }
      // A plain tools/call holds its arguments here; its params are made now, with the request id
      // as its progress token.
      const params = entry.toolName === undefined
        ? entry.params
        : { name: entry.toolName, arguments: entry.params, _meta: { progressToken: entry.id } }
      entry.params = undefined
      transport.send(JsonRpc.request(entry.id, entry.method, params))
    }

    /**
     * The one request primitive: registers the request when the fiber suspends and waits for its
     * answer; when the waiting fiber is interrupted (a stop, a closing scope), `abandon` runs.
     *
     * This is the hot path of every call, so it is built from the fewest fiber steps that keep
     * those semantics: `Effect.async` without a canceller, inside an interruptible region, under a
     * failure handler in an uninterruptible one — the structure `Effect.onInterrupt` builds, minus
     * its extra steps and closures (the two closures here hold only the entry). `interruptible` is
     * the caller's own flag: a caller in an uninterruptible region cannot be interrupted while it
     * waits, so it needs no handler (and the region is never widened).
     */
    const awaitAnswer = (interruptible: boolean, entry: PendingEntry): Effect.Effect<any, McpError.McpError> => {
      const wait = Effect.async<unknown, McpError.McpError>((resume) => {
        if (closed !== undefined) return resume(Exit.fail(closed))
        register(entry, resume)
      })
      if (!interruptible) return wait
      return Effect.uninterruptible(Effect.catchAllCause(Effect.interruptible(wait), (cause) => {
        // An entry never sent (id -1) is in no table: `abandon` finds nothing to do.
        if (Cause.isInterruptedOnly(cause)) abandon(entry, STOP_REASON)
        return Effect.failCause(cause)
      }))
    }

    const send = (
      method: string,
      params: unknown,
      timeoutMillis: number,
      cancellable: boolean,
      late?: (answer: unknown) => void
    ): Effect.Effect<unknown, McpError.McpError> =>
      Effect.withFiberRuntime((_, status) =>
        awaitAnswer(
          RuntimeFlags.interruption(status.runtimeFlags),
          new PendingEntry(method, params, cancellable, timeoutMillis, undefined, undefined, late)
        )
      )

    /** A request whose answer nobody waits for (`tasks/cancel` from a finalizer); dropped quietly. */
    const requestDetached = (method: string, params: unknown) => {
      if (closed === undefined) {
        register(new PendingEntry(method, params, false, callTimeoutMillis, undefined, undefined, undefined), notWaiting)
      }
    }

    const timeoutOf = (options: RequestOptions | undefined): number =>
      options?.timeout === undefined ? callTimeoutMillis : Duration.toMillis(options.timeout)

    const request = (method: string, params?: unknown, options?: RequestOptions) =>
      send(method, params, timeoutOf(options), method === "tools/call")

    const notify = (method: string, params?: unknown) =>
      Effect.sync(() => {
        if (closed === undefined) transport.send(JsonRpc.notification(method, params))
      })

    // --- streams of what the server pushes -------------------------------------------------
    const events = yield* PubSub.unbounded<JsonRpc.Notification>()
    const notifications = yield* PubSub.unbounded<JsonRpc.Notification>()
    const eventSink = yield* McpEvents.McpEventSink
    yield* Effect.addFinalizer(() => Effect.zipRight(PubSub.shutdown(events), PubSub.shutdown(notifications)))

    // --- server requests: each in its own fiber, keyed by id so `notifications/cancelled` can stop it
    const handlers = yield* FiberMap.make<JsonRpc.RequestId>()

    // Every server request gets exactly one answer — unless the server cancelled it (interruption).
    // A handler that dies is answered -32603 and logged without the defect's text (it may hold input).
    const answer = (id: JsonRpc.RequestId, method: string, handle: Effect.Effect<unknown, JsonRpc.ErrorObject>) =>
      handle.pipe(
        Effect.matchCauseEffect({
          onSuccess: (result) => Effect.sync(() => transport.send(JsonRpc.success(id, result))),
          onFailure: (cause) => {
            const failure = Cause.failureOption(cause)
            if (failure._tag === "Some") {
              const error = failure.value
              return Effect.sync(() => transport.send(JsonRpc.failure(id, error.code, error.message, error.data)))
            }
            if (Cause.isInterruptedOnly(cause)) return Effect.void
            return Effect.zipRight(
              Effect.sync(() =>
                transport.send(JsonRpc.failure(id, JsonRpc.ErrorCode.InternalError, `the client failed to handle ${method}`))
              ),
              log("warning", `the handler of the server's ${method} request failed; answered -32603`)
            )
          }
        })
      )

    const urlCompletions = new Map<string, Deferred.Deferred<void>>()

    const invalidParams = (why: string): JsonRpc.ErrorObject => ({ code: JsonRpc.ErrorCode.InvalidParams, message: why })

    /** Answers `elicitation/create`: the handler asks a person, bounded by the user deadline. */
    const elicit = (params: unknown): Effect.Effect<Elicitation.Response, JsonRpc.ErrorObject> => {
      if (elicitationHandler === undefined) return Effect.succeed({ action: "decline" })
      const handler = elicitationHandler
      const p = isObject(params) ? params : {}
      const message = typeof p.message === "string" ? p.message : ""
      const mode = p.mode === undefined ? "form" : p.mode
      let request: Elicitation.Request
      let fields: ReadonlyArray<Elicitation.Field> = []
      if (mode === "form") {
        const parsed = Elicitation.parseForm(p.requestedSchema)
        if (Either.isLeft(parsed)) return Effect.fail(invalidParams(`unsupported requestedSchema: ${parsed.left}`))
        fields = parsed.right
        request = { _tag: "Form", server, message, fields, confirmation: fields.length === 0 }
      } else if (mode === "url") {
        if (!handler.url) return Effect.fail(invalidParams("this client did not declare URL-mode elicitation"))
        if (typeof p.url !== "string" || typeof p.elicitationId !== "string") {
          return Effect.fail(invalidParams("a URL elicitation needs url and elicitationId"))
        }
        const elicitationId = p.elicitationId
        const done = urlCompletions.get(elicitationId) ?? Deferred.unsafeMake<void>(FiberId.none)
        urlCompletions.set(elicitationId, done)
        request = { _tag: "Url", server, message, url: p.url, elicitationId, completed: Deferred.await(done) }
      } else {
        return Effect.fail(invalidParams(`unknown elicitation mode ${JSON.stringify(mode)}`))
      }
      return Effect.acquireUseRelease(
        Effect.sync(pauseTimeouts),
        () =>
          handler.elicit(request).pipe(
            Effect.timeoutTo({
              duration: userDeadline,
              onSuccess: (response): Elicitation.Response => response,
              onTimeout: (): Elicitation.Response => ({ action: "cancel" })
            })
          ),
        () => Effect.sync(resumeTimeouts)
      ).pipe(
        Effect.flatMap((response): Effect.Effect<Elicitation.Response> => {
          if (response.action !== "accept") return Effect.succeed({ action: response.action })
          if (request._tag === "Url") return Effect.succeed({ action: "accept" })
          const checked = Elicitation.validate(fields, response.content)
          if (Either.isRight(checked)) return Effect.succeed({ action: "accept", content: checked.right })
          return Effect.as(
            log("warning", `an answer to an elicitation did not match its form (${checked.left}); declined instead`),
            { action: "decline" }
          )
        })
      )
    }

    const serverRequest = (message: JsonRpc.Request): Effect.Effect<unknown, JsonRpc.ErrorObject> => {
      switch (message.method) {
        case "ping":
          return Effect.succeed({})
        case "elicitation/create":
          return elicit(message.params)
        default:
          return Effect.fail({ code: JsonRpc.ErrorCode.MethodNotFound, message: `method not found: ${message.method}` })
      }
    }

    // --- tools ---------------------------------------------------------------------------
    const toolList = yield* SubscriptionRef.make<Option.Option<ToolList>>(Option.none())
    const refreshLock = yield* Effect.makeSemaphore(1)
    let wantedGeneration = 0
    let listedGeneration = -1
    let everListed = false
    let latest: ToolList | undefined
    let byName = new Map<string, McpTool.McpTool>()
    const outputChecks = OutputSchema.makeCache()

    const listAllPages = Effect.gen(function*() {
      const wire: Array<JsonObject> = []
      let cursor: string | undefined
      for (let page = 1; page <= maxToolPages; page++) {
        const result = yield* request("tools/list", cursor === undefined ? {} : { cursor })
        if (!isObject(result) || !Array.isArray(result.tools)) {
          return yield* new McpError.McpProtocolError({ server, detail: "tools/list answered without a tools array" })
        }
        for (const tool of result.tools) if (isObject(tool)) wire.push(tool)
        cursor = typeof result.nextCursor === "string" ? result.nextCursor : undefined
        if (cursor === undefined) break
        if (page === maxToolPages) {
          yield* log(
            "warning",
            `tools/list still had a nextCursor after ${maxToolPages} pages; kept the ${wire.length} tools read so far`
          )
        }
      }
      const tools: Array<McpTool.McpTool> = []
      for (const entry of wire) {
        const tool = McpTool.fromWire(entry)
        if (Option.isSome(tool)) tools.push(tool.value)
        else yield* log("warning", "tools/list returned a tool without a name; it was ignored")
      }
      return { tools, wire } satisfies ToolList
    })

    const listNow = Effect.gen(function*() {
      everListed = true
      const generation = wantedGeneration
      const list = yield* listAllPages
      listedGeneration = generation
      latest = list
      byName = new Map(list.tools.map((tool) => [tool.name, tool]))
      yield* SubscriptionRef.set(toolList, Option.some(list))
      return list
    }).pipe(
      Effect.withSpan("McpClient.listTools", { attributes: { "mcp.server": server, "mcp.method": "tools/list" } })
    )

    const refreshTools = refreshLock.withPermits(1)(listNow)

    const isFresh = () => latest !== undefined && listedGeneration >= wantedGeneration
    const currentTools: Effect.Effect<ToolList, McpError.McpError> = Effect.suspend(() =>
      isFresh()
        ? Effect.succeed(latest!)
        : refreshLock.withPermits(1)(Effect.suspend(() => (isFresh() ? Effect.succeed(latest!) : listNow)))
    )

    const onToolsChanged = Effect.suspend(() => {
      wantedGeneration++
      // Only a client that has listed keeps its list fresh; coalesces a burst into one listing.
      if (!everListed) return Effect.void
      return currentTools.pipe(
        Effect.catchAll((error) => log("warning", `could not refresh the tool list: ${error.message}`)),
        Effect.forkScoped,
        Effect.asVoid
      )
    })

    // --- the reader ----------------------------------------------------------------------
    const scope = yield* Effect.scope

    const onNotification = (message: JsonRpc.Notification): Effect.Effect<void> => {
      const params = isObject(message.params) ? message.params : {}
      switch (message.method) {
        case "notifications/message": {
          const level = McpLog.isLevel(params.level) ? params.level : "info"
          const data = typeof params.data === "string" ? params.data : JSON.stringify(params.data)
          const text = typeof params.logger === "string" ? `${params.logger}: ${data}` : `${data}`
          return log(level, text)
        }
        case "notifications/tools/list_changed":
          return Scope.extend(onToolsChanged, scope)
        case "notifications/elicitation/complete": {
          // Only elicitations this connection was asked for; an unknown id is ignored (no growth).
          const done = typeof params.elicitationId === "string" ? urlCompletions.get(params.elicitationId) : undefined
          if (done !== undefined) {
            urlCompletions.delete(params.elicitationId as string)
            Deferred.unsafeDone(done, Exit.void)
          }
          return PubSub.publish(notifications, message).pipe(Effect.asVoid)
        }
        case "notifications/tasks/status": {
          if (typeof params.taskId === "string") taskSignals.notify(params.taskId)
          return PubSub.publish(notifications, message).pipe(Effect.asVoid)
        }
        case "notifications/progress": {
          const token = params.progressToken
          const entry = typeof token === "number" ? pending.get(token) : undefined
          const told = entry !== undefined && entry.toolName !== undefined
            ? onCallProgress(entry, params)
            : (typeof token === "string" ? taskProgress.get(token)?.(params) : undefined)
          const published = PubSub.publish(notifications, message).pipe(Effect.asVoid)
          if (told === undefined) return published
          return Effect.zipRight(
            Effect.catchAllCause(told, () => log("warning", "a progress handler failed; the call goes on")),
            published
          )
        }
        case "notifications/cancelled": {
          const id = params.requestId
          if (typeof id !== "string" && typeof id !== "number") return Effect.void
          return FiberMap.remove(handlers, id)
        }
        default: {
          if (message.method.startsWith("notifications/")) return PubSub.publish(notifications, message).pipe(Effect.asVoid)
          const published = PubSub.publish(events, message).pipe(Effect.asVoid)
          return eventSink === undefined ? published : Effect.zipRight(eventSink.offer(server, message), published)
        }
      }
    }

    const urlElicitationRequired = (method: string, error: JsonRpc.ErrorObject) => {
      const data = isObject(error.data) ? error.data : {}
      const list = Array.isArray(data.elicitations) ? data.elicitations : []
      const urls = list.filter(isObject).filter((e) => typeof e.url === "string").map((e) => ({
        url: e.url as string,
        ...(typeof e.message === "string" ? { message: e.message } : {}),
        ...(typeof e.elicitationId === "string" ? { elicitationId: e.elicitationId } : {})
      }))
      return new McpError.McpUrlElicitationRequired({ server, method, reason: error.message, urls })
    }

    // Set below, with the tools/call code; only used for entries that code registers.
    let finishOnDelivery: (name: string, tool: McpTool.McpTool | undefined, raw: unknown) => Effect.Effect<CallOutcome> =
      () => Exit.die(new Error("McpClient: a tools/call answer came before the client was built"))

    /** Settles a pending request with its response and resumes the fiber waiting for it. */
    const deliver = (entry: Pending, message: JsonRpc.Success | JsonRpc.Failure) => {
      settle(entry)
      if ("result" in message) {
        if (entry.toolName === undefined) entry.resume(Exit.succeed(message.result))
        else entry.resume(finishOnDelivery(entry.toolName, entry.tool, message.result))
      } else if (message.error.code === URL_ELICITATION_REQUIRED) {
        entry.resume(Exit.fail(urlElicitationRequired(entry.method, message.error)))
      } else {
        const error = message.error
        entry.resume(
          Exit.fail(
            new McpError.McpRequestError({
              server,
              method: entry.method,
              code: error.code,
              reason: error.message,
              ...(error.data !== undefined ? { data: error.data } : {})
            })
          )
        )
      }
    }

    /** Delivers a response to its request; returns a warning when there is none waiting. */
    const onResponse = (message: JsonRpc.Success | JsonRpc.Failure): string | undefined => {
      const entry = pending.get(message.id)
      if (entry === undefined) return `dropped a response to unknown request id ${JSON.stringify(message.id)}`
      deliver(entry, message)
      return undefined
    }

    // A transport with the side door (stdio) hands each response to `deliver` from its read
    // callback, unless something it queued earlier is still waiting for the reader: `backlog`
    // counts the messages it queued that the reader has not finished with. (Those queued before
    // the door opened are counted when it opens.) See internal/directDelivery.ts.
    let backlog = 0
    const direct = DirectDelivery.connect(transport, {
      response: (message) => {
        if (backlog > 0) return false
        const entry = pending.get(message.id)
        if (entry === undefined) return false
        deliver(entry, message)
        return true
      },
      queued: () => {
        backlog++
      }
    })
    if (direct) backlog = Option.getOrElse(transport.incoming.unsafeSize(), () => 0)

    const route = (incoming: JsonRpc.Incoming): Effect.Effect<void> => {
      switch (incoming._tag) {
        case "Response": {
          const warning = onResponse(incoming.message)
          return warning === undefined ? Effect.void : log("warning", warning)
        }
        case "Notification":
          return onNotification(incoming.message)
        case "Undelivered":
          return Effect.void
        case "Request": {
          const { id } = incoming.message
          return FiberMap.run(handlers, id, answer(id, incoming.message.method, serverRequest(incoming.message)), { onlyIfMissing: true }).pipe(
            Effect.asVoid
          )
        }
      }
    }

    const reader = Effect.gen(function*() {
      while (true) {
        const [messages, done] = yield* transport.incoming.takeAll
        for (const message of messages) {
          // Responses, the bulk of the traffic, are delivered without an effect step.
          if (message._tag === "Response") {
            const warning = onResponse(message.message)
            if (warning !== undefined) yield* log("warning", warning)
          } else if (message._tag === "Undelivered") {
            const entry = pending.get(message.id)
            if (entry !== undefined) {
              settle(entry)
              entry.resume(Exit.fail(relabel(message.error)))
            }
          } else {
            yield* route(message)
          }
          if (direct && backlog > 0) backlog--
        }
        if (done) return yield* new McpError.McpConnectionClosed({ server })
      }
    }).pipe(
      Effect.catchAll(closeWith),
      Effect.onInterrupt(() => closeWith(new McpError.McpConnectionClosed({ server })))
    )
    yield* Effect.forkScoped(reader)
    yield* Effect.forkScoped(timer)
    yield* Effect.addFinalizer(() => closeWith(new McpError.McpConnectionClosed({ server })))

    // --- initialize ----------------------------------------------------------------------
    const identity = yield* Effect.gen(function*() {
      const result = yield* send(
        "initialize",
        {
          protocolVersion: Protocol.PROTOCOL_VERSION,
          capabilities: {
            experimental: { tasks: {} },
            ...(elicitationHandler === undefined
              ? {}
              : { elicitation: elicitationHandler.url ? { form: {}, url: {} } : { form: {} } })
          },
          clientInfo: options.clientInfo ?? Protocol.CLIENT_INFO
        },
        startTimeoutMillis,
        false
      )
      if (!isObject(result) || typeof result.protocolVersion !== "string") {
        return yield* new McpError.McpProtocolError({
          server,
          detail: "the initialize answer has no protocolVersion"
        })
      }
      const version = result.protocolVersion
      const info = isObject(result.serverInfo) ? result.serverInfo : {}
      if (options.nameFromServerInfo === true && typeof info.name === "string" && info.name.trim().length > 0) {
        server = info.name.trim()
        renamed = server !== transport.server
      }
      if (version !== Protocol.PROTOCOL_VERSION) {
        if (!Protocol.COMPATIBLE_VERSIONS.includes(version)) {
          return yield* new McpError.McpUnsupportedProtocolVersion({
            server,
            requested: Protocol.PROTOCOL_VERSION,
            received: version,
            supported: Protocol.SUPPORTED_VERSIONS
          })
        }
        yield* log("warning", `the server negotiated protocol version ${version} (asked for ${Protocol.PROTOCOL_VERSION})`)
      }
      yield* notify("notifications/initialized")
      return {
        protocolVersion: version,
        capabilities: isObject(result.capabilities) ? result.capabilities : {},
        serverInfo: info,
        instructions: typeof result.instructions === "string" ? result.instructions : undefined
      } satisfies ServerIdentity
    }).pipe(Effect.withSpan("McpClient.initialize", { attributes: { "mcp.server": server, "mcp.method": "initialize" } }))

    const serverName = typeof identity.serverInfo.name === "string" ? identity.serverInfo.name : "unknown"

    // --- tasks -----------------------------------------------------------------------------
    const path = (root: unknown, ...keys: Array<string>): unknown =>
      keys.reduce<unknown>((node, key) => (isObject(node) ? node[key] : undefined), root)
    // What the negotiated revision has (an older server is not expected to do what it lacks).
    const features = Protocol.features(identity.protocolVersion)
    const serverTaskCalls = features.tasks && isObject(path(identity.capabilities, "tasks", "requests", "tools", "call"))
    const serverTaskCancel = isObject(path(identity.capabilities, "tasks", "cancel"))
    const runtime = yield* Effect.runtime<never>()

    const taskEngine: TaskPoller.Engine = {
      server,
      bounds: taskBounds,
      request: (method, params, timeoutMillis) =>
        send(method, params, timeoutMillis ?? callTimeoutMillis, false),
      requestDetached,
      canCancel: () => serverTaskCancel,
      log
    }

    /** A task handle that came after its caller stopped: cancel the task. */
    const cancelLate = (answer: unknown) => {
      const handle = CallResult.parseCreateTask(answer)
      if (handle !== undefined && !TaskPoller.isTerminal(handle.status)) {
        Runtime.runFork(runtime)(TaskPoller.cancel(taskEngine, handle.taskId, "the call was stopped before the task began"))
      }
    }

    const callAsTask = (name: string, args: JsonObject | undefined, options: RequestOptions | undefined) => {
      // A task's progress token lives as long as the task (the spec): its own, not a request id.
      const progressToken = `task-call-${taskCallCount++}`
      return Effect.gen(function*() {
        const task = taskTtlMillis === undefined ? {} : { ttl: taskTtlMillis }
        const onProgress = options?.onProgress
        const sentAt = yield* Clock.currentTimeMillis
        if (onProgress !== undefined) {
          taskProgress.set(progressToken, (params) =>
            typeof params.progress !== "number" ? undefined : onProgress({
              progress: params.progress,
              total: typeof params.total === "number" ? params.total : undefined,
              message: typeof params.message === "string" ? params.message : undefined,
              elapsedMillis: clock.unsafeCurrentTimeMillis() - sentAt
            }))
        }
        const answer = yield* send(
          "tools/call",
          { name, arguments: args ?? {}, task, _meta: { progressToken } },
          timeoutOf(options),
          false,
          cancelLate
        )
        const startedAt = yield* Clock.currentTimeMillis
        const handle = CallResult.parseCreateTask(answer)
        // A server may answer a task-augmented call directly; that answer is the result.
        if (handle === undefined) return answer
        return yield* TaskPoller.poll(taskEngine, taskSignals, name, handle, startedAt, options?.onTaskStatus)
      }).pipe(Effect.ensuring(Effect.sync(() => taskProgress.delete(progressToken))))
    }
    yield* log("lifecycle", `connected: ${serverName}, protocol ${identity.protocolVersion}`)

    // --- tools/call ------------------------------------------------------------------------
    /**
     * The tool `name` from the list, after at most one refresh (none when the list was only now
     * read): `undefined` when the server does not list it. It is called all the same (servers may
     * hide tools); see `callUnlisted`.
     */
    const findTool = (name: string) =>
      Effect.gen(function*() {
        const wasListed = isFresh()
        yield* currentTools
        const tool = byName.get(name)
        if (tool !== undefined || !wasListed) return tool
        // Not seen yet: refresh once.
        yield* refreshTools
        return byName.get(name)
      })

    // A server without tools/list (or one that fails it) is still called directly.
    const lookUpSlowly = (name: string): Effect.Effect<McpTool.McpTool | undefined, McpError.McpError> =>
      findTool(name).pipe(Effect.catchTag("McpRequestError", () => Effect.succeed(undefined)))

    /** Tools the server did not list but answered (bounded by what the caller names: a set of strings). */
    const answeredUnlisted = new Set<string>()

    const unknownTool = (name: string) =>
      new McpError.McpUnknownTool({ server, tool: name, available: latest === undefined ? [] : latest.tools.map((t) => t.name) })

    /**
     * A call of a tool the server did not list: sent as any call; the server's own "no such tool"
     * — a JSON-RPC error -32602/-32601 that says so, or an `isError` result naming the tool and
     * saying so — becomes `McpUnknownTool` with the names it lists. Any other answer is the answer.
     */
    const callUnlisted = (
      interruptible: boolean,
      name: string,
      args: JsonObject | undefined,
      options: RequestOptions | undefined
    ): Effect.Effect<CallOutcome, McpError.McpError> =>
      callPlain(interruptible, name, undefined, args, options).pipe(
        Effect.catchTag("McpRequestError", (error): Effect.Effect<never, McpError.McpError> =>
          Effect.fail(
            (error.code === JsonRpc.ErrorCode.InvalidParams || error.code === JsonRpc.ErrorCode.MethodNotFound) &&
              SAYS_UNKNOWN.test(error.reason)
              ? unknownTool(name)
              : error
          )),
        Effect.flatMap((outcome): Effect.Effect<CallOutcome, McpError.McpError> => {
          if (outcome.result._tag === "Task" || !outcome.result.isError) return Effect.succeed(outcome)
          const text = outcome.result._tag === "Json" ? JSON.stringify(outcome.result.value) ?? "" : outcome.result.text
          return text.includes(name) && SAYS_UNKNOWN.test(text) ? Effect.fail(unknownTool(name)) : Effect.succeed(outcome)
        }),
        Effect.tap(() => {
          answeredUnlisted.add(name)
        })
      )

    const finishCall = (name: string, tool: McpTool.McpTool | undefined, raw: unknown): Effect.Effect<CallOutcome> => {
      const wire = isObject(raw) ? raw : {}
      const { result, warnings } = CallResult.extract(wire)
      let problems: Array<string> | undefined
      if (warnings.length > 0) problems = warnings.map((warning) => `tool ${name}: ${warning}`)
      if (tool?.outputSchema !== undefined && features.structuredContent && result._tag !== "Task" && !result.isError) {
        const structured = wire.structuredContent
        const problem = structured === undefined
          ? "declares an outputSchema but returned no structuredContent"
          : outputChecks(tool.outputSchema)(structured)
        if (problem !== undefined) {
          ;(problems ??= []).push(`tool ${name}: structuredContent does not match its outputSchema: ${problem}`)
        }
      }
      const outcome: CallOutcome = { result, wire }
      return problems === undefined
        ? Exit.succeed(outcome)
        : Effect.as(Effect.forEach(problems, (p) => log("warning", p), { discard: true }), outcome)
    }

    /**
     * `finishCall` run as the answer is delivered (see `deliver`): the waiting fiber resumes with
     * the outcome (or with the warnings to log first). A defect goes to the caller, as it would
     * have in the caller's own step, never to the transport's callback or the reader.
     */
    finishOnDelivery = (name, tool, raw) => {
      try {
        return finishCall(name, tool, raw)
      } catch (defect) {
        return Exit.die(defect)
      }
    }

    /** A plain tools/call: one request, its answer classified as it is delivered (see `deliver`). */
    const callPlain = (
      interruptible: boolean,
      name: string,
      tool: McpTool.McpTool | undefined,
      args: JsonObject | undefined,
      options: RequestOptions | undefined
    ): Effect.Effect<CallOutcome, McpError.McpError> => {
      // The check is compiled here, by the caller, so delivery only runs it.
      if (tool?.outputSchema !== undefined && features.structuredContent) outputChecks(tool.outputSchema)
      const timeoutMillis = timeoutOf(options)
      const maxTotal = options?.maxTotalTimeout === undefined ? maxTotalMillis : Duration.toMillis(options.maxTotalTimeout)
      return awaitAnswer(
        interruptible,
        new PendingEntry(
          "tools/call",
          args ?? {},
          true,
          timeoutMillis,
          name,
          tool,
          undefined,
          options?.onProgress,
          Math.max(maxTotal, timeoutMillis)
        )
      )
    }

    const callWith = (
      interruptible: boolean,
      name: string,
      tool: McpTool.McpTool | undefined,
      args: JsonObject | undefined,
      options: RequestOptions | undefined
    ): Effect.Effect<CallOutcome, McpError.McpError> => {
      if (tool !== undefined && tool.taskSupport !== "forbidden") {
        // Task augmentation only where the tool offers it AND the server declared it (the spec).
        if (serverTaskCalls) return Effect.flatMap(callAsTask(name, args, options), (raw) => finishCall(name, tool, raw))
        if (tool.taskSupport === "required") return Effect.fail(new McpError.McpTaskUnsupported({ server, tool: name }))
      }
      return callPlain(interruptible, name, tool, args, options)
    }

    const callToolIn = (
      interruptible: boolean,
      name: string,
      args: JsonObject | undefined,
      options: RequestOptions | undefined
    ): Effect.Effect<CallOutcome, McpError.McpError> => {
      const known = isFresh() ? byName.get(name) : undefined
      if (known !== undefined) return callWith(interruptible, name, known, args, options)
      // A hidden tool that answered before is called again without a refresh.
      if (answeredUnlisted.has(name) && isFresh() && latest !== undefined) {
        return callUnlisted(interruptible, name, args, options)
      }
      return Effect.flatMap(lookUpSlowly(name), (tool) =>
        Effect.withFiberRuntime((_, status) => {
          const interruptible = RuntimeFlags.interruption(status.runtimeFlags)
          // Listed, or no list to judge by (the server failed tools/list): called as usual.
          if (tool !== undefined || latest === undefined) return callWith(interruptible, name, tool, args, options)
          return callUnlisted(interruptible, name, args, options)
        }))
    }

    // The hot path of the library. A known tool without task support is one fiber step here (it
    // looks at the tracer and the caller's interruptibility), the request (`awaitAnswer`), and one
    // resumption with the outcome already classified on delivery — about nine runtime steps in
    // all, against sixteen before (docs/performance.md). A span (no captured stack trace, not
    // made the context's parent span) is made only under an installed tracer — see
    // internal/span.ts.
    const callTool = (name: string, args?: JsonObject, options?: RequestOptions) =>
      Effect.withFiberRuntime<CallOutcome, McpError.McpError>((fiber, status) => {
        if (!Span.isTraced(fiber)) return callToolIn(RuntimeFlags.interruption(status.runtimeFlags), name, args, options)
        return Span.around(
          "McpClient.callTool",
          { "mcp.server": server, "mcp.method": "tools/call", "mcp.tool": name },
          () =>
            Effect.withFiberRuntime((_, inner) =>
              callToolIn(RuntimeFlags.interruption(inner.runtimeFlags), name, args, options)
            )
        )
      })

    return {
      server,
      identity,
      refreshTools,
      tools: Effect.map(currentTools, (list) => list.tools),
      toolList: currentTools,
      toolListChanges: toolList.changes.pipe(Stream.filterMap((x) => x)),
      callTool,
      request: (method, params, options) =>
        Span.hot("McpClient.request", () => ({ "mcp.server": server, "mcp.method": method }), () =>
          request(method, params, options)),
      notify,
      events: Stream.fromPubSub(events),
      notifications: Stream.fromPubSub(notifications),
      closed: Deferred.await(closedSignal)
    } satisfies Service
  })

/** The client as a layer over a `Transport` layer. */
export const layer = (options?: Options): Layer.Layer<McpClient, McpError.McpError, Transport> =>
  Layer.scoped(McpClient, make(options))
