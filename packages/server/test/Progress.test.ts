/**
 * The call progress display (cli/Progress.ts) on a fake stream: one live line on a terminal (ANSI,
 * or with NO_COLOR none), a plain line per change otherwise.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Progress from "../src/cli/Progress.js"

const stream = (isTTY: boolean) => {
  const written: Array<string> = []
  return { out: { isTTY, write: (text: string) => void written.push(text) }, written }
}

const report = (progress: number, total?: number, message?: string, elapsedMillis = 1500) => ({
  progress,
  total,
  message,
  elapsedMillis
})

describe("the progress display", () => {
  it("the line: amount, share, message, elapsed", () => {
    assert.strictEqual(Progress.progressLine(report(2, 5, "step 2 of 5")), "progress 2/5 (40%) — step 2 of 5 (1.5 s)")
    assert.strictEqual(Progress.progressLine(report(7)), "progress 7 (1.5 s)")
    assert.strictEqual(Progress.progressLine(report(1, 0)), "progress 1/0 (1.5 s)")
  })

  it.effect("not a terminal: a plain line per change, no escapes", () =>
    Effect.gen(function*() {
      const { out, written } = stream(false)
      const display = Progress.make(out, {})
      yield* display.onProgress(report(1, 3))
      yield* display.onProgress(report(1, 3))
      yield* display.onProgress(report(2, 3))
      yield* display.done
      assert.deepStrictEqual(written, ["progress 1/3 (33%) (1.5 s)\n", "progress 2/3 (66%) (1.5 s)\n"])
    }))

  it.effect("a terminal: one live line redrawn in place, ended by done", () =>
    Effect.gen(function*() {
      const { out, written } = stream(true)
      const display = Progress.make(out, {})
      yield* display.onProgress(report(1, 3, "working hard"))
      yield* display.onProgress(report(2, 3))
      yield* display.done
      assert.deepStrictEqual(written, [
        "\r\x1b[Kprogress 1/3 (33%) — working hard (1.5 s)",
        "\r\x1b[Kprogress 2/3 (66%) (1.5 s)",
        "\n"
      ])
    }))

  it.effect("a terminal with NO_COLOR: the live line without ANSI, padded over the longer one before", () =>
    Effect.gen(function*() {
      const { out, written } = stream(true)
      const display = Progress.make(out, { NO_COLOR: "1" })
      yield* display.onProgress(report(1, 3, "working hard"))
      yield* display.onProgress(report(2, 3))
      yield* display.done
      const first = "progress 1/3 (33%) — working hard (1.5 s)"
      const second = "progress 2/3 (66%) (1.5 s)"
      assert.deepStrictEqual(written, [`\r${first}`, `\r${second}${" ".repeat(first.length - second.length)}`, "\n"])
      assert.isFalse(written.join("").includes("\x1b"))
    }))

  it.effect("showing: feeds both task status and progress, and ends the line when the call ends", () =>
    Effect.gen(function*() {
      const { out, written } = stream(true)
      const result = yield* Progress.showing(out, (reporting) =>
        Effect.gen(function*() {
          yield* reporting.onTaskStatus({ taskId: "t1", status: "working", tool: "x", elapsedMillis: 500 })
          yield* reporting.onProgress(report(1))
          return "answer"
        }), {})
      assert.strictEqual(result, "answer")
      assert.deepStrictEqual(written, ["\r\x1b[Ktask t1: working (0.5 s)", "\r\x1b[Kprogress 1 (1.5 s)", "\n"])
    }))
})
