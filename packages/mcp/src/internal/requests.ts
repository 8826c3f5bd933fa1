/**
 * Requests and deadlines: the pending table, registration, delivery of answers, abandonment (the
 * one place that sends `notifications/cancelled`), the timeout timer and the connection's end.
 *
 * This is the engine's hot path. Its state is private to the closure `make` builds once per
 * connection and is only touched synchronously (registration, routing, abandonment, the timer), so
 * no interleaving sees it half-done.
 */
import * as McpError from "@skald/domain/McpError"
import type * as McpTool from "@skald/domain/McpTool"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Predicate from "effect/Predicate"
import type * as Tracer from "effect/Tracer"
import * as JsonRpc from "../JsonRpc.js"
import type { Progress, RequestOptions } from "../McpClient.js"
import {
  type Connection,
  type JsonObject,
  STOP_REASON,
  TIMEOUT_REASON,
  URL_ELICITATION_REQUIRED
} from "./connection.js"
import * as Deadlines from "./deadlines.js"
import * as PendingTable from "./pendingTable.js"
import * as Span from "./span.js"
import type * as TaskPoller from "./taskPoller.js"

export interface Pending extends Deadlines.Node<Pending> {
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
  /** The waiting fiber's wait, whose slot holds this entry until it settles (see `Waiter`). */
  waiter: Waiter | undefined
}

/**
 * A pending entry is built with `new`, never as an object literal: V8 tracks a literal's
 * allocation site and, when its objects tend to survive a scavenge (an in-flight request does),
 * allocates them straight in the old generation, where each drags everything it points to (the
 * waiting fiber's resume chain, the answer) along. Measured on the engine alone (256 in flight,
 * docs/performance.md): with a literal here ~0.8 KB per call reached the old generation and a
 * call cost 5.9 µs of CPU instead of 3.8.
 */
export class PendingEntry implements Pending {
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
  /** The request's span, under an installed tracer: its context goes in `params._meta`. */
  span: Tracer.Span | undefined = undefined
  waiter: Waiter | undefined = undefined
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

/**
 * One fiber's wait for an answer, built once per fiber and connection rather than once per
 * request. Only its own fiber runs it, and a fiber waits for one request at a time: `entry` is set
 * as the fiber builds its request and read when it runs the wait — no step of any other code of
 * that fiber comes in between, even if the fiber yields — and cleared when the request settles.
 *
 * The wait is a bare `Effect.async`: interruptible where its caller is, with no failure handler
 * around it (the flag and handler steps that took, and their frames, were ~0.7 µs of a call's ~5 µs
 * of CPU). A request still in the slot after its wait ended was therefore given up on: the fiber
 * was interrupted while waiting (or the connection ended under it). The engine abandons it when
 * the fiber next uses the slot (a finalizer making a request while the fiber unwinds) and, at the
 * latest, when the fiber ends — `onEnd`, an observer of the fiber until it ends or the connection
 * does.
 */
interface Waiter {
  entry: PendingEntry | undefined
  readonly wait: Effect.Effect<any, McpError.McpError>
  readonly fiber: Fiber.RuntimeFiber<any, any>
  readonly onEnd: () => void
}

/** One connection's requests. */
export interface Requests {
  /** In flight, by id. */
  readonly pending: PendingTable.PendingTable<Pending>
  /** Why the connection ended, once it has. */
  readonly closed: () => McpError.McpConnectionError | undefined
  /** Completes when the connection ends, with why. */
  readonly closedSignal: Deferred.Deferred<McpError.McpConnectionError>
  /** Ends the connection: every pending request fails with `error` (relabelled). */
  readonly closeWith: (error: McpError.McpConnectionError) => Effect.Effect<void>
  /**
   * Ends the connection from this side (its scope closes): each plain `tools/call` still pending
   * is cancelled on the wire first — its caller, interrupted or about to fail, never gets the
   * answer — then every pending request fails with `McpConnectionClosed`.
   */
  readonly stop: Effect.Effect<void>
  /** Sleeps until the earliest deadline and expires what is due; forked once per connection. */
  readonly timer: Effect.Effect<never>
  /** While an elicitation is open no request times out; each restarts in full when the last closes. */
  readonly pauseTimeouts: () => void
  readonly resumeTimeouts: () => void
  /** A `notifications/progress` for a pending plain `tools/call` (the effect: telling its caller). */
  readonly onCallProgress: (entry: Pending, params: JsonObject) => Effect.Effect<void> | undefined
  /** Waits for the answer of `entry`, sent as the fiber suspends (see below). */
  readonly awaitAnswer: (fiber: Fiber.RuntimeFiber<any, any>, entry: PendingEntry) => Effect.Effect<
    any,
    McpError.McpError
  >
  readonly send: (
    method: string,
    params: unknown,
    timeoutMillis: number,
    cancellable: boolean,
    late?: (answer: unknown) => void
  ) => Effect.Effect<unknown, McpError.McpError>
  /** A request whose answer nobody waits for (`tasks/cancel` from a finalizer); dropped quietly. */
  readonly requestDetached: (method: string, params: unknown) => void
  readonly timeoutOf: (options: RequestOptions | undefined) => number
  readonly request: (
    method: string,
    params?: unknown,
    options?: RequestOptions
  ) => Effect.Effect<unknown, McpError.McpError>
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void>
  /** Settles a pending request with its response and resumes the fiber waiting for it. */
  readonly deliver: (entry: Pending, message: JsonRpc.Success | JsonRpc.Failure) => void
  /** Delivers a response to its request; returns a warning when there is none waiting. */
  readonly onResponse: (message: JsonRpc.Success | JsonRpc.Failure) => string | undefined
  /** A request the transport could not deliver fails with the transport's error. */
  readonly undelivered: (id: JsonRpc.RequestId, error: McpError.McpError) => void
}

export const make = (conn: Connection, taskSignals: TaskPoller.StatusSignals): Effect.Effect<Requests> =>
  Effect.gen(function*() {
    const { clock, transport } = conn
    const sendJson = transport.sendJson
    const { callTimeoutMillis, lateGraceMillis, resetOnProgress } = conn.settings
    // (Not a `Map`: see internal/pendingTable.ts.)
    const pending = PendingTable.make<Pending>()
    /** Each waiting fiber's wait (see `awaitAnswer`); a fiber's goes with it. */
    const waiters = new WeakMap<Fiber.RuntimeFiber<any, any>, Waiter>()
    /** The waits whose fiber is observed (until it ends, or the connection does). */
    const observed = new Set<Waiter>()
    let nextId = 0
    let closed: McpError.McpConnectionError | undefined

    // Timeouts: one timer fiber per connection sleeps (on Effect's Clock) until the earliest
    // deadline; deadlines live in one FIFO list per distinct timeout, so each request costs O(1).
    const deadlines = Deadlines.make<Pending>()
    let wake = Deferred.unsafeMake<void>(FiberId.none)
    let sleepingUntil = Infinity

    /** The waiting fiber's slot lets go of the entry (its progress handler, span, tool) now, not at its next request. */
    const leaveSlot = (entry: Pending) => {
      const waiter = entry.waiter
      if (waiter !== undefined && waiter.entry === entry) waiter.entry = undefined
    }

    const settle = (entry: Pending) => {
      pending.remove(entry)
      deadlines.remove(entry)
      leaveSlot(entry)
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
        leaveSlot(entry)
        entry.resume = (outcome) => {
          if (Exit.isExit(outcome) && Exit.isSuccess(outcome)) late(outcome.value)
        }
        deadlines.remove(entry)
        deadlines.add(clock.unsafeCurrentTimeMillis(), lateGraceMillis, entry)
        if (entry.deadline < sleepingUntil) Deferred.unsafeDone(wake, Exit.void)
        return true
      }
      settle(entry)
      if (entry.cancellable) cancelOnWire(entry, reason)
      return true
    }

    const cancelOnWire = (entry: Pending, reason: string) =>
      transport.send(JsonRpc.notification("notifications/cancelled", { requestId: entry.id, reason }))

    const expire = (entry: Pending) => {
      if (entry.orphaned) return settle(entry)
      // Taken before abandoning: a task call that times out keeps listening for its handle.
      const resume = entry.resume
      // Progress kept it going until the longest total time: say that, not the timeout.
      const total = entry.extended && entry.deadline >= entry.startedAt + entry.maxTotalMillis
      if (abandon(entry, TIMEOUT_REASON)) {
        resume(Exit.fail(
          new McpError.McpTimeout({
            server: conn.server,
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

    const closedSignal = yield* Deferred.make<McpError.McpConnectionError>()
    const closeWith = (error: McpError.McpConnectionError) =>
      Effect.sync(() => {
        if (closed !== undefined) return
        closed = conn.relabel(error)
        Deferred.unsafeDone(closedSignal, Exit.succeed(closed))
        const entries = pending.values()
        pending.clear()
        deadlines.clear()
        const reason = conn.relabel(error)
        for (const entry of entries) entry.resume(Exit.fail(reason))
        // Nothing is left to abandon: the fibers that waited here need no observer now.
        for (const waiter of observed) waiter.fiber.removeObserver(waiter.onEnd)
        observed.clear()
        // Task pollers asleep between polls wake up and find the connection closed.
        taskSignals.notifyAll()
      })

    // A fiber interrupted while it waited abandons its request as it ends (see `Waiter`); when its
    // own finalizers close the connection before that, the cancellation goes out here.
    const stop = Effect.suspend(() => {
      if (closed === undefined) {
        for (const entry of pending.values()) {
          if (entry.cancellable && !entry.orphaned) cancelOnWire(entry, STOP_REASON)
        }
      }
      return closeWith(new McpError.McpConnectionClosed({ server: conn.server }))
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
      // as its progress token — as JSON text at once where the transport takes text (and no span
      // context goes in `_meta`).
      if (entry.toolName !== undefined && entry.span === undefined && sendJson !== undefined) {
        const args = entry.params
        entry.params = undefined
        return sendJson(JsonRpc.toolsCallJson(entry.id, entry.toolName, args))
      }
      let params = entry.toolName === undefined
        ? entry.params
        : { name: entry.toolName, arguments: entry.params, _meta: { progressToken: entry.id } }
      entry.params = undefined
      if (entry.span !== undefined) {
        params = Span.inject(entry.span, entry.id, params)
        const session = transport.sessionId?.()
        if (session !== undefined) entry.span.attribute("mcp.session.id", session)
      }
      transport.send(JsonRpc.request(entry.id, entry.method, params))
    }

    /**
     * The one request primitive: registers the request when the fiber suspends and waits for its
     * answer. When the waiting fiber is interrupted (a stop, a closing scope), `abandon` runs for
     * it — when the fiber next makes a request or ends, whichever comes first (see `Waiter`).
     *
     * This is the hot path of every call, so it is the fewest fiber steps there are: one
     * `Effect.async` without a canceller, built once per waiting fiber (see `Waiter`), not once per
     * request — the request goes in the fiber's slot just before the fiber runs the wait.
     */
    const awaitAnswer = (
      fiber: Fiber.RuntimeFiber<any, any>,
      entry: PendingEntry
    ): Effect.Effect<any, McpError.McpError> => {
      let waiter = waiters.get(fiber)
      if (waiter === undefined) {
        waiter = makeWaiter(fiber)
        waiters.set(fiber, waiter)
      } else if (waiter.entry !== undefined) {
        // The fiber's last wait ended without an answer: it was interrupted, and the fiber, still
        // unwinding, makes another request.
        giveUp(waiter)
      }
      waiter.entry = entry
      entry.waiter = waiter
      return waiter.wait
    }

    /**
     * The request in a wait's slot when its wait ended without settling it: abandoned, unless it
     * already was (a task call kept for its late handle is no longer in the slot) or the
     * connection ended (it is in no table: `abandon` finds nothing to do; nor does it for an
     * entry never sent, id -1).
     */
    const giveUp = (waiter: Waiter) => {
      const entry = waiter.entry!
      waiter.entry = undefined
      abandon(entry, STOP_REASON)
    }

    /** The wait of one fiber, reading its request from the waiter's slot. */
    const makeWaiter = (fiber: Fiber.RuntimeFiber<any, any>): Waiter => {
      const waiter: Waiter = {
        entry: undefined,
        fiber,
        wait: Effect.async<unknown, McpError.McpError>((resume) => {
          if (closed !== undefined) return resume(Exit.fail(closed))
          register(waiter.entry!, resume)
        }),
        onEnd: () => {
          observed.delete(waiter)
          if (waiter.entry !== undefined) giveUp(waiter)
        }
      }
      if (closed === undefined) {
        observed.add(waiter)
        fiber.addObserver(waiter.onEnd)
      }
      return waiter
    }

    const send = (
      method: string,
      params: unknown,
      timeoutMillis: number,
      cancellable: boolean,
      late?: (answer: unknown) => void,
      span?: Tracer.Span
    ): Effect.Effect<unknown, McpError.McpError> =>
      Effect.withFiberRuntime((fiber) => {
        const entry = new PendingEntry(method, params, cancellable, timeoutMillis, undefined, undefined, late)
        entry.span = span
        return awaitAnswer(fiber, entry)
      })

    const requestDetached = (method: string, params: unknown) => {
      if (closed === undefined) {
        register(
          new PendingEntry(method, params, false, callTimeoutMillis, undefined, undefined, undefined),
          notWaiting
        )
      }
    }

    const timeoutOf = (options: RequestOptions | undefined): number =>
      options?.timeout === undefined ? callTimeoutMillis : Duration.toMillis(options.timeout)

    const request = (method: string, params?: unknown, options?: RequestOptions) =>
      send(method, params, timeoutOf(options), method === "tools/call", undefined, Span.spanOf(options))

    const notify = (method: string, params?: unknown) =>
      Effect.sync(() => {
        if (closed === undefined) transport.send(JsonRpc.notification(method, params))
      })

    const urlElicitationRequired = (method: string, error: JsonRpc.ErrorObject) => {
      const data = Predicate.isRecord(error.data) ? error.data : {}
      const list = Array.isArray(data.elicitations) ? data.elicitations : []
      const urls = list.filter(Predicate.isRecord).filter((e) => typeof e.url === "string").map((e) => ({
        url: e.url as string,
        ...(typeof e.message === "string" ? { message: e.message } : {}),
        ...(typeof e.elicitationId === "string" ? { elicitationId: e.elicitationId } : {})
      }))
      return new McpError.McpUrlElicitationRequired({ server: conn.server, method, reason: error.message, urls })
    }

    const deliver = (entry: Pending, message: JsonRpc.Success | JsonRpc.Failure) => {
      settle(entry)
      if ("result" in message) {
        if (entry.toolName === undefined) entry.resume(Exit.succeed(message.result))
        else entry.resume(conn.finish(entry.toolName, entry.tool, message.result))
      } else if (message.error.code === URL_ELICITATION_REQUIRED) {
        entry.resume(Exit.fail(urlElicitationRequired(entry.method, message.error)))
      } else {
        const error = message.error
        entry.resume(
          Exit.fail(
            new McpError.McpRequestError({
              server: conn.server,
              method: entry.method,
              code: error.code,
              reason: error.message,
              ...(error.data !== undefined ? { data: error.data } : {})
            })
          )
        )
      }
    }

    const onResponse = (message: JsonRpc.Success | JsonRpc.Failure): string | undefined => {
      const entry = pending.get(message.id)
      if (entry === undefined) return `dropped a response to unknown request id ${JSON.stringify(message.id)}`
      deliver(entry, message)
      return undefined
    }

    const undelivered = (id: JsonRpc.RequestId, error: McpError.McpError) => {
      const entry = pending.get(id)
      if (entry !== undefined) {
        settle(entry)
        entry.resume(Exit.fail(conn.relabel(error)))
      }
    }

    return {
      pending,
      closed: () => closed,
      closedSignal,
      closeWith,
      stop,
      timer,
      pauseTimeouts,
      resumeTimeouts,
      onCallProgress,
      awaitAnswer,
      send,
      requestDetached,
      timeoutOf,
      request,
      notify,
      deliver,
      onResponse,
      undelivered
    } satisfies Requests
  })
