/**
 * A server's stderr: one line over the 64 KiB cap is cut with a marker and reading goes on, so the
 * lines written after it still reach the log sink (a real process writing to its stderr).
 */
import { assert, describe, it } from "@effect/vitest"
import * as StderrLines from "@skald/mcp/internal/stderrLines"
import { Effect, FastCheck as fc } from "effect"
import { fixture } from "./fixtures/fixtures.js"
import { connect, makeLogCapture } from "./support.js"

const CAP = 64 * 1024

describe("stderr lines", () => {
  it.live("a line over 64 KiB is truncated with a marker and later stderr lines are kept", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const long = CAP + 10_000
      // The echo fixture, started by a wrapper that first writes a long stderr line, then two more.
      const echo = fixture("echo")
      const script = `process.stderr.write("L".repeat(${long}) + "\\nafter the long line\\n");` +
        `process.stderr.write("and another\\n");` +
        `const c = require("node:child_process").spawn(${JSON.stringify(echo.command)}, ${
          JSON.stringify(echo.args)
        }, ` +
        `{ stdio: "inherit", cwd: ${JSON.stringify(echo.cwd)} }); c.on("exit", (code) => process.exit(code ?? 1))`
      yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("long-stderr", {
            command: process.execPath,
            args: ["-e", script],
            cwd: echo.cwd
          })
          yield* client.callTool("echo", { message: "12345" })
        })
      ).pipe(logs.provide)
      const stderr = logs.withTag("stderr")
      const cut = stderr.find((l) => l.startsWith("LLLL"))
      assert.isDefined(cut)
      assert.strictEqual(cut, "L".repeat(CAP) + StderrLines.truncatedMarker(long - CAP))
      assert.include(stderr, "after the long line")
      assert.include(stderr, "and another")
      assert.include(stderr, "echo fixture: echoing 5 chars")
    }))

  it.prop("any chunking gives the same lines; none is longer than the cap plus its marker", [
    fc.array(
      fc.oneof(
        fc.string({ maxLength: 40 }),
        fc.string({ minLength: 60, maxLength: 120 }),
        fc.constant("héllo wörld ✓")
      ),
      { maxLength: 8 }
    ),
    fc.array(fc.nat(), { maxLength: 6 })
  ], ([lines, cuts]) => {
    const max = 50
    const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(""), "utf8")
    const points = cuts.map((c) => c % (bytes.length + 1)).sort((a, b) => a - b)
    const got: Array<string> = []
    const splitter = StderrLines.make({ maxLineBytes: max, onLine: (l) => void got.push(l) })
    let start = 0
    for (const p of [...points, bytes.length]) {
      splitter.push(bytes.subarray(start, p))
      start = p
    }
    const expected = lines.flatMap((l) => l.split("\n")).flatMap((l) => {
      const size = Buffer.byteLength(l, "utf8")
      if (size <= max) return l.replace(/\r$/, "").trim().length === 0 ? [] : [l.replace(/\r$/, "")]
      let kept = Buffer.from(l, "utf8").subarray(0, max).toString("utf8")
      while (kept.endsWith("\uFFFD")) kept = kept.slice(0, -1)
      return [`${kept}${StderrLines.truncatedMarker(size - Buffer.byteLength(kept, "utf8"))}`]
    })
    assert.deepStrictEqual(got, expected)
  })
})
