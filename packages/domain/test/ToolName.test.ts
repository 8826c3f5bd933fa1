import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { ServerName, ToolName } from "@skald/domain"
import { Either, FastCheck as fc, Option, Schema } from "effect"

// --- arbitraries, from the rule: letters, digits, '-' and '_', never '__', not starting or ending
// with '_', 1–64 characters ------------------------------------------------------------------------

const word = fc.stringMatching(/^[A-Za-z0-9-]{1,12}$/)

/** Any valid server name: words of letters, digits and '-', joined by single underscores. */
const serverName: fc.Arbitrary<string> = fc.oneof(
  fc.array(word, { minLength: 1, maxLength: 8 }).map((words) => words.join("_")),
  fc.stringMatching(/^[A-Za-z0-9-]{1,64}$/),
  fc.constantFrom("a", "-", "0", "a_b", "-_-", "x".repeat(64), "a_".repeat(31) + "ab")
).filter((s) => s.length <= ServerName.maxLength)

/** Any non-empty tool name, however odd: underscores, `__`, `mcp__`, unicode. */
const toolName: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: "binary", minLength: 1 }),
  fc.array(fc.constantFrom("_", "__", "mcp__", "a", "-", "é", " "), { minLength: 1, maxLength: 8 }).map((p) =>
    p.join("")
  )
)

/** Inserts `piece` into `s` at a position chosen by `at`. */
const insert = (s: string, piece: string, at: number) => {
  const i = at % (s.length + 1)
  return s.slice(0, i) + piece + s.slice(i)
}

const badChar = fc.oneof(
  fc.constantFrom(" ", ".", "/", ":", "$", "é", "😀", "\n", "\u0000", "~"),
  fc.string({ unit: "binary", minLength: 1, maxLength: 1 }).filter((c) => !/^[A-Za-z0-9_-]$/.test(c))
)

/** Names that break exactly one rule each (beyond breaking it, they are otherwise valid). */
const invalid = {
  empty: fc.constant(""),
  tooLong: fc.stringMatching(/^[A-Za-z0-9-]{65,100}$/),
  badChar: fc.tuple(serverName, badChar, fc.nat()).map(([s, c, at]) => insert(s, c, at)),
  doubleUnderscore: fc.tuple(word, word).map(([a, b]) => `${a}__${b}`),
  leadingUnderscore: serverName.map((s) => `_${s}`).filter((s) => s.length <= 64),
  trailingUnderscore: serverName.map((s) => `${s}_`).filter((s) => s.length <= 64)
}

// --- properties -------------------------------------------------------------------------------------

describe("ServerName", () => {
  it.prop("accepts every name the rule allows", [serverName], ([s]) => {
    assert.isTrue(ServerName.isValid(s), s)
    assert.isTrue(Either.isRight(Schema.decodeUnknownEither(ServerName.ServerName)(s)))
  })

  for (const [rule, arbitrary] of Object.entries(invalid)) {
    it.prop(`rejects names that break a rule: ${rule}`, [arbitrary], ([s]) => {
      assert.isFalse(ServerName.isValid(s), JSON.stringify(s))
      assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(ServerName.ServerName)(s)))
      assert.throws(() => ServerName.make(s))
    })
  }

  it("limits: 64 characters pass, 65 do not", () => {
    assert.isTrue(ServerName.isValid("a".repeat(64)))
    assert.isFalse(ServerName.isValid("a".repeat(65)))
    assert.isTrue(ServerName.isValid("a_b-c"))
    assert.isFalse(ServerName.isValid("_"))
    assert.isFalse(ServerName.isValid("a__b"))
  })
})

describe("ToolName", () => {
  it.prop("parse(format(server, tool)) gives back the server and the tool", [serverName, toolName], ([s, t]) => {
    const server = ServerName.make(s)
    const name = ToolName.format(server, t)
    assert.strictEqual(name, `mcp__${s}__${t}`)
    deepStrictEqual(ToolName.parse(name), Option.some({ server, tool: t }))
  })

  it.prop("parse is sound: whatever it accepts formats back to the same string", [
    fc.oneof(
      fc.string(),
      fc.tuple(
        fc.constantFrom("mcp__", "mcp_", "mcp___", "MCP__", ""),
        fc.string(),
        fc.constantFrom("__", "_", ""),
        fc.string()
      )
        .map((parts) => parts.join(""))
    )
  ], ([name]) => {
    const parsed = ToolName.parse(name)
    if (Option.isSome(parsed)) {
      assert.isTrue(ServerName.isValid(parsed.value.server))
      assert.isAbove(parsed.value.tool.length, 0)
      assert.strictEqual(ToolName.format(parsed.value.server, parsed.value.tool), name)
    }
  })

  it.prop(
    "no prefix: None",
    [fc.string().filter((s) => !s.startsWith("mcp__")), serverName, toolName],
    ([pre, s, t]) => {
      assert.isTrue(Option.isNone(ToolName.parse(`${pre}${s}__${t}`)))
      assert.isTrue(Option.isNone(ToolName.parse(`${s}__${t}`)))
    }
  )

  it.prop("empty tool: None", [serverName], ([s]) => {
    assert.isTrue(Option.isNone(ToolName.parse(`mcp__${s}__`)))
    assert.isTrue(Option.isNone(ToolName.parse(`mcp__${s}`)))
  })

  it.prop(
    "invalid server (before the first '__'): None",
    [
      fc.oneof(invalid.empty, invalid.tooLong, invalid.badChar, invalid.leadingUnderscore)
        .filter((s) => !s.includes("__") && !s.endsWith("_")),
      toolName
    ],
    ([s, t]) => {
      assert.isTrue(Option.isNone(ToolName.parse(`mcp__${s}__${t}`)), `mcp__${s}__${t}`)
    }
  )

  it("splits at the first '__' after the prefix; the tool keeps the rest", () => {
    deepStrictEqual(
      ToolName.parse("mcp__srv___x__y"),
      Option.some({ server: ServerName.make("srv"), tool: "_x__y" })
    )
    deepStrictEqual(
      ToolName.parse("mcp__a-b_c__mcp__d"),
      Option.some({ server: ServerName.make("a-b_c"), tool: "mcp__d" })
    )
    assert.isTrue(Option.isNone(ToolName.parse("mcp____tool")))
    assert.isTrue(Option.isNone(ToolName.parse("mcp__")))
    assert.isTrue(Option.isNone(ToolName.parse("")))
  })
})
