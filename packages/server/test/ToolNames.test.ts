import { assert, describe, it } from "@effect/vitest"
import * as ToolNames from "@skald/server/agent/llm/ToolNames"
import * as FastCheck from "effect/FastCheck"

/** MCP names as servers make them: long servers, dots, slashes, unicode, empty tools. */
const serverName = FastCheck.stringMatching(/^[a-z0-9](?:[a-z0-9-]|_[a-z0-9-]){0,31}[a-z0-9]$/)
const toolName = FastCheck.oneof(
  FastCheck.string({ maxLength: 80 }),
  FastCheck.stringMatching(/^[a-z._/:-]{1,100}$/),
  FastCheck.fullUnicodeString({ maxLength: 20 })
)
const mcpName = FastCheck.tuple(serverName, toolName).map(([s, t]) => `mcp__${s}__${t}`)
const names = FastCheck.uniqueArray(FastCheck.oneof(mcpName, FastCheck.string({ maxLength: 70 })), { maxLength: 30 })

describe("ToolNames", () => {
  it.prop("distinct MCP names get distinct provider names within the limit, and back", [names], ([list]) => {
    const map = ToolNames.make(list)
    const sent = list.map(map.toProvider)
    assert.strictEqual(new Set(sent).size, list.length)
    for (const [i, name] of list.entries()) {
      assert.isTrue(ToolNames.fits(sent[i]!), sent[i])
      assert.strictEqual(map.fromProvider(sent[i]!), name)
    }
  })

  it.prop("a name that fits is sent as it is; the mapping ignores order", [names], ([list]) => {
    const map = ToolNames.make(list)
    const reversed = ToolNames.make([...list].reverse())
    for (const name of list) {
      if (ToolNames.fits(name)) assert.strictEqual(map.toProvider(name), name)
      assert.strictEqual(reversed.toProvider(name), map.toProvider(name))
    }
  })

  it("names that do not fit: dots and length", () => {
    const long = `mcp__${"s".repeat(64)}__get_forecast`
    const map = ToolNames.make(["mcp__files__read.file", long, "mcp__files__read_file"])
    assert.match(map.toProvider("mcp__files__read.file"), /^mcp__files__read_file_[0-9a-f]{8}$/)
    assert.strictEqual(map.toProvider("mcp__files__read_file"), "mcp__files__read_file")
    assert.strictEqual(map.toProvider(long).length, 64)
    assert.strictEqual(map.fromProvider(map.toProvider(long)), long)
    assert.isUndefined(map.fromProvider("mcp__other__x"))
  })

  it("a clash with a name that fits takes the next hash", () => {
    const dotted = "a.b"
    const clash = ToolNames.encode(dotted) // a real tool could be named like this
    const map = ToolNames.make([dotted, clash])
    assert.strictEqual(map.toProvider(clash), clash)
    assert.strictEqual(map.toProvider(dotted), ToolNames.encode(dotted, 1))
    assert.strictEqual(map.fromProvider(ToolNames.encode(dotted, 1)), dotted)
  })
})
