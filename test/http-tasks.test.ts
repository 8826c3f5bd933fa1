/**
 * Tasks over streamable HTTP, against the official SDK's task server (fixtures/tasks-server.ts) on
 * its `StreamableHTTPServerTransport`: the poller is the transport-free engine's, so what can
 * differ here is the wire — `tasks/get` and `tasks/result` as POSTs, the server's elicitation
 * arriving on the stream of the blocked `tasks/result` and its answer POSTed back, `tasks/cancel`
 * POSTed when the caller stops. Each case runs with SSE answers and with plain JSON answers (where
 * the SDK cannot send the task's question at all: see the last case).
 */
import { assert, describe, it } from "@effect/vitest"
import { Elicitation } from "@skald/mcp"
import { Effect, Exit, Fiber } from "effect"
import { accept, scripted } from "./elicitation-support.js"
import { connectHttp, httpFixture, startHttpFixture } from "./http-support.js"
import { eventually, expectText, makeLogCapture, readRecords, tempRecordFile } from "./support.js"

type Rec = Record<string, unknown>

/** The JSON-RPC methods POSTed, in order, as the fixture recorded them off the wire. */
const posted = (records: ReadonlyArray<Rec>): Array<string> =>
  records.filter((r) => r.event === "request" && r.method === "POST")
    .flatMap((r) => (r.messages as Array<{ method?: string }>).map((m) => m.method ?? "(answer)"))

const start = (mode: "stateful" | "json") =>
  Effect.gen(function*() {
    const record = yield* tempRecordFile(`http-tasks-${mode}`)
    const server = yield* startHttpFixture(httpFixture("tasks", mode, { FIXTURE_RECORD: record }))
    return { url: server.url, records: () => readRecords(record) }
  })

const quietly = <A, E, R>(self: Effect.Effect<A, E, R>) => makeLogCapture().provide(self)

for (const mode of ["stateful", "json"] as const) {
  describe(`tasks over streamable HTTP (${mode === "stateful" ? "SSE answers" : "JSON answers"})`, () => {
    it.scopedLive("a task-required tool is polled over POSTs to its result", () =>
      Effect.gen(function*() {
        const { records, url } = yield* start(mode)
        const client = yield* quietly(connectHttp("tasks", url))
        const statuses: Array<string> = []
        const outcome = yield* client.callTool("quick_task", { ms: 300, pollInterval: 100 }, {
          onTaskStatus: (p) => Effect.sync(() => void statuses.push(p.status))
        })
        assert.strictEqual(expectText(outcome.result).text, "quick_task done after 300 ms")
        assert.strictEqual(statuses[0], "working")
        assert.strictEqual(statuses.at(-1), "completed")
        const methods = posted(records())
        assert.include(methods, "tasks/get")
        assert.include(methods, "tasks/result")
        // The call itself carried the task augmentation: one tools/call, no plain retry.
        assert.strictEqual(methods.filter((m) => m === "tools/call").length, 1)
      }), { timeout: 30_000 })

    it.scopedLive(
      "a caller that stops sends tasks/cancel over HTTP, and the server's task is cancelled",
      () =>
        Effect.gen(function*() {
          const { records, url } = yield* start(mode)
          const client = yield* quietly(connectHttp("tasks", url))
          const statuses: Array<string> = []
          const call = yield* Effect.fork(client.callTool("slow_task", { pollInterval: 100 }, {
            onTaskStatus: (p) => Effect.sync(() => void statuses.push(p.status))
          }))
          yield* eventually(() => posted(records()).includes("tasks/get"), "the task being polled")
          const exit = yield* Fiber.interrupt(call)
          assert.isTrue(Exit.isInterrupted(exit))
          yield* eventually(
            () => records().some((r) => r.event === "cancelled" && r.tool === "slow_task"),
            "the task cancelled on the server"
          )
          const methods = posted(records())
          assert.strictEqual(methods.filter((m) => m === "tasks/cancel").length, 1)
          // A task is cancelled with tasks/cancel only, never notifications/cancelled (the spec).
          assert.notInclude(methods, "notifications/cancelled")
          assert.include(statuses, "working")
        }),
      { timeout: 30_000 }
    )

    if (mode === "stateful") {
      it.scopedLive(
        "input_required: the server's question comes while tasks/result waits, and the task completes",
        () =>
          Effect.gen(function*() {
            const { records, url } = yield* start(mode)
            const script = scripted(false, () => accept({ name: "Ada" }))
            const client = yield* quietly(connectHttp("tasks", url)).pipe(
              Effect.provideService(Elicitation.ElicitationHandler, script.handler)
            )
            const statuses: Array<string> = []
            const outcome = yield* client.callTool("input_required_task", {
              message: "Who are you?",
              pollInterval: 100
            }, {
              onTaskStatus: (p) => Effect.sync(() => void statuses.push(p.status))
            })
            assert.strictEqual(
              expectText(outcome.result).text,
              `input_required_task: {"action":"accept","content":{"name":"Ada"}}`
            )
            assert.deepStrictEqual(script.state.requests.map((r) => r.message), ["Who are you?"])
            assert.include(statuses, "input_required")
            assert.strictEqual(statuses.at(-1), "completed")
            // The answer went back as a POST of its own (a JSON-RPC response, no method).
            assert.include(posted(records()), "(answer)")
          }),
        { timeout: 30_000 }
      )
    } else {
      // The SDK's transport in JSON-answer mode writes nothing but the answer to a POST: a request
      // it makes in relation to one (here the task's elicitation, tied to the blocked tasks/result)
      // is dropped. The question never comes; the call is bounded by the task's ttl all the same.
      it.scopedLive(
        "input_required with JSON answers: the question cannot come; the ttl ends the wait and the task is cancelled",
        () =>
          Effect.gen(function*() {
            const { records, url } = yield* start(mode)
            const script = scripted(false, () => accept({ name: "Ada" }))
            const client = yield* quietly(connectHttp("tasks", url, { client: { taskTtl: "1500 millis" } })).pipe(
              Effect.provideService(Elicitation.ElicitationHandler, script.handler)
            )
            const statuses: Array<string> = []
            const error = yield* Effect.flip(
              client.callTool("input_required_task", { pollInterval: 100 }, {
                onTaskStatus: (p) => Effect.sync(() => void statuses.push(p.status))
              })
            )
            assert.strictEqual(error._tag, "McpTaskExpired")
            assert.include(statuses, "input_required")
            assert.deepStrictEqual(script.state.requests, [])
            yield* eventually(() => posted(records()).includes("tasks/cancel"), "tasks/cancel at the deadline")
          }),
        { timeout: 30_000 }
      )
    }
  })
}
