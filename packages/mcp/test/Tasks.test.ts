/**
 * Task-augmented calls under TestClock, against a scripted peer over the memory transport:
 * opt-in, polling bounds, wake-ups, deadlines, and exactly where `tasks/cancel` is sent.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { McpError } from "@skald/domain"
import { JsonRpc, McpClient, McpLog } from "@skald/mcp"
import { Chunk, Effect, Either, Exit, Fiber, TestClock } from "effect"
import { makeLogCapture } from "./utils/LogCapture.js"
import * as Memory from "./utils/MemoryTransport.js"

const TASKS = { tools: {}, tasks: { requests: { tools: { call: {} } }, cancel: {} } }
const TASKS_NO_CANCEL = { tools: {}, tasks: { requests: { tools: { call: {} } } } }

const tool = (name: string, taskSupport?: string) => ({
  name,
  inputSchema: { type: "object" },
  ...(taskSupport !== undefined ? { execution: { taskSupport } } : {})
})

const task = (taskId: string, status: string, extra: Record<string, unknown> = {}) => ({
  taskId,
  status,
  createdAt: "2026-11-30T00:00:00Z",
  lastUpdatedAt: "2026-11-30T00:00:00Z",
  ttl: null,
  ...extra
})

const text = (t: string, isError = false) => ({ content: [{ type: "text", text: t }], ...(isError ? { isError } : {}) })

/** Waits until some fiber sleeps until `at` (TestClock millis). */
const sleepingUntil = (at: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1000; i++) {
      if (Chunk.toReadonlyArray(yield* TestClock.sleeps()).includes(at)) return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(`no fiber sleeps until ${at}`)
  })

/** Connects, starts a call of `name` in a fiber and answers its tools/list. */
const startCall = (
  capabilities: Record<string, unknown>,
  tools: ReadonlyArray<Record<string, unknown>>,
  name: string,
  client: McpClient.Options = {},
  progress?: Array<McpClient.TaskProgress>
) =>
  Effect.gen(function*() {
    const log = makeLogCapture()
    const { client: c, peer } = yield* Memory.connect({ peer: { capabilities }, client }).pipe(
      Effect.provideService(McpLog.McpLogSink, log.sink)
    )
    const call = yield* c.callTool(name, { q: 1 }, {
      onTaskStatus: (p) => Effect.sync(() => void progress?.push(p))
    }).pipe(Effect.provideService(McpLog.McpLogSink, log.sink), Effect.fork)
    const list = yield* Memory.expectRequest(peer, "tools/list")
    yield* peer.push(JsonRpc.success(list.id, { tools }))
    const request = yield* Memory.expectRequest(peer, "tools/call")
    return { client: c, peer, call, request, log }
  })

const sent = (peer: Memory.MemoryTransport, method: string) =>
  peer.history().filter((m) => "method" in m && m.method === method)

describe("task-augmented tools/call", () => {
  it.scoped("asks for a task only when the tool offers one and the server declares task calls", () =>
    Effect.gen(function*() {
      const { call, peer, request } = yield* startCall(TASKS, [tool("long", "optional")], "long", {
        taskTtl: "60 seconds"
      })
      // A task's progress token is its own (it outlives the request), not the request id.
      deepStrictEqual(request.params, {
        name: "long",
        arguments: { q: 1 },
        task: { ttl: 60000 },
        _meta: { progressToken: "task-call-0" }
      })
      yield* peer.push(JsonRpc.success(request.id, { task: task("t1", "completed") }))
      const result = yield* Memory.expectRequest(peer, "tasks/result")
      deepStrictEqual(result.params, { taskId: "t1" })
      yield* peer.push(JsonRpc.success(result.id, text("done")))
      const outcome = yield* Fiber.join(call)
      deepStrictEqual(outcome.result._tag === "Text" && outcome.result.text, "done")
      assert.strictEqual(sent(peer, "tasks/cancel").length, 0)
    }))

  it.scoped("an optional tool on a server without task calls is called plainly", () =>
    Effect.gen(function*() {
      const { call, peer, request } = yield* startCall({ tools: {} }, [tool("long", "optional")], "long")
      deepStrictEqual(request.params, { name: "long", arguments: { q: 1 }, _meta: { progressToken: request.id } })
      yield* peer.push(JsonRpc.success(request.id, text("plain")))
      const outcome = yield* Fiber.join(call)
      deepStrictEqual(outcome.result._tag === "Text" && outcome.result.text, "plain")
    }))

  it.scoped("a required tool on a server without task calls is a typed error, and nothing is called", () =>
    Effect.gen(function*() {
      const log = makeLogCapture()
      const { client, peer } = yield* Memory.connect({ peer: { capabilities: { tools: {} } } }).pipe(
        Effect.provideService(McpLog.McpLogSink, log.sink)
      )
      const call = yield* Effect.fork(Effect.either(client.callTool("long")))
      const list = yield* Memory.expectRequest(peer, "tools/list")
      yield* peer.push(JsonRpc.success(list.id, { tools: [tool("long", "required")] }))
      const outcome = yield* Fiber.join(call)
      assert.isTrue(Either.isLeft(outcome) && outcome.left._tag === "McpTaskUnsupported")
      assert.strictEqual(sent(peer, "tools/call").length, 0)
    }))

  it.scoped("polls at the server's pollInterval, clamped up to 500 ms, and reports each status", () =>
    Effect.gen(function*() {
      const progress: Array<McpClient.TaskProgress> = []
      const { call, peer, request } = yield* startCall(TASKS, [tool("long", "required")], "long", {}, progress)
      yield* peer.push(JsonRpc.success(request.id, { task: task("t0", "working", { pollInterval: 0 }) }))
      // pollInterval 0 is clamped to 500 ms: nothing before, one tasks/get at 500 ms.
      yield* sleepingUntil(500)
      yield* TestClock.adjust("499 millis")
      assert.strictEqual(sent(peer, "tasks/get").length, 0)
      yield* TestClock.adjust("1 millis")
      const get = yield* Memory.expectRequest(peer, "tasks/get")
      yield* peer.push(JsonRpc.success(get.id, task("t0", "working", { pollInterval: 0, statusMessage: "half" })))
      yield* sleepingUntil(1000)
      yield* TestClock.adjust("500 millis")
      const get2 = yield* Memory.expectRequest(peer, "tasks/get")
      yield* peer.push(JsonRpc.success(get2.id, task("t0", "completed")))
      const result = yield* Memory.expectRequest(peer, "tasks/result")
      yield* peer.push(JsonRpc.success(result.id, text("ok")))
      yield* Fiber.join(call)
      deepStrictEqual(progress.map((p) => [p.status, p.statusMessage, p.elapsedMillis]), [
        ["working", undefined, 0],
        ["working", "half", 500],
        ["completed", undefined, 1000]
      ])
    }))

  it.scoped("a long pollInterval is clamped down to 30 s, and notifications/tasks/status wakes the poller early", () =>
    Effect.gen(function*() {
      const { call, peer, request } = yield* startCall(TASKS, [tool("long", "required")], "long")
      yield* peer.push(JsonRpc.success(request.id, { task: task("t2", "working", { pollInterval: 3_600_000 }) }))
      yield* sleepingUntil(30_000)
      // The server pushes a status: the poller asks at once, without any time passing.
      yield* peer.push(JsonRpc.notification("notifications/tasks/status", task("t2", "completed")))
      const get = yield* Memory.expectRequest(peer, "tasks/get")
      assert.strictEqual(yield* TestClock.currentTimeMillis, 0)
      yield* peer.push(JsonRpc.success(get.id, task("t2", "completed")))
      const result = yield* Memory.expectRequest(peer, "tasks/result")
      yield* peer.push(JsonRpc.success(result.id, text("early")))
      const outcome = yield* Fiber.join(call)
      deepStrictEqual(outcome.result._tag === "Text" && outcome.result.text, "early")
    }))

  it.scoped("stopping the call while it polls sends tasks/cancel once, never notifications/cancelled", () =>
    Effect.gen(function*() {
      const { call, peer, request } = yield* startCall(TASKS, [tool("long", "required")], "long")
      yield* peer.push(JsonRpc.success(request.id, { task: task("t3", "working", { pollInterval: 1000 }) }))
      yield* sleepingUntil(1000)
      yield* Fiber.interrupt(call)
      const cancel = yield* Memory.expectRequest(peer, "tasks/cancel")
      deepStrictEqual(cancel.params, { taskId: "t3" })
      yield* peer.push(JsonRpc.success(cancel.id, task("t3", "cancelled")))
      assert.strictEqual(sent(peer, "tasks/cancel").length, 1)
      assert.strictEqual(sent(peer, "notifications/cancelled").length, 0)
    }))

  it.scoped("a server without tasks.cancel gets no tasks/cancel; the abandoned task is logged", () =>
    Effect.gen(function*() {
      const { call, log, peer, request } = yield* startCall(TASKS_NO_CANCEL, [tool("long", "required")], "long")
      yield* peer.push(JsonRpc.success(request.id, { task: task("t4", "working", { pollInterval: 1000 }) }))
      yield* sleepingUntil(1000)
      yield* Fiber.interrupt(call)
      assert.strictEqual(sent(peer, "tasks/cancel").length, 0)
      assert.strictEqual(sent(peer, "notifications/cancelled").length, 0)
      assert.isTrue(log.lines.some((l) => l.tag === "warning" && l.text.includes("abandoned task t4")))
    }))

  it.scoped("the task's ttl bounds the wait: at the deadline the call fails McpTaskExpired and the task is cancelled", () =>
    Effect.gen(function*() {
      const { call, peer, request } = yield* startCall(TASKS, [tool("long", "required")], "long", {
        callTimeout: "1 second"
      })
      // The call timeout is 1 s, the ttl 3 s: the task outlives the call timeout and ends at its ttl.
      yield* peer.push(JsonRpc.success(request.id, { task: task("t5", "working", { pollInterval: 1000, ttl: 3000 }) }))
      for (const at of [1000, 2000]) {
        yield* sleepingUntil(at)
        yield* TestClock.adjust("1 second")
        const get = yield* Memory.expectRequest(peer, "tasks/get")
        yield* peer.push(JsonRpc.success(get.id, task("t5", "working", { pollInterval: 1000, ttl: 3000 })))
      }
      yield* sleepingUntil(3000)
      yield* TestClock.adjust("1 second")
      const exit = yield* Fiber.await(call)
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.instanceOf(error, McpError.McpTaskExpired)
      const cancel = yield* Memory.expectRequest(peer, "tasks/cancel")
      deepStrictEqual(cancel.params, { taskId: "t5" })
    }))

  it.scoped("without a ttl the wait is bounded by maxTaskWait", () =>
    Effect.gen(function*() {
      const { call, peer, request } = yield* startCall(TASKS, [tool("long", "required")], "long", {
        maxTaskWait: "10 seconds"
      })
      yield* peer.push(JsonRpc.success(request.id, { task: task("t6", "working", { pollInterval: 30_000 }) }))
      yield* sleepingUntil(10_000)
      yield* TestClock.adjust("10 seconds")
      const exit = yield* Fiber.await(call)
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "McpTaskExpired")
      yield* Memory.expectRequest(peer, "tasks/cancel")
      assert.strictEqual(sent(peer, "tasks/get").length, 0)
    }))

  it.scoped("a failed task with a result returns it (isError); without one it is McpTaskFailed with its message", () =>
    Effect.gen(function*() {
      const withResult = yield* startCall(TASKS, [tool("long", "required")], "long")
      yield* withResult.peer.push(JsonRpc.success(withResult.request.id, { task: task("t7", "failed") }))
      const r1 = yield* Memory.expectRequest(withResult.peer, "tasks/result")
      yield* withResult.peer.push(JsonRpc.success(r1.id, text("broke", true)))
      const outcome = yield* Fiber.join(withResult.call)
      assert.isTrue(outcome.result._tag === "Text" && outcome.result.isError)

      const without = yield* startCall(TASKS, [tool("long", "required")], "long")
      yield* without.peer.push(
        JsonRpc.success(without.request.id, { task: task("t8", "failed", { statusMessage: "disk full" }) })
      )
      const r2 = yield* Memory.expectRequest(without.peer, "tasks/result")
      yield* without.peer.push(JsonRpc.failure(r2.id, -32603, "task failed"))
      const exit = yield* Fiber.await(without.call)
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.instanceOf(error, McpError.McpTaskFailed)
      assert.include((error as McpError.McpTaskFailed).message, "disk full")
      assert.strictEqual(sent(without.peer, "tasks/cancel").length, 0)
    }))

  it.scoped("a cancelled task is McpTaskCancelled and is not cancelled again", () =>
    Effect.gen(function*() {
      const { call, peer, request } = yield* startCall(TASKS, [tool("long", "required")], "long")
      yield* peer.push(JsonRpc.success(request.id, { task: task("t9", "cancelled") }))
      const exit = yield* Fiber.await(call)
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "McpTaskCancelled")
      assert.strictEqual(sent(peer, "tasks/cancel").length, 0)
    }))

  it.scoped("accepts a CreateTaskResult with its fields at top level", () =>
    Effect.gen(function*() {
      const { call, peer, request } = yield* startCall(TASKS, [tool("long", "required")], "long")
      yield* peer.push(JsonRpc.success(request.id, { taskId: "top", status: "working", pollInterval: 500 }))
      yield* sleepingUntil(500)
      yield* TestClock.adjust("500 millis")
      const get = yield* Memory.expectRequest(peer, "tasks/get")
      deepStrictEqual(get.params, { taskId: "top" })
      yield* peer.push(JsonRpc.success(get.id, { taskId: "top", status: "completed" }))
      const result = yield* Memory.expectRequest(peer, "tasks/result")
      yield* peer.push(JsonRpc.success(result.id, text("top-level")))
      const outcome = yield* Fiber.join(call)
      deepStrictEqual(outcome.result._tag === "Text" && outcome.result.text, "top-level")
    }))

  it.scoped("a call stopped before its task handle arrived cancels the task when the handle comes", () =>
    Effect.gen(function*() {
      const { call, peer, request } = yield* startCall(TASKS, [tool("long", "required")], "long")
      yield* Fiber.interrupt(call)
      assert.strictEqual(sent(peer, "notifications/cancelled").length, 0)
      yield* peer.push(JsonRpc.success(request.id, { task: task("late", "working") }))
      const cancel = yield* Memory.expectRequest(peer, "tasks/cancel")
      deepStrictEqual(cancel.params, { taskId: "late" })
    }))

  it.scoped("a call stopped before its task handle arrived gives up waiting for it after the grace period", () =>
    Effect.gen(function*() {
      const { call, log, peer, request } = yield* startCall(TASKS, [tool("long", "required")], "long", {
        taskHandleGrace: "2 seconds"
      })
      yield* Fiber.interrupt(call)
      yield* sleepingUntil(2000)
      yield* TestClock.adjust("2 seconds")
      yield* Effect.yieldNow()
      yield* peer.push(JsonRpc.success(request.id, { task: task("too-late", "working") }))
      yield* Effect.yieldNow()
      assert.strictEqual(sent(peer, "tasks/cancel").length, 0)
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      assert.isTrue(log.lines.some((l) => l.text.includes(`unknown request id ${request.id}`)))
    }))
})
