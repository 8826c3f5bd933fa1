/**
 * Progress of `tools/call` under TestClock, against a scripted peer over the memory transport:
 * every call carries `_meta.progressToken` (the request id), `notifications/progress` for it
 * reaches the call's `onProgress`, restarts its timeout, and the longest total time bounds that.
 */
import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { McpError } from "@skald/domain"
import { JsonRpc, McpClient } from "@skald/mcp"
import { Effect, Exit, Fiber, TestClock } from "effect"
import * as Memory from "./utils/MemoryTransport.js"

const echo = { name: "echo", inputSchema: { type: "object" } }
const text = (t: string) => ({ content: [{ type: "text", text: t }] })

/** Yields until `check` holds (the reader and timer fibers run meanwhile); dies if it never does. */
const until = (check: () => boolean, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1000; i++) {
      if (check()) return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(`never: ${what}`)
  })

/** Connects (client options `client`), lists, and starts a call of `echo` with `options` in a fiber. */
const start = (client: McpClient.Options, options: McpClient.RequestOptions = {}) =>
  Effect.gen(function*() {
    const { client: c, peer } = yield* Memory.connect({ client })
    const listing = yield* Effect.fork(c.tools)
    const list = yield* Memory.expectRequest(peer, "tools/list")
    yield* peer.push(JsonRpc.success(list.id, { tools: [echo] }))
    yield* Fiber.join(listing)
    const seen: Array<McpClient.Progress> = []
    const call = yield* c.callTool("echo", { message: "hi" }, {
      onProgress: (p) => Effect.sync(() => void seen.push(p)),
      ...options
    }).pipe(Effect.exit, Effect.fork)
    const request = yield* Memory.expectRequest(peer, "tools/call")
    const progress = (value: number, extra: Record<string, unknown> = {}) =>
      Effect.gen(function*() {
        const before = seen.length
        yield* peer.push(
          JsonRpc.notification("notifications/progress", { progressToken: request.id, progress: value, ...extra })
        )
        yield* until(() => seen.length > before, `progress ${value} delivered`)
      })
    return { client: c, peer, call, request, seen, progress }
  })

const cancellations = (peer: Memory.MemoryTransport) =>
  peer.history().filter((m) => Memory.isNotification(m) && m.method === "notifications/cancelled").map((m) =>
    (m as JsonRpc.Notification).params
  )

describe("tools/call progress", () => {
  it.scoped("every call carries its request id as the progress token; onProgress is told each report", () =>
    Effect.gen(function*() {
      const { call, peer, progress, request, seen } = yield* start({})
      deepStrictEqual(request.params, {
        name: "echo",
        arguments: { message: "hi" },
        _meta: { progressToken: request.id }
      })
      yield* TestClock.adjust("1500 millis")
      yield* progress(1, { total: 3, message: "one of three" })
      yield* TestClock.adjust("500 millis")
      yield* progress(2)
      // A report for another token reaches no call, but is still on `notifications`.
      yield* peer.push(JsonRpc.notification("notifications/progress", { progressToken: 9999, progress: 5 }))
      yield* peer.push(JsonRpc.success(request.id, text("done")))
      const exit = yield* Fiber.join(call)
      assert.isTrue(Exit.isSuccess(exit))
      deepStrictEqual(seen, [
        { progress: 1, total: 3, message: "one of three", elapsedMillis: 1500 },
        { progress: 2, total: undefined, message: undefined, elapsedMillis: 2000 }
      ])
    }))

  it.scoped("progress restarts the timeout: a call that reports more often than its timeout is not given up on", () =>
    Effect.gen(function*() {
      const { call, peer, progress, request } = yield* start({ callTimeout: "1 second" })
      for (let i = 1; i <= 5; i++) {
        yield* TestClock.adjust("800 millis")
        yield* progress(i)
      }
      // 4 s in: five times the timeout, and still waiting.
      assert.isUndefined(yield* Fiber.poll(call).pipe(Effect.map((o) => o._tag === "Some" ? o.value : undefined)))
      yield* peer.push(JsonRpc.success(request.id, text("done")))
      assert.isTrue(Exit.isSuccess(yield* Fiber.join(call)))
      deepStrictEqual(cancellations(peer), [])
    }))

  it.scoped("without progress for a whole timeout the call times out (timeoutMillis, no totalMillis) and is cancelled", () =>
    Effect.gen(function*() {
      const { call, peer, progress } = yield* start({ callTimeout: "1 second" })
      yield* TestClock.adjust("800 millis")
      yield* progress(1)
      yield* TestClock.adjust("900 millis")
      assert.isTrue((yield* Fiber.poll(call))._tag === "None")
      yield* TestClock.adjust("200 millis")
      const exit = yield* Fiber.join(call)
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? exit.cause : undefined
      const failure = error?._tag === "Fail" ? error.error : undefined
      assert.instanceOf(failure, McpError.McpTimeout)
      assert.strictEqual(failure.timeoutMillis, 1000)
      assert.isUndefined(failure.totalMillis)
      assert.strictEqual(cancellations(peer).length, 1)
    }))

  it.scoped("the longest total time bounds a call that keeps reporting (McpTimeout with totalMillis)", () =>
    Effect.gen(function*() {
      const { call, peer, progress } = yield* start({ callTimeout: "1 second", maxTotalTimeout: "3 seconds" })
      for (let i = 1; i <= 3; i++) {
        yield* TestClock.adjust("800 millis")
        yield* progress(i)
      }
      // 2.4 s in; the reports would carry it to 3.4 s, the total stops it at 3 s.
      yield* TestClock.adjust("500 millis")
      assert.isTrue((yield* Fiber.poll(call))._tag === "None")
      yield* TestClock.adjust("100 millis")
      const exit = yield* Fiber.join(call)
      const failure = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.instanceOf(failure, McpError.McpTimeout)
      assert.strictEqual(failure.totalMillis, 3000)
      assert.include(
        failure.message,
        "did not finish tools/call within 3 s, the longest a call may run while it reports progress"
      )
      deepStrictEqual(cancellations(peer).map((p) => (p as { reason: string }).reason), ["timeout"])
    }))

  it.scoped("a per-call maxTotalTimeout overrides the client's; it is never shorter than the call's timeout", () =>
    Effect.gen(function*() {
      const { call, progress } = yield* start({ callTimeout: "10 seconds" }, {
        timeout: "1 second",
        maxTotalTimeout: "500 millis"
      })
      yield* TestClock.adjust("800 millis")
      yield* progress(1)
      // The total (500 ms) is below the timeout: the timeout (1 s from the start) is what is left.
      yield* TestClock.adjust("300 millis")
      const exit = yield* Fiber.join(call)
      const failure = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.instanceOf(failure, McpError.McpTimeout)
      assert.strictEqual(failure.timeoutMillis, 1000)
    }))

  it.scoped("resetTimeoutOnProgress: false keeps the timeout from the start, and still reports", () =>
    Effect.gen(function*() {
      const { call, progress, seen } = yield* start({ callTimeout: "1 second", resetTimeoutOnProgress: false })
      yield* TestClock.adjust("800 millis")
      yield* progress(1)
      yield* TestClock.adjust("300 millis")
      const exit = yield* Fiber.join(call)
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(seen.length, 1)
    }))

  it.scoped("a task-augmented call's progress token is its own for the task's life; its reports reach onProgress while it is polled", () =>
    Effect.gen(function*() {
      const { client, peer } = yield* Memory.connect({
        peer: { capabilities: { tools: {}, tasks: { requests: { tools: { call: {} } } } } }
      })
      const seen: Array<McpClient.Progress> = []
      const call = yield* client.callTool("long", {}, { onProgress: (p) => Effect.sync(() => void seen.push(p)) }).pipe(
        Effect.fork
      )
      const list = yield* Memory.expectRequest(peer, "tools/list")
      yield* peer.push(JsonRpc.success(list.id, {
        tools: [{ name: "long", inputSchema: { type: "object" }, execution: { taskSupport: "required" } }]
      }))
      const request = yield* Memory.expectRequest(peer, "tools/call")
      const token = (request.params as { _meta: { progressToken: unknown } })._meta.progressToken
      assert.strictEqual(typeof token, "string")
      const task = {
        taskId: "t1",
        status: "working",
        createdAt: "2026-12-01T00:00:00Z",
        lastUpdatedAt: "2026-12-01T00:00:00Z",
        ttl: null
      }
      yield* peer.push(JsonRpc.success(request.id, { task }))
      // The answer settled the request; the task's reports still find the call.
      yield* peer.push(JsonRpc.notification("notifications/progress", { progressToken: token, progress: 1, total: 2 }))
      yield* until(() => seen.length === 1, "the task's progress delivered")
      yield* TestClock.adjust("1 second")
      const get = yield* Memory.expectRequest(peer, "tasks/get")
      yield* peer.push(JsonRpc.success(get.id, { ...task, status: "completed" }))
      const result = yield* Memory.expectRequest(peer, "tasks/result")
      yield* peer.push(JsonRpc.success(result.id, text("done")))
      yield* Fiber.join(call)
      deepStrictEqual(seen.map((p) => [p.progress, p.total]), [[1, 2]])
      // Once the call is over, its token reaches nothing.
      yield* peer.push(JsonRpc.notification("notifications/progress", { progressToken: token, progress: 2, total: 2 }))
      // A round trip after it: the reader handles messages in order, so the report was handled.
      const ping = yield* Effect.fork(client.request("ping"))
      const asked = yield* Memory.expectRequest(peer, "ping")
      yield* peer.push(JsonRpc.success(asked.id, {}))
      yield* Fiber.join(ping)
      assert.strictEqual(seen.length, 1)
    }))
})
