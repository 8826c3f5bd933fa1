/**
 * Task polling, written once for every transport: a task-augmented `tools/call` answered with a
 * `CreateTaskResult` is driven to its result by `tasks/get` polls and `tasks/result`, bounded by
 * the task's ttl (else the longest task wait), never by the call timeout. The loop's exit hook is
 * the ONE place that sends `tasks/cancel` for a task that is abandoned before a terminal status —
 * a stop, a closing scope or the deadline — and only when the server declared `tasks.cancel`.
 */
import * as McpError from "@skald/domain/McpError"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as CallResult from "../CallResult.js"

/** What the server last said about a task. */
export interface TaskStatus {
  readonly taskId: string
  readonly status: string
  readonly statusMessage?: string | undefined
  readonly pollInterval?: number | undefined
  readonly ttl?: number | null | undefined
}

/** A status report while a task runs, for progress displays. */
export interface TaskProgress extends TaskStatus {
  readonly tool: string
  readonly elapsedMillis: number
}

/** The statuses after which nothing more happens to a task. */
export const isTerminal = (status: string): boolean =>
  status === "completed" || status === "failed" || status === "cancelled"

/** Polling bounds. */
export interface Bounds {
  /** The shortest poll interval honoured (default 500 ms). */
  readonly minPollMillis: number
  /** The longest poll interval honoured (default 30 s). */
  readonly maxPollMillis: number
  /** The interval when the server gives none (default 1 s). */
  readonly defaultPollMillis: number
  /** The longest wait for a task without a ttl (default 1 h). */
  readonly maxWaitMillis: number
}

export const defaultBounds: Bounds = {
  minPollMillis: 500,
  maxPollMillis: 30_000,
  defaultPollMillis: 1_000,
  maxWaitMillis: 60 * 60 * 1000
}

/** What the poller needs from the engine. */
export interface Engine {
  readonly server: string
  readonly bounds: Bounds
  /** A short request (the call timeout applies), or one bounded by `timeoutMillis`. */
  readonly request: (
    method: string,
    params: unknown,
    timeoutMillis?: number
  ) => Effect.Effect<unknown, McpError.McpError>
  /** Sends a request without waiting for its answer (the answer is expected and dropped quietly). */
  readonly requestDetached: (method: string, params: unknown) => void
  /** Whether the server declared `tasks.cancel`. */
  readonly canCancel: () => boolean
  readonly log: (tag: "warning" | "lifecycle", text: string) => Effect.Effect<void>
}

/** Wakes pollers when `notifications/tasks/status` arrives for their task. */
export interface StatusSignals {
  /** Called by the engine's reader for each `notifications/tasks/status`. */
  readonly notify: (taskId: string) => void
  /** Wakes every waiting poller (the connection closed: their next request fails at once). */
  readonly notifyAll: () => void
  /** Waits until a status notification for `taskId` arrives or `millis` pass. */
  readonly wait: (taskId: string, millis: number) => Effect.Effect<void>
}

export const makeStatusSignals = (): StatusSignals => {
  const waiters = new Map<string, Deferred.Deferred<void>>()
  return {
    notify: (taskId) => {
      const waiter = waiters.get(taskId)
      if (waiter !== undefined) Deferred.unsafeDone(waiter, Exit.void)
    },
    notifyAll: () => {
      for (const waiter of waiters.values()) Deferred.unsafeDone(waiter, Exit.void)
    },
    wait: (taskId, millis) =>
      Effect.suspend(() => {
        const waiter = Deferred.unsafeMake<void>(FiberId.none)
        waiters.set(taskId, waiter)
        return Effect.raceFirst(Effect.sleep(millis), Deferred.await(waiter)).pipe(
          Effect.ensuring(Effect.sync(() => {
            if (waiters.get(taskId) === waiter) waiters.delete(taskId)
          }))
        )
      })
  }
}

/** Sends `tasks/cancel` for an abandoned task, or says why it cannot. */
export const cancel = (engine: Engine, taskId: string, why: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (engine.canCancel()) {
      engine.requestDetached("tasks/cancel", { taskId })
      return engine.log("lifecycle", `cancelled task ${taskId} (${why})`)
    }
    return engine.log(
      "warning",
      `abandoned task ${taskId} (${why}); the server does not offer tasks/cancel, so it runs on until its ttl`
    )
  })

const clamp = (bounds: Bounds, interval: number | undefined) =>
  Math.min(bounds.maxPollMillis, Math.max(bounds.minPollMillis, interval ?? bounds.defaultPollMillis))

/**
 * Drives a task to its final `CallToolResult` (raw, as `tasks/result` returned it).
 * `startedAt` is when the task was created (the Clock's millis), the origin of its ttl.
 */
export const poll = (
  engine: Engine,
  signals: StatusSignals,
  tool: string,
  first: TaskStatus,
  startedAt: number,
  onStatus: ((progress: TaskProgress) => Effect.Effect<void>) | undefined
): Effect.Effect<unknown, McpError.McpError> => {
  const { bounds, server } = engine
  const taskId = first.taskId
  const limit = typeof first.ttl === "number" && first.ttl > 0 ? first.ttl : bounds.maxWaitMillis
  const deadlineAt = startedAt + limit
  let state = first
  let settled = false

  const report = Effect.suspend(() =>
    onStatus === undefined
      ? Effect.void
      : Effect.flatMap(Clock.currentTimeMillis, (now) => onStatus({ ...state, tool, elapsedMillis: now - startedAt }))
  )
  const expired = (now: number) => new McpError.McpTaskExpired({ server, tool, taskId, waitedMillis: now - startedAt })
  const statusMessage = () => (state.statusMessage !== undefined ? { statusMessage: state.statusMessage } : {})

  // `tasks/result` blocks until the task is terminal: bounded by what is left of the deadline.
  const result = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    if (now >= deadlineAt) return yield* expired(now)
    const raw = yield* engine.request("tasks/result", { taskId }, deadlineAt - now).pipe(
      Effect.catchTag("McpTimeout", () => Effect.flatMap(Clock.currentTimeMillis, (t) => Effect.fail(expired(t))))
    )
    settled = true
    if (!isTerminal(state.status)) {
      // tasks/result returns once the task is terminal (after input_required, say): report that.
      state = { ...state, status: "completed", statusMessage: undefined }
      yield* report
    }
    return raw
  })

  const loop = Effect.gen(function*() {
    yield* report
    while (!isTerminal(state.status) && state.status !== "input_required") {
      const now = yield* Clock.currentTimeMillis
      if (now >= deadlineAt) return yield* expired(now)
      yield* signals.wait(taskId, Math.min(clamp(bounds, state.pollInterval), deadlineAt - now))
      const after = yield* Clock.currentTimeMillis
      if (after >= deadlineAt) return yield* expired(after)
      const got = yield* engine.request("tasks/get", { taskId })
      const next = CallResult.parseCreateTask(got)
      if (next === undefined || next.taskId !== taskId) {
        return yield* new McpError.McpProtocolError({
          server,
          detail: `tasks/get for ${taskId} answered without a task`
        })
      }
      state = next
      yield* report
    }
    // A failed task may still carry a result (an isError CallToolResult); otherwise say why it failed.
    const resultOrFailure = result.pipe(
      Effect.catchTag("McpRequestError", (error) =>
        Effect.fail(
          new McpError.McpTaskFailed({
            server,
            tool,
            taskId,
            statusMessage: state.statusMessage ?? error.reason
          })
        ))
    )
    switch (state.status) {
      case "completed":
        return yield* result
      case "cancelled":
        settled = true
        return yield* new McpError.McpTaskCancelled({ server, tool, taskId, ...statusMessage() })
      default:
        // failed; or input_required, where tasks/result carries the server's requests (an
        // elicitation) and then the result.
        return yield* resultOrFailure
    }
  })

  return loop.pipe(
    Effect.onExit((exit) => {
      if (settled || isTerminal(state.status)) return Effect.void
      const why = Exit.isInterrupted(exit)
        ? "the call was stopped"
        : Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "McpTaskExpired"
        ? "its deadline passed"
        : "the call failed"
      return cancel(engine, taskId, why)
    })
  )
}
