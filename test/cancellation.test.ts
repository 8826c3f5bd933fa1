/**
 * Cancellation over stdio: a call timeout and an interruption each send exactly one
 * `notifications/cancelled` for the request they abandon, with their reason; an answered call
 * sends none. The cancel fixture records what it receives; after the `mark` tool has answered,
 * everything sent before it has been recorded (stdio is ordered and the SDK handles messages in
 * order), so the records can be read without waiting for time to pass.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpError } from "@skald/domain"
import { McpClient } from "@skald/mcp"
import { Effect, Exit, Fiber } from "effect"
import { fixture } from "./fixtures/fixtures.js"
import { connect, eventually, expectText, readRecords, tempRecordFile } from "./support.js"

/** Connects `server` recording to `file` (by default one removed with the current scope). */
const connectRecording = (server: string, recordTo?: string) =>
  Effect.gen(function*() {
    const file = recordTo ?? (yield* tempRecordFile("cancel"))
    const client = yield* connect(server, fixture("cancel", { FIXTURE_RECORD: file }))
    const records = () => readRecords(file)
    /** Sends `mark` and waits for its answer: every earlier message has been recorded. */
    const sync = Effect.map(client.callTool("mark"), (outcome) => expectText(outcome.result).text)
    return { client, records, sync }
  })

const startedWait = (records: ReadonlyArray<Record<string, unknown>>) =>
  records.filter((r) => r.event === "started" && r.tool === "wait")

describe("cancellation", () => {
  it.scopedLive("a call timeout fails with McpTimeout and sends one notifications/cancelled with reason timeout", () =>
    Effect.gen(function*() {
      const { client, records, sync } = yield* connectRecording("cancel-timeout")
      const error = yield* Effect.flip(client.callTool("wait", {}, { timeout: "300 millis" }))
      assert.instanceOf(error, McpError.McpTimeout)
      assert.strictEqual(error.method, "tools/call")
      assert.strictEqual(error.timeoutMillis, 300)
      assert.strictEqual(yield* sync, "mark done")

      const all = records()
      const started = startedWait(all)
      assert.strictEqual(started.length, 1)
      const id = started[0]!.requestId
      assert.isNumber(id)
      const cancelled = all.filter((r) => r.event === "cancelled")
      assert.deepStrictEqual(cancelled, [{ event: "cancelled", requestId: id, reason: McpClient.TIMEOUT_REASON }])
      assert.strictEqual(McpClient.TIMEOUT_REASON, "timeout")
      // The SDK aborted the handler with that reason.
      assert.deepStrictEqual(all.filter((r) => r.event === "aborted"), [{
        event: "aborted",
        requestId: id,
        reason: "timeout"
      }])
    }))

  it.scopedLive("interrupting a call sends one notifications/cancelled with the stop reason", () =>
    Effect.gen(function*() {
      const { client, records, sync } = yield* connectRecording("cancel-stop")
      const fiber = yield* Effect.fork(client.callTool("wait"))
      yield* eventually(() => startedWait(records()).length === 1, "the wait tool started")
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.strictEqual(yield* sync, "mark done")

      const all = records()
      const id = startedWait(all)[0]!.requestId
      const cancelled = all.filter((r) => r.event === "cancelled")
      assert.deepStrictEqual(cancelled, [{ event: "cancelled", requestId: id, reason: McpClient.STOP_REASON }])
      assert.deepStrictEqual(all.filter((r) => r.event === "aborted"), [
        { event: "aborted", requestId: id, reason: McpClient.STOP_REASON }
      ])
    }))

  it.scopedLive("an answered call sends no notifications/cancelled", () =>
    Effect.gen(function*() {
      const { client, records, sync } = yield* connectRecording("cancel-none")
      const outcome = yield* client.callTool("quick")
      assert.strictEqual(expectText(outcome.result).text, "quick done")
      // A generous timeout that never fires, then an interruption after the answer: neither cancels.
      const again = yield* client.callTool("quick", {}, { timeout: "30 seconds" })
      assert.strictEqual(expectText(again.result).text, "quick done")
      assert.strictEqual(yield* sync, "mark done")
      const all = records()
      assert.deepStrictEqual(all.filter((r) => r.event === "cancelled"), [])
      assert.deepStrictEqual(all.map((r) => r.tool), ["quick", "quick", "mark"])
    }))

  it.scopedLive("each of two concurrent calls is cancelled by its own id", () =>
    Effect.gen(function*() {
      const { client, records, sync } = yield* connectRecording("cancel-two")
      const slow = yield* Effect.fork(client.callTool("wait"))
      const timedOut = yield* Effect.fork(Effect.flip(client.callTool("wait", {}, { timeout: "300 millis" })))
      yield* eventually(() => startedWait(records()).length === 2, "both waits started")
      const error = yield* Fiber.join(timedOut)
      assert.instanceOf(error, McpError.McpTimeout)
      yield* Fiber.interrupt(slow)
      yield* sync
      const all = records()
      const ids = startedWait(all).map((r) => r.requestId)
      const cancelled = all.filter((r) => r.event === "cancelled")
      assert.strictEqual(cancelled.length, 2)
      assert.sameMembers(cancelled.map((r) => r.requestId), ids)
      assert.sameMembers(cancelled.map((r) => r.reason), [McpClient.TIMEOUT_REASON, McpClient.STOP_REASON])
    }))

  it.scopedLive("closing the scope with a call in flight sends notifications/cancelled before stdin closes", () =>
    Effect.gen(function*() {
      // The record outlives the connection's scope.
      const file = yield* tempRecordFile("cancel")
      let records: () => Array<Record<string, unknown>> = () => []
      yield* Effect.scoped(
        Effect.gen(function*() {
          const connected = yield* connectRecording("cancel-close", file)
          records = connected.records
          yield* Effect.forkScoped(connected.client.callTool("wait"))
          yield* eventually(() => startedWait(connected.records()).length === 1, "the wait tool started")
        })
      )
      // The scope waited for the server to exit, so its record is complete.
      const all = records()
      const id = startedWait(all)[0]!.requestId
      assert.deepStrictEqual(all.filter((r) => r.event === "cancelled"), [
        { event: "cancelled", requestId: id, reason: McpClient.STOP_REASON }
      ])
    }))

  it.scopedLive("interrupting the fiber that owns the connection mid-call cancels the call before stdin closes", () =>
    Effect.gen(function*() {
      // As a CLI's main fiber on Ctrl-C: the call and the connection's scope are the same fiber's,
      // so its finalizers close the connection before the fiber ends.
      const file = yield* tempRecordFile("cancel")
      let records: () => Array<Record<string, unknown>> = () => []
      const fiber = yield* Effect.fork(Effect.scoped(
        Effect.gen(function*() {
          const connected = yield* connectRecording("cancel-owner", file)
          records = connected.records
          return yield* connected.client.callTool("wait")
        })
      ))
      yield* eventually(() => startedWait(records()).length === 1, "the wait tool started")
      yield* Fiber.interrupt(fiber)
      const all = records()
      const id = startedWait(all)[0]!.requestId
      assert.deepStrictEqual(all.filter((r) => r.event === "cancelled"), [
        { event: "cancelled", requestId: id, reason: McpClient.STOP_REASON }
      ])
    }))
})
