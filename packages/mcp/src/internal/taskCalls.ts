/**
 * The wiring of task-augmented `tools/call`s to the poller (internal/taskPoller.ts): the call
 * that creates the task, its progress (keyed by a token of its own, as long-lived as the task),
 * and the cancellation of a task whose handle came after its caller stopped.
 */
import type * as McpError from "@skald/domain/McpError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as CallResult from "../CallResult.js"
import type { RequestOptions } from "../McpClient.js"
import type { Connection, JsonObject } from "./connection.js"
import type { Requests } from "./requests.js"
import * as TaskPoller from "./taskPoller.js"

/** Progress of task-augmented calls under way, by their progress token (read by the reader). */
export type ProgressTable = Map<string, (params: JsonObject) => Effect.Effect<void> | undefined>

export const make = (
  conn: Connection,
  requests: Requests,
  taskSignals: TaskPoller.StatusSignals,
  taskProgress: ProgressTable,
  serverTaskCancel: boolean,
  runtime: Runtime.Runtime<never>
) => {
  const { clock, log } = conn
  const { callTimeoutMillis, taskTtlMillis } = conn.settings
  const { send, timeoutOf } = requests
  let taskCallCount = 0

  const taskEngine: TaskPoller.Engine = {
    server: conn.server,
    bounds: conn.settings.taskBounds,
    request: (method, params, timeoutMillis) => send(method, params, timeoutMillis ?? callTimeoutMillis, false),
    requestDetached: requests.requestDetached,
    canCancel: () => serverTaskCancel,
    log
  }

  /** A task handle that came after its caller stopped: cancel the task. */
  const cancelLate = (answer: unknown) => {
    const handle = CallResult.parseCreateTask(answer)
    if (handle !== undefined && !TaskPoller.isTerminal(handle.status)) {
      Runtime.runFork(runtime)(
        TaskPoller.cancel(taskEngine, handle.taskId, "the call was stopped before the task began")
      )
    }
  }

  /** Calls `name` as a task and drives the task to its result (the raw `CallToolResult`). */
  const callAsTask = (
    name: string,
    args: JsonObject | undefined,
    options: RequestOptions | undefined
  ): Effect.Effect<unknown, McpError.McpError> => {
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

  return { callAsTask }
}
