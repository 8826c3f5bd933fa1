import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { McpCallResult } from "@skald/domain"
import { CallResult } from "@skald/mcp"
import { Encoding, Equal, FastCheck as fc, Schema } from "effect"

const json: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 3 })
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown)

const text = (t: string) => ({ type: "text", text: t })
const image = (bytes: Uint8Array, mimeType = "image/png") => ({
  type: "image",
  data: Buffer.from(bytes).toString("base64"),
  mimeType
})

const textBlock = fc.string({ unit: "binary" }).map(text)
const bytes = fc.uint8Array({ maxLength: 256 })
const mediaBlock = fc.oneof(
  fc.tuple(fc.constantFrom("image", "audio"), bytes).map(([type, b]) => ({
    type,
    data: Buffer.from(b).toString("base64"),
    mimeType: `${type}/x`
  })),
  fc.tuple(fc.webUrl(), bytes).map(([uri, b]) => ({
    type: "resource",
    resource: { uri, blob: Buffer.from(b).toString("base64"), mimeType: "application/pdf" }
  })),
  fc.webUrl().map((uri) => ({ type: "resource_link", uri, name: "n", mimeType: "text/plain" }))
)

describe("CallResult.extract", () => {
  it.prop("text items are joined with \\n; isError is kept", [fc.array(fc.string({ unit: "binary" })), fc.boolean()], (
    [texts, isError]
  ) => {
    const { result, warnings } = CallResult.extract({ content: texts.map(text), isError })
    deepStrictEqual(result, McpCallResult.McpText.make({ text: texts.join("\n"), isError }))
    deepStrictEqual(warnings, [])
  })

  it.prop("structuredContent is preferred over the text mirror", [fc.array(textBlock), json, fc.boolean()], (
    [content, structured, isError]
  ) => {
    const { result } = CallResult.extract({ content, structuredContent: structured, isError })
    deepStrictEqual(result, McpCallResult.McpJson.make({ value: structured, isError }))
  })

  it.prop(
    "Media exactly when a media block is present, carrying the text and the structured content",
    [fc.array(fc.oneof(textBlock, mediaBlock), { maxLength: 6 }), fc.option(json, { nil: undefined }), fc.boolean()],
    ([content, structured, isError]) => {
      const wire = structured === undefined ? { content, isError } : { content, structuredContent: structured, isError }
      const { result } = CallResult.extract(wire)
      const media = content.filter((b) => b.type !== "text")
      const joined = content.flatMap((b) => (b.type === "text" && "text" in b ? [b.text] : [])).join("\n")
      if (media.length === 0) {
        assert.notStrictEqual(result._tag, "Media")
        return
      }
      assert.strictEqual(result._tag, "Media")
      const m = result as McpCallResult.McpMediaResult
      assert.strictEqual(m.text, joined)
      assert.strictEqual(m.isError, isError)
      deepStrictEqual(m.structured, structured)
      assert.strictEqual("structured" in m, structured !== undefined)
      assert.strictEqual(m.items.length, media.length)
      for (const [i, block] of media.entries()) {
        const item = m.items[i]!
        if (block.type === "resource_link" && "uri" in block) {
          deepStrictEqual(
            item,
            McpCallResult.McpResourceLink.make({ uri: block.uri, name: "n", mimeType: "text/plain" })
          )
        } else {
          assert.instanceOf(item, McpCallResult.McpInlineMedia)
          assert.strictEqual((item as McpCallResult.McpInlineMedia).kind, block.type)
        }
      }
    }
  )

  it.prop("base64 is decoded exactly", [bytes, fc.constantFrom("image", "audio", "resource")], ([data, kind]) => {
    const b64 = Buffer.from(data).toString("base64")
    assert.strictEqual(b64, Encoding.encodeBase64(data))
    const block = kind === "resource"
      ? { type: "resource", resource: { uri: "file:///x", blob: b64, mimeType: "application/octet-stream" } }
      : { type: kind, data: b64, mimeType: `${kind}/x` }
    const { result, warnings } = CallResult.extract({ content: [block] })
    deepStrictEqual(warnings, [])
    assert.strictEqual(result._tag, "Media")
    const item = (result as McpCallResult.McpMediaResult).items[0]
    assert.instanceOf(item, McpCallResult.McpInlineMedia)
    const inline = item as McpCallResult.McpInlineMedia
    deepStrictEqual(Array.from(inline.data), Array.from(data))
    assert.strictEqual(inline.kind, kind)
    if (kind === "resource") assert.strictEqual(inline.uri, "file:///x")
  })

  it("invalid base64 is dropped with a warning; what remains decides the kind", () => {
    const { result, warnings } = CallResult.extract({
      content: [text("caption"), { type: "image", data: "not base64!!", mimeType: "image/png" }]
    })
    deepStrictEqual(result, McpCallResult.McpText.make({ text: "caption", isError: false }))
    assert.strictEqual(warnings.length, 1)
  })

  it("a default mimeType is supplied when the server omits it", () => {
    const { result } = CallResult.extract({ content: [{ type: "image", data: "AAEC" }] })
    const item = (result as McpCallResult.McpMediaResult).items[0] as McpCallResult.McpInlineMedia
    assert.strictEqual(item.mimeType, "application/octet-stream")
    deepStrictEqual(Array.from(item.data), [0, 1, 2])
  })

  it.prop("resource_link is passed through, not fetched", [fc.webUrl(), fc.option(fc.string(), { nil: undefined })], (
    [uri, name]
  ) => {
    const block = name === undefined ? { type: "resource_link", uri } : { type: "resource_link", uri, name }
    const { result } = CallResult.extract({ content: [text("see"), block] })
    deepStrictEqual(
      result,
      McpCallResult.McpMediaResult.make({
        text: "see",
        items: [McpCallResult.McpResourceLink.make(name === undefined ? { uri } : { uri, name })],
        isError: false
      })
    )
  })

  it("an embedded text resource counts as text", () => {
    const { result } = CallResult.extract({
      content: [text("a"), { type: "resource", resource: { uri: "file:///r", text: "b" } }]
    })
    deepStrictEqual(result, McpCallResult.McpText.make({ text: "a\nb", isError: false }))
  })

  it("isError is kept on every variant", () => {
    const png = image(new Uint8Array([1, 2, 3]))
    assert.isTrue(CallResult.extract({ content: [text("x")], isError: true }).result._tag === "Text")
    for (
      const wire of [
        { content: [text("x")], isError: true },
        { content: [], structuredContent: { a: 1 }, isError: true },
        { content: [png], isError: true }
      ]
    ) {
      const { result } = CallResult.extract(wire)
      assert.isTrue(result._tag !== "Task" && result.isError, JSON.stringify(wire))
    }
    assert.isFalse(
      (CallResult.extract({ content: [text("x")], isError: "yes" }).result as McpCallResult.McpText).isError
    )
  })

  it("garbage in: an empty text result", () => {
    for (const wire of [undefined, null, 1, "x", [], {}, { content: "x" }, { content: [null, 1, { type: "text" }] }]) {
      deepStrictEqual(CallResult.extract(wire).result, McpCallResult.McpText.make({ text: "", isError: false }))
    }
  })

  const task = fc.record({
    taskId: fc.string(),
    status: fc.constantFrom("working", "input_required", "completed", "failed", "cancelled"),
    statusMessage: fc.string(),
    pollInterval: fc.nat(),
    ttl: fc.option(fc.nat(), { nil: null })
  }, { requiredKeys: ["taskId", "status"] })

  it.prop(
    "a CreateTaskResult is recognised, nested or top-level, only when a task was requested",
    [task, fc.boolean()],
    (
      [t, nested]
    ) => {
      const wire = nested ? { task: t } : t
      const handle = McpCallResult.McpTaskHandle.make(t)
      deepStrictEqual(CallResult.extract(wire, { taskRequested: true }).result, handle)
      deepStrictEqual(CallResult.parseCreateTask(wire), handle)
      assert.strictEqual(CallResult.extract(wire).result._tag, "Text")
      assert.strictEqual(CallResult.extract(wire, { taskRequested: false }).result._tag, "Text")
    }
  )

  it("a task-requested call answered with a plain result is classified as usual", () => {
    const { result } = CallResult.extract({ content: [text("done")] }, { taskRequested: true })
    deepStrictEqual(result, McpCallResult.McpText.make({ text: "done", isError: false }))
    assert.isUndefined(CallResult.parseCreateTask({ task: { taskId: 1, status: "working" } }))
    assert.isUndefined(CallResult.parseCreateTask({ taskId: "t" }))
  })
})

describe("unsafeInstance", () => {
  it("builds the same Text and Json instances as their constructors", () => {
    const text = CallResult.extract({ content: [{ type: "text", text: "hi" }], isError: true }).result
    const viaNew = new McpCallResult.McpText({ text: "hi", isError: true })
    assert.isTrue(text instanceof McpCallResult.McpText)
    assert.isTrue(Equal.equals(text, viaNew))
    assert.deepEqual(Object.keys(text), Object.keys(viaNew))
    assert.strictEqual(JSON.stringify(text), JSON.stringify(viaNew))
    const json = CallResult.extract({ content: [], structuredContent: { a: 1 } }).result
    const jsonNew = new McpCallResult.McpJson({ value: { a: 1 }, isError: false })
    assert.isTrue(json instanceof McpCallResult.McpJson)
    assert.deepEqual(Object.keys(json), Object.keys(jsonNew))
    assert.strictEqual(JSON.stringify(json), JSON.stringify(jsonNew))
    assert.isTrue(Schema.is(McpCallResult.McpCallResult)(json))
  })
})
