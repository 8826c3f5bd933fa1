/**
 * Task-augmented calls against real servers: the official SDK's task support (fixture `tasks`),
 * a hand-written server with top-level CreateTaskResults (`raw-tasks`), and server-everything.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpClient, StdioTransport } from "@skald/mcp"
import { Effect, Exit, Fiber, Stream } from "effect"
import { everything, fixture } from "./fixtures/fixtures.js"
import { eventually, makeLogCapture, readRecords, tempRecordFile } from "./support.js"

const connect = (name: string, record: string, args: ReadonlyArray<string> = [], options: McpClient.Options = {}) => {
  const logs = makeLogCapture()
  return StdioTransport.client(
    {
      server: name,
      ...fixture(name, { FIXTURE_RECORD: record }, args),
      stdinGrace: "200 millis",
      termGrace: "200 millis"
    },
    options
  ).pipe(
    logs.provide,
    Effect.map((client) => ({ client, lines: logs.lines }))
  )
}

const received = (record: string, method: string) =>
  readRecords(record).filter((r) => r.event === "received" && r.method === method)

const failureTag = (exit: Exit.Exit<unknown, { readonly _tag: string }>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error._tag : undefined

describe("tasks over stdio (SDK task server)", () => {
  it.scopedLive(
    "a required task tool is called as a task, polled, and its result returned",
    () =>
      Effect.gen(function*() {
        const record = yield* tempRecordFile("tasks")
        const { client } = yield* connect("tasks", record)
        const statuses: Array<string> = []
        const { result } = yield* client.callTool("quick_task", { ms: 300 }, {
          onTaskStatus: (p) => Effect.sync(() => void statuses.push(p.status))
        })
        assert.strictEqual(result._tag === "Text" && result.text, "quick_task done after 300 ms")
        assert.strictEqual(statuses.at(-1), "completed")
        assert.isTrue(statuses.includes("working"))
        assert.deepInclude(received(record, "tools/call")[0]!.params as object, { task: {} })
        assert.strictEqual(received(record, "tasks/cancel").length, 0)
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "stopping a polled task sends tasks/cancel for it, and the server cancels it",
    () =>
      Effect.gen(function*() {
        const record = yield* tempRecordFile("tasks")
        const { client } = yield* connect("tasks", record)
        const call = yield* Effect.fork(client.callTool("slow_task", {}))
        yield* eventually(() => received(record, "tasks/get").length > 0, "the first tasks/get")
        yield* Fiber.interrupt(call)
        yield* eventually(
          () => readRecords(record).some((r) => r.event === "cancelled"),
          "the server cancelled the task"
        )
        const started = readRecords(record).find((r) => r.event === "started")!
        const cancels = received(record, "tasks/cancel")
        assert.strictEqual(cancels.length, 1)
        assert.deepStrictEqual(cancels[0]!.params, { taskId: started.taskId })
        assert.strictEqual(received(record, "notifications/cancelled").length, 0)
      }),
    { timeout: 30_000 }
  )

  it.scopedLive("closing the scope cancels a polled task", () =>
    Effect.gen(function*() {
      const record = yield* tempRecordFile("tasks")
      yield* Effect.scoped(Effect.gen(function*() {
        const { client } = yield* connect("tasks", record)
        yield* Effect.forkScoped(client.callTool("slow_task", {}))
        yield* eventually(() => received(record, "tasks/get").length > 0, "the first tasks/get")
      }))
      const started = readRecords(record).find((r) => r.event === "started")!
      assert.deepStrictEqual(received(record, "tasks/cancel").map((r) => r.params), [{ taskId: started.taskId }])
    }), { timeout: 30_000 })

  it.scopedLive(
    "a task that fails with an isError result returns it; one without fails McpTaskFailed",
    () =>
      Effect.gen(function*() {
        const record = yield* tempRecordFile("tasks")
        const { client } = yield* connect("tasks", record)
        const { result } = yield* client.callTool("fail_with_result", {})
        assert.isTrue(result._tag === "Text" && result.isError)
        assert.include(result._tag === "Text" ? result.text : "", "the tool failed")
        const exit = yield* Effect.exit(client.callTool("fail_without_result", {}))
        assert.strictEqual(failureTag(exit), "McpTaskFailed")
        if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
          assert.include(exit.cause.error.message, "the work crashed")
        }
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "a task that needs input the client cannot give (no elicitation yet) fails with a typed error",
    () =>
      Effect.gen(function*() {
        const record = yield* tempRecordFile("tasks")
        const { client } = yield* connect("tasks", record)
        const exit = yield* Effect.exit(client.callTool("input_required_task", {}))
        assert.strictEqual(failureTag(exit), "McpTaskFailed")
        assert.isAtLeast(received(record, "tasks/result").length, 1)
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "a task whose ttl passes is given up (McpTaskExpired) and cancelled on the server",
    () =>
      Effect.gen(function*() {
        const record = yield* tempRecordFile("tasks")
        const { client } = yield* connect("tasks", record)
        const exit = yield* Effect.exit(client.callTool("short_ttl", { ttl: 1200 }))
        assert.strictEqual(failureTag(exit), "McpTaskExpired")
        yield* eventually(() => received(record, "tasks/cancel").length === 1, "tasks/cancel at the deadline")
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "notifications/tasks/status wakes the poller long before its 30 s interval",
    () =>
      Effect.gen(function*() {
        const record = yield* tempRecordFile("tasks")
        const { client } = yield* connect("tasks", record)
        const { result } = yield* client.callTool("pushes_status", { ms: 300 })
        assert.strictEqual(result._tag, "Text")
        // The task completed (and notified) at ~300 ms; the one tasks/get followed the notification,
        // not the 30 s pollInterval (measured on the server's clock, from the task's own records).
        const completed = readRecords(record).find((r) => r.event === "status" && r.status === "completed")!
        const gets = received(record, "tasks/get")
        assert.strictEqual(gets.length, 1)
        assert.isBelow((gets[0]!.t as number) - (completed.t as number), 25_000)
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "pollInterval 0 is clamped: a 1 s task is polled a handful of times, not hundreds",
    () =>
      Effect.gen(function*() {
        const record = yield* tempRecordFile("tasks")
        const { client } = yield* connect("tasks", record)
        yield* client.callTool("zero_poll", { ms: 1000 })
        const gets = received(record, "tasks/get").length
        assert.isAtLeast(gets, 1)
        assert.isAtMost(gets, 4)
      }),
    { timeout: 30_000 }
  )
})

describe("tasks over stdio (hand-written server, top-level CreateTaskResult)", () => {
  it.scopedLive(
    "a top-level CreateTaskResult is recognised and polled, and cancelled when stopped",
    () =>
      Effect.gen(function*() {
        const record = yield* tempRecordFile("tasks")
        const { client } = yield* connect("raw-tasks", record)
        const tools = yield* client.tools
        assert.strictEqual(tools.find((t) => t.name === "slow")?.taskSupport, "required")
        const call = yield* Effect.fork(client.callTool("slow", {}))
        yield* eventually(() => received(record, "tasks/get").length > 0, "the first tasks/get")
        yield* Fiber.interrupt(call)
        yield* eventually(() => received(record, "tasks/cancel").length === 1, "tasks/cancel")
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "a server without tasks.cancel gets no tasks/cancel; the abandonment is logged",
    () =>
      Effect.gen(function*() {
        const record = yield* tempRecordFile("tasks")
        const { client, lines } = yield* connect("raw-tasks", record, ["nocancel"])
        const call = yield* Effect.fork(client.callTool("slow", {}))
        yield* eventually(() => received(record, "tasks/get").length > 0, "the first tasks/get")
        yield* Fiber.interrupt(call)
        yield* eventually(() => lines.some((l) => l.text.includes("does not offer tasks/cancel")), "the warning")
        assert.strictEqual(received(record, "tasks/cancel").length, 0)
      }),
    { timeout: 30_000 }
  )
})

describe("tasks over stdio (server-everything)", () => {
  it.scopedLive(
    "simulate-research-query, registered after initialize, completes through polling",
    () =>
      Effect.gen(function*() {
        const client = yield* StdioTransport.client({ server: "everything", ...everything() })
        // It is registered after notifications/initialized and announced with list_changed.
        yield* client.tools
        yield* client.toolListChanges.pipe(
          Stream.filter((list) => list.tools.some((t) => t.name === "simulate-research-query")),
          Stream.runHead
        )
        const statuses: Array<string> = []
        const { result } = yield* client.callTool("simulate-research-query", { topic: "otters" }, {
          onTaskStatus: (p) => Effect.sync(() => void statuses.push(p.status))
        })
        assert.strictEqual(result._tag, "Text")
        assert.include(result._tag === "Text" ? result.text : "", "Research Report: otters")
        assert.strictEqual(statuses.at(-1), "completed")
      }),
    { timeout: 30_000 }
  )
})
