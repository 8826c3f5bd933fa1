import { assert, describe, it } from "@effect/vitest"
import { McpPrompt, McpResource } from "@skald/domain"
import { Encoding, FastCheck as fc, Option } from "effect"

const json: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 2 })
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown)
const extra = fc.dictionary(fc.string(), json, { maxKeys: 3 })
const nonEmpty = fc.string({ minLength: 1 })

describe("McpResource.resourceFromWire", () => {
  it.prop("keeps the uri, names an unnamed resource by it, and drops fields of the wrong type", [
    extra,
    nonEmpty,
    fc.option(fc.string(), { nil: undefined }),
    json
  ], ([rest, uri, name, mimeType]) => {
    const wire = { ...rest, uri, ...(name === undefined ? {} : { name }), mimeType }
    const resource = Option.getOrThrow(McpResource.resourceFromWire(wire))
    assert.strictEqual(resource.uri, uri)
    assert.strictEqual(resource.name, name ?? uri)
    assert.strictEqual(resource.mimeType, typeof mimeType === "string" ? mimeType : undefined)
  })

  it.prop("is None without a usable uri", [extra, json], ([rest, uri]) => {
    fc.pre(typeof uri !== "string" || uri.length === 0)
    assert.isTrue(Option.isNone(McpResource.resourceFromWire({ ...rest, uri })))
  })
})

describe("McpResource.contentsFromWire", () => {
  it.prop("a blob's base64 decodes to its bytes; text stays text", [fc.uint8Array({ maxLength: 64 }), fc.string()], (
    [bytes, text]
  ) => {
    const blob = Option.getOrThrow(
      McpResource.contentsFromWire({
        uri: "x:/b",
        mimeType: "application/octet-stream",
        blob: Encoding.encodeBase64(bytes)
      })
    )
    assert.strictEqual(blob._tag, "Blob")
    if (blob._tag === "Blob") assert.deepStrictEqual(Array.from(blob.data), Array.from(bytes))
    const item = Option.getOrThrow(McpResource.contentsFromWire({ uri: "x:/t", text }))
    assert.deepStrictEqual(item._tag === "Text" ? item.text : undefined, text)
  })

  it("malformed base64, or neither text nor blob, is None", () => {
    assert.isTrue(Option.isNone(McpResource.contentsFromWire({ uri: "x:/b", blob: "not base64!" })))
    assert.isTrue(Option.isNone(McpResource.contentsFromWire({ uri: "x:/b" })))
  })
})

describe("McpPrompt", () => {
  it.prop("an argument is required only when it says required: true; unnamed ones are dropped", [
    fc.array(fc.record({ name: fc.string(), required: json }), { maxLength: 5 })
  ], ([args]) => {
    const prompt = Option.getOrThrow(McpPrompt.promptFromWire({ name: "p", arguments: args }))
    const named = args.filter((a) => a.name.length > 0)
    assert.deepStrictEqual(
      prompt.arguments.map((a) => [a.name, a.required]),
      named.map((a) => [a.name, a.required === true])
    )
  })

  it.prop("a completion keeps its string values only", [fc.array(json, { maxLength: 6 })], ([values]) => {
    const completion = Option.getOrThrow(McpPrompt.completionFromWire({ completion: { values, hasMore: true } }))
    assert.deepStrictEqual(completion.values, values.filter((v) => typeof v === "string"))
    assert.strictEqual(completion.hasMore, true)
  })
})
