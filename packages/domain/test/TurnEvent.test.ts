/**
 * Turn events as JSON lines (what `--json` prints and the RPC server streams): every event encodes
 * to one line of JSON that decodes back, alone, to the same event.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc, Schema } from "effect"
import * as TurnEvent from "../src/TurnEvent.js"

const toLine = (event: TurnEvent.TurnEvent): string => JSON.stringify(Schema.encodeSync(TurnEvent.TurnEvent)(event))
const fromLine = (line: string): TurnEvent.TurnEvent => Schema.decodeUnknownSync(TurnEvent.TurnEvent)(JSON.parse(line))

const text = fc.string({ unit: "grapheme", maxLength: 30 })
const event: fc.Arbitrary<TurnEvent.TurnEvent> = fc.oneof(
  fc.record({ sessionId: fc.uuid(), turnId: fc.nat(), message: text }).map((e) => TurnEvent.TurnStarted.make(e)),
  text.map((t) => TurnEvent.TextDelta.make({ text: t })),
  fc.record({ callId: text, name: text, arguments: fc.dictionary(text, fc.jsonValue({ maxDepth: 2 })) }).map((e) =>
    TurnEvent.ToolStarted.make(e)
  ),
  fc.record({
    callId: text,
    name: text,
    status: fc.constantFrom("done" as const, "error" as const, "cancelled" as const, "denied" as const),
    result: text,
    resultType: fc.constantFrom("string" as const, "json" as const),
    mediaUrls: fc.array(text, { maxLength: 3 }),
    truncated: fc.boolean()
  }).map((e) => TurnEvent.ToolDone.make(e)),
  fc.record({
    text,
    usage: fc.record({ inputTokens: fc.nat(), outputTokens: fc.nat() }).map((u) => TurnEvent.Usage.make(u)),
    rounds: fc.nat(),
    note: fc.option(text, { nil: undefined })
  }).map(({ note, ...e }) => TurnEvent.TurnDone.make({ ...e, ...(note === undefined ? {} : { note }) })),
  fc.record({ message: text, errorTag: text }).map((e) => TurnEvent.TurnFailed.make(e)),
  fc.record({ text, finished: fc.array(text, { maxLength: 3 }), cancelled: fc.array(text, { maxLength: 3 }) }).map((
    e
  ) => TurnEvent.TurnStopped.make(e))
)

describe("TurnEvent", () => {
  it.prop("every event is one JSON line that decodes back to itself", [event], ([e]) => {
    const line = toLine(e)
    assert.notInclude(line, "\n")
    assert.deepStrictEqual(fromLine(line), e)
    assert.strictEqual(JSON.parse(line)._tag, e._tag)
  })

  it("the ends of a turn are TurnDone, TurnFailed and TurnStopped", () => {
    assert.isTrue(TurnEvent.isEnd(TurnEvent.TurnFailed.make({ message: "m", errorTag: "X" })))
    assert.isTrue(TurnEvent.isEnd(TurnEvent.TurnStopped.make({ text: "", finished: [], cancelled: [] })))
    assert.isFalse(TurnEvent.isEnd(TurnEvent.TextDelta.make({ text: "x" })))
  })
})
