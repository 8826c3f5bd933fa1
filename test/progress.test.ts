/**
 * Progress of long ordinary calls against real servers: `server-everything`'s
 * `trigger-long-running-operation` (the SDK's progress, sent only for a call with a progress
 * token) and the hand-written 2024-11-05 server's `progress` tool (fixtures/legacy.mjs) — the
 * per-call `onProgress`, the timeout restarted by progress and bounded by `maxTotalTimeout`
 * (short configured timeouts, real clock), and the lines `skald call` / `skald mcp call` print on
 * stderr when it is not a terminal.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpError } from "@skald/domain"
import type { McpClient } from "@skald/mcp"
import { Effect } from "effect"
import { runSkald } from "./cli-support.js"
import { everything, fixture } from "./fixtures/fixtures.js"
import { makeHome } from "./host-support.js"
import { connect, eventually, expectText, readRecords, tempRecordFile } from "./support.js"

const legacy = (env: Record<string, string> = {}) => fixture("legacy", env, ["stdio"])

const collector = () => {
  const seen: Array<McpClient.Progress> = []
  return { seen, onProgress: (p: McpClient.Progress) => Effect.sync(() => void seen.push(p)) }
}

describe("progress from real servers", () => {
  it.scopedLive(
    "server-everything's long-running operation reports each step to onProgress",
    () =>
      Effect.gen(function*() {
        const client = yield* connect("everything", everything())
        const { onProgress, seen } = collector()
        const outcome = yield* client.callTool("trigger-long-running-operation", { duration: 0.6, steps: 3 }, {
          onProgress
        })
        assert.match(expectText(outcome.result).text, /^Long running operation completed/)
        assert.deepStrictEqual(seen.map((p) => [p.progress, p.total]), [[1, 3], [2, 3], [3, 3]])
        assert.isTrue(seen.every((p, i) => i === 0 || p.elapsedMillis >= seen[i - 1]!.elapsedMillis))
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "progress restarts the timeout: a call longer than its timeout that reports within it succeeds",
    () =>
      Effect.gen(function*() {
        const file = yield* tempRecordFile("legacy-progress")
        const client = yield* connect("legacy", legacy({ FIXTURE_RECORD: file }))
        const { onProgress, seen } = collector()
        // 10 reports 100 ms apart: 1.1 s in all, against a 600 ms timeout.
        const outcome = yield* client.callTool("progress", { steps: 10, intervalMs: 100 }, {
          timeout: "600 millis",
          onProgress
        })
        assert.strictEqual(expectText(outcome.result).text, "done after 10 steps")
        assert.deepStrictEqual(seen.map((p) => p.progress), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        assert.deepStrictEqual(seen[0]!.message, "step 1 of 10")
        const call = readRecords(file).find((r) => r.method === "tools/call")!
        const params = call.params as { _meta: { progressToken: unknown } }
        assert.strictEqual(params._meta.progressToken, call.id)
        assert.notInclude(readRecords(file).map((r) => r.method), "notifications/cancelled")
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "maxTotalTimeout bounds a call whose progress keeps it going; it is cancelled",
    () =>
      Effect.gen(function*() {
        const file = yield* tempRecordFile("legacy-total")
        const client = yield* connect("legacy", legacy({ FIXTURE_RECORD: file }), {
          client: { maxTotalTimeout: "1 second" }
        })
        // Reports every 100 ms for 4 s; a 600 ms timeout, restarted by each, and 1 s in all.
        const error = yield* Effect.flip(
          client.callTool("progress", { steps: 40, intervalMs: 100 }, { timeout: "600 millis" })
        )
        assert.instanceOf(error, McpError.McpTimeout)
        assert.strictEqual(error.totalMillis, 1000)
        const cancellations = () => readRecords(file).filter((r) => r.method === "notifications/cancelled")
        yield* eventually(() => cancellations().length > 0, "the cancellation reached the server")
        assert.strictEqual(cancellations().length, 1)
        assert.strictEqual((cancellations()[0]!.params as { reason: string }).reason, "timeout")
      }),
    { timeout: 30_000 }
  )
})

describe("the CLI shows progress on stderr", () => {
  const noEscapes = (text: string) => assert.isFalse(text.includes("\x1b"), JSON.stringify(text))

  it("skald call: a plain line per report when stderr is not a terminal; the result on stdout", async () => {
    const cmd = legacy()
    const r = await runSkald([
      "call",
      "progress",
      "--args",
      "{\"steps\":3,\"intervalMs\":50}",
      "--timeout",
      "0.3",
      "--",
      cmd.command,
      ...cmd.args
    ])
    assert.strictEqual(r.status, 0, r.stderr)
    assert.strictEqual(r.stdout, "done after 3 steps\n")
    const lines = r.stderr.split("\n").filter((l) => l.startsWith("progress "))
    assert.strictEqual(lines.length, 3, r.stderr)
    lines.forEach((line, i) =>
      assert.match(line, new RegExp(`^progress ${i + 1}/3 \\(\\d+%\\) — step ${i + 1} of 3 \\(\\d+\\.\\d s\\)$`))
    )
    noEscapes(r.stderr)
  })

  it("skald call against server-everything's long-running operation", async () => {
    const cmd = everything()
    const r = await runSkald([
      "call",
      "trigger-long-running-operation",
      "--args",
      "{\"duration\":0.4,\"steps\":2}",
      "--",
      cmd.command,
      ...cmd.args
    ])
    assert.strictEqual(r.status, 0, r.stderr)
    assert.match(r.stdout, /^Long running operation completed/)
    const lines = r.stderr.split("\n").filter((l) => l.startsWith("progress "))
    assert.deepStrictEqual(lines.map((l) => l.replace(/\(\d+\.\d s\)$/, "")), [
      "progress 1/2 (50%) ",
      "progress 2/2 (100%) "
    ])
    noEscapes(r.stderr)
  }, 30_000)

  it("skald mcp call of a registered server", async () => {
    const home = makeHome()
    const cmd = legacy()
    const added = await runSkald(["mcp", "add", "old-one", "--", cmd.command, ...cmd.args], {
      env: { SKALD_HOME: home }
    })
    assert.strictEqual(added.status, 0, added.stderr)
    const r = await runSkald(["mcp", "call", "old-one", "progress", "--args", "{\"steps\":2,\"intervalMs\":50}"], {
      env: { SKALD_HOME: home }
    })
    assert.strictEqual(r.status, 0, r.stderr)
    assert.strictEqual(r.stdout, "done after 2 steps\n")
    const lines = r.stderr.split("\n").filter((l) => l.startsWith("progress "))
    assert.strictEqual(lines.length, 2, r.stderr)
    noEscapes(r.stderr)
  }, 30_000)
})
