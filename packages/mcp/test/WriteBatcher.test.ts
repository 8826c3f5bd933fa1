import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import * as WriteBatcher from "@skald/mcp/internal/writeBatcher"
import { FastCheck as fc } from "effect"

/** A batcher whose writes are recorded and whose end of turn is run by hand. */
const record = (maxMessages: number, maxChars: number) => {
  const writes: Array<string> = []
  let turnEnd: Array<() => void> = []
  const batcher = WriteBatcher.make({
    write: (data) => void writes.push(data),
    schedule: (flush) => void turnEnd.push(flush),
    maxMessages,
    maxChars
  })
  const endTurn = () => {
    const due = turnEnd
    turnEnd = []
    for (const flush of due) flush()
  }
  return { batcher, endTurn, writes, scheduled: () => turnEnd.length }
}

/** A message line: no newline inside (the transport's lines are JSON). */
const line = fc.string({ maxLength: 12 }).map((s) => s.replaceAll("\n", " "))

type Op = { readonly _tag: "send"; readonly line: string } | { readonly _tag: "endTurn" } | { readonly _tag: "flush" }
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: line.map((l): Op => ({ _tag: "send", line: l })) },
  { weight: 1, arbitrary: fc.constant<Op>({ _tag: "endTurn" }) },
  { weight: 1, arbitrary: fc.constant<Op>({ _tag: "flush" }) }
)

describe("WriteBatcher", () => {
  it.prop(
    "every message is written once, in order, by the end of its turn, in writes within the bounds",
    {
      ops: fc.array(op, { maxLength: 60 }),
      maxMessages: fc.integer({ min: 1, max: 6 }),
      maxChars: fc.integer({ min: 1, max: 40 })
    },
    ({ maxChars, maxMessages, ops }) => {
      const { batcher, endTurn, scheduled, writes } = record(maxMessages, maxChars)
      const sent: Array<string> = []
      for (const o of ops) {
        if (o._tag === "send") {
          sent.push(o.line)
          batcher.send(o.line)
        } else if (o._tag === "endTurn") {
          endTurn()
          // Nothing sent in a turn waits past its end.
          deepStrictEqual(writes.join(""), sent.map((l) => `${l}\n`).join(""))
        } else {
          batcher.flush()
          deepStrictEqual(writes.join(""), sent.map((l) => `${l}\n`).join(""))
        }
        // At most one end-of-turn flush is scheduled at a time.
        assert.isAtMost(scheduled(), 1)
      }
      endTurn()
      deepStrictEqual(writes.join(""), sent.map((l) => `${l}\n`).join(""))
      for (const data of writes) {
        const lines = data.split("\n").slice(0, -1)
        assert.isAtLeast(lines.length, 1, "no empty write")
        assert.isAtMost(lines.length, maxMessages)
        // A write is cut as soon as it reaches maxChars: only its last line may take it there.
        const before = lines.slice(0, -1).reduce((n, l) => n + l.length, 0)
        assert.isBelow(before, maxChars)
      }
    }
  )

  it("a burst is written in pieces of maxMessages as it is sent, the rest at the end of the turn", () => {
    const { batcher, endTurn, writes } = record(3, 1 << 20)
    for (let i = 0; i < 7; i++) batcher.send(`m${i}`)
    deepStrictEqual(writes, ["m0\nm1\nm2\n", "m3\nm4\nm5\n"])
    endTurn()
    deepStrictEqual(writes, ["m0\nm1\nm2\n", "m3\nm4\nm5\n", "m6\n"])
  })

  it("a message of maxChars or more is written at once; maxMessages 1 writes each message as it is sent", () => {
    const big = record(32, 10)
    big.batcher.send("small")
    big.batcher.send("0123456789")
    deepStrictEqual(big.writes, ["small\n0123456789\n"])
    assert.strictEqual(big.scheduled(), 1)
    big.endTurn()
    deepStrictEqual(big.writes, ["small\n0123456789\n"])

    const single = record(1, 1 << 20)
    single.batcher.send("a")
    single.batcher.send("b")
    deepStrictEqual(single.writes, ["a\n", "b\n"])
    assert.strictEqual(single.scheduled(), 0)
  })
})
