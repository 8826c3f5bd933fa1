import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import * as LineFramer from "@skald/mcp/internal/lineFramer"
import { FastCheck as fc } from "effect"

// --- a framer that records what it emits ----------------------------------------------------------

interface Recorded {
  readonly framer: LineFramer.LineFramer
  readonly lines: Array<string>
  /** The number of lines emitted when `onTooLarge` was called, once per call. */
  readonly tooLarge: Array<number>
}

const record = (maxLineBytes: number): Recorded => {
  const lines: Array<string> = []
  const tooLarge: Array<number> = []
  const framer = LineFramer.make({
    maxLineBytes,
    onLine: (line) => void lines.push(line),
    onTooLarge: () => void tooLarge.push(lines.length)
  })
  return { framer, lines, tooLarge }
}

const utf8 = (s: string): Buffer => Buffer.from(s, "utf8")
const byteLength = (s: string): number => Buffer.byteLength(s, "utf8")

/**
 * Splits `bytes` at the given cut points (taken modulo its length + 1, so any position, including
 * inside a multi-byte character, and empty chunks). `copy` alternates between Buffer views and plain
 * Uint8Array copies, so both input kinds are exercised.
 */
const chunk = (bytes: Buffer, cuts: ReadonlyArray<number>, copy: ReadonlyArray<boolean>): Array<Uint8Array> => {
  const points = cuts.map((c) => c % (bytes.length + 1)).sort((a, b) => a - b)
  const chunks: Array<Uint8Array> = []
  let start = 0
  for (const [i, point] of [...points, bytes.length].entries()) {
    const view = bytes.subarray(start, point)
    chunks.push(copy[i % Math.max(copy.length, 1)] === true ? new Uint8Array(view) : view)
    start = point
  }
  return chunks
}

// --- arbitraries ------------------------------------------------------------------------------------

const isBlank = (s: string) => /^[ \t\r]*$/.test(s)

/** A character of any width in UTF-8 (1–4 bytes), favouring the multi-byte ones. */
const char = fc.oneof(
  fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
  fc.constantFrom("a", "{", "\"", " ", "\t", "é", "€", "😀", "\r")
)

/** A message line: any non-blank text without LF that does not end in CR. */
const content = fc
  .array(char, { minLength: 1, maxLength: 40 })
  .map((cs) => cs.join("").replaceAll("\n", ""))
  .filter((s) => !isBlank(s) && !s.endsWith("\r"))

/** A blank line: nothing, or only spaces, tabs and CRs. */
const blank = fc.array(fc.constantFrom(" ", "\t", "\r"), { maxLength: 4 }).map((cs) => cs.join(""))

const ending = fc.constantFrom("\n", "\r\n")

/** One line of the stream: a message (emitted) or a blank line (skipped), each with LF or CRLF. */
const streamLine = fc.oneof(
  { weight: 4, arbitrary: fc.record({ text: content, ending, message: fc.constant(true) }) },
  { weight: 1, arbitrary: fc.record({ text: blank, ending, message: fc.constant(false) }) }
)
type StreamLine = { readonly text: string; readonly ending: string; readonly message: boolean }

const cuts = fc.array(fc.nat(), { maxLength: 30 })
const copies = fc.array(fc.boolean(), { maxLength: 5 })

const render = (lines: ReadonlyArray<StreamLine>, tail: string): Buffer =>
  utf8(lines.map((l) => l.text + l.ending).join("") + tail)

// --- properties ---------------------------------------------------------------------------------------

describe("LineFramer", () => {
  it.prop(
    "reassembles any chunking of any sequence of lines into exactly those lines, in order",
    { lines: fc.array(streamLine, { maxLength: 12 }), tail: fc.oneof(fc.constant(""), content), cuts, copies },
    ({ copies, cuts, lines, tail }) => {
      const bytes = render(lines, tail)
      const { framer, lines: emitted, tooLarge } = record(bytes.length + 1)
      for (const piece of chunk(bytes, cuts, copies)) framer.push(piece)
      deepStrictEqual(emitted, lines.filter((l) => l.message).map((l) => l.text))
      deepStrictEqual(tooLarge, [])
      // An unterminated last line is held back, never emitted half-read.
      assert.strictEqual(framer.buffered(), byteLength(tail))
    }
  )

  it.prop(
    "a line above maxLineBytes calls onTooLarge exactly once, after the lines before it, and nothing follows",
    {
      max: fc.integer({ min: 1, max: 48 }),
      lines: fc.array(streamLine, { maxLength: 10 }),
      more: fc.array(streamLine, { maxLength: 4 }),
      cuts,
      copies
    },
    ({ copies, cuts, lines, max, more }) => {
      const bytes = render(lines, "")
      const { framer, lines: emitted, tooLarge } = record(max)
      for (const piece of chunk(bytes, cuts, copies)) framer.push(piece)

      // The model: a line's size is its bytes before the LF (a CR of CRLF included).
      const expected: Array<string> = []
      let tooBig = false
      for (const line of lines) {
        if (byteLength(line.text) + (line.ending === "\r\n" ? 1 : 0) > max) {
          tooBig = true
          break
        }
        if (line.message) expected.push(line.text)
      }
      deepStrictEqual(emitted, expected)
      deepStrictEqual(tooLarge, tooBig ? [expected.length] : [])
      if (tooBig) {
        // The framer is dead: later input, however small, is ignored and nothing is buffered.
        framer.push(render(more, ""))
        framer.push(utf8("{}\n"))
        deepStrictEqual(emitted, expected)
        deepStrictEqual(tooLarge, [expected.length])
        assert.strictEqual(framer.buffered(), 0)
      }
    }
  )

  it.prop(
    "a line exactly at the limit passes, one byte more does not (however it is chunked)",
    { text: content, cuts, copies, ending },
    ({ copies, cuts, ending, text }) => {
      const size = byteLength(text) + (ending === "\r\n" ? 1 : 0)
      const bytes = utf8(text + ending + "next\n")

      const exact = record(size)
      for (const piece of chunk(bytes, cuts, copies)) exact.framer.push(piece)
      deepStrictEqual(exact.lines, size >= 4 ? [text, "next"] : [text])
      deepStrictEqual(exact.tooLarge, size >= 4 ? [] : [1])

      const under = record(size - 1)
      for (const piece of chunk(bytes, cuts, copies)) under.framer.push(piece)
      deepStrictEqual(under.lines, [])
      deepStrictEqual(under.tooLarge, [0])
    }
  )

  it.prop(
    "an unterminated line above the limit is refused before its newline arrives",
    { max: fc.integer({ min: 1, max: 32 }), extra: fc.integer({ min: 1, max: 32 }), cuts },
    ({ cuts, extra, max }) => {
      const { framer, lines, tooLarge } = record(max)
      const bytes = utf8("x".repeat(max + extra))
      for (const piece of chunk(bytes, cuts, [])) framer.push(piece)
      deepStrictEqual(lines, [])
      deepStrictEqual(tooLarge, [0])
      assert.strictEqual(framer.buffered(), 0)
    }
  )

  it("handles CRLF, blank lines and whitespace-only lines", () => {
    const { framer, lines, tooLarge } = record(1024)
    framer.push(utf8("\n\r\n  \n\t\r\n{\"a\":1}\r\n\r\n {\"b\":2} \n"))
    framer.push(utf8("{\"c\":"))
    framer.push(utf8("3}\r"))
    deepStrictEqual(lines, ["{\"a\":1}", " {\"b\":2} "])
    framer.push(utf8("\n"))
    deepStrictEqual(lines, ["{\"a\":1}", " {\"b\":2} ", "{\"c\":3}"])
    deepStrictEqual(tooLarge, [])
    assert.strictEqual(framer.buffered(), 0)
  })

  it("reassembles a 4-byte character split across every byte boundary", () => {
    const bytes = utf8("😀\n")
    for (let cut = 0; cut <= bytes.length; cut++) {
      const { framer, lines } = record(16)
      framer.push(bytes.subarray(0, cut))
      framer.push(bytes.subarray(cut))
      deepStrictEqual(lines, ["😀"], `cut at ${cut}`)
    }
  })

  it("a line exactly at maxLineBytes passes; the next byte is too many", () => {
    const at = record(8)
    at.framer.push(utf8("12345678\n"))
    deepStrictEqual(at.lines, ["12345678"])
    deepStrictEqual(at.tooLarge, [])

    const over = record(8)
    over.framer.push(utf8("ok\n123456789\nlater\n"))
    deepStrictEqual(over.lines, ["ok"])
    deepStrictEqual(over.tooLarge, [1])
    over.framer.push(utf8("more\n"))
    deepStrictEqual(over.lines, ["ok"])
    deepStrictEqual(over.tooLarge, [1])
  })
})
