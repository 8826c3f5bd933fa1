import * as Prompt from "@effect/ai/Prompt"
import { assert, describe, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import * as Wire from "../src/agent/llm/internal/openAiWire.js"

describe("openAiWire", () => {
  describe("retryAfterMillis", () => {
    const now = Date.UTC(2026, 11, 1, 12, 0, 0)

    it.prop("Retry-After in seconds", [FastCheck.integer({ min: 0, max: 100_000 })], ([seconds]) => {
      assert.strictEqual(Wire.retryAfterMillis({ "retry-after": String(seconds) }, now), seconds * 1000)
    })

    it.prop("Retry-After as an HTTP date, relative to now", [FastCheck.integer({ min: 0, max: 100_000 })], ([s]) => {
      const header = new Date(now + s * 1000).toUTCString()
      assert.strictEqual(Wire.retryAfterMillis({ "retry-after": header }, now), s * 1000)
    })

    it.prop("retry-after-ms wins over Retry-After", [FastCheck.integer({ min: 0, max: 100_000 })], ([ms]) => {
      assert.strictEqual(Wire.retryAfterMillis({ "retry-after-ms": String(ms), "retry-after": "99" }, now), ms)
    })

    it("a date in the past is 0; garbage or nothing is undefined", () => {
      assert.strictEqual(Wire.retryAfterMillis({ "retry-after": new Date(now - 5000).toUTCString() }, now), 0)
      assert.strictEqual(Wire.retryAfterMillis({ "retry-after": "soon" }, now), undefined)
      assert.strictEqual(Wire.retryAfterMillis({}, now), undefined)
      assert.strictEqual(Wire.retryAfterMillis({ "retry-after": "1.5" }, now), 1500)
    })
  })

  it.prop(
    "a chunk's created time becomes the metadata's timestamp when valid, and nothing (no throw) when not",
    [FastCheck.oneof(FastCheck.double(), FastCheck.integer({ min: 0, max: 4_000_000_000 }))],
    ([created]) => {
      const out: Parameters<Wire.StreamAccumulator["feed"]>[1] = []
      const acc = new Wire.StreamAccumulator()
      acc.feed(JSON.stringify({ id: "c1", created, choices: [{ index: 0, delta: { content: "x" } }] }), out)
      const meta = out.find((p) => (p as { type: string }).type === "response-metadata") as
        | { timestamp?: string }
        | undefined
      assert.isDefined(meta)
      const valid = Number.isFinite(created) && Math.abs(created * 1000) <= 8.64e15
      if (valid) assert.strictEqual(meta!.timestamp, new Date(created * 1000).toISOString())
      else assert.isUndefined(meta!.timestamp)
    }
  )

  it("bodyMessage finds the provider's own message in the shapes servers use", () => {
    assert.strictEqual(
      Wire.bodyMessage(
        JSON.stringify({ error: { message: "Invalid API key", type: "auth", code: "invalid_api_key" } })
      ),
      "Invalid API key (invalid_api_key)"
    )
    assert.strictEqual(Wire.bodyMessage(JSON.stringify({ error: "model 'x' not found" })), "model 'x' not found")
    assert.strictEqual(Wire.bodyMessage(JSON.stringify({ detail: "Not Found" })), "Not Found")
    assert.strictEqual(
      Wire.bodyMessage(JSON.stringify({ message: "overloaded", type: "server" })),
      "overloaded (server)"
    )
    assert.strictEqual(Wire.bodyMessage("Bad Gateway\n"), "Bad Gateway")
    assert.strictEqual(Wire.bodyMessage(""), undefined)
    assert.strictEqual(Wire.bodyMessage("x".repeat(5000))!.length, 1001)
  })

  it("messages maps every role and part to the chat-completions shape", () => {
    const prompt = Prompt.make([
      { role: "system", content: "be brief" },
      {
        role: "user",
        content: [
          { type: "text", text: "what is this?" },
          { type: "file", mediaType: "image/png", data: new Uint8Array([1, 2, 3]) },
          { type: "file", mediaType: "image/jpeg", data: new URL("https://example.com/a.jpg") },
          { type: "file", mediaType: "image/gif", data: "R0lG" }
        ]
      },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "hmm" },
          { type: "text", text: "Let me look." },
          { type: "tool-call", id: "c1", name: "look", params: { at: "it" }, providerExecuted: false }
        ]
      },
      {
        role: "tool",
        content: [
          { type: "tool-result", id: "c1", name: "look", result: "a cat", isFailure: false, providerExecuted: false },
          { type: "tool-result", id: "c2", name: "look", result: { n: 1 }, isFailure: true, providerExecuted: false }
        ]
      },
      { role: "assistant", content: "A cat." }
    ])
    assert.deepStrictEqual(Wire.messages(prompt), [
      { role: "system", content: "be brief" },
      {
        role: "user",
        content: [
          { type: "text", text: "what is this?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AQID" } },
          { type: "image_url", image_url: { url: "https://example.com/a.jpg" } },
          { type: "image_url", image_url: { url: "data:image/gif;base64,R0lG" } }
        ]
      },
      {
        role: "assistant",
        content: "Let me look.",
        tool_calls: [{ id: "c1", type: "function", function: { name: "look", arguments: "{\"at\":\"it\"}" } }]
      },
      { role: "tool", tool_call_id: "c1", content: "a cat" },
      { role: "tool", tool_call_id: "c2", content: "{\"n\":1}" },
      { role: "assistant", content: "A cat." }
    ])
  })

  it("toolChoice: auto is left out, the rest maps to OpenAI's forms", () => {
    assert.strictEqual(Wire.toolChoice("auto"), undefined)
    assert.strictEqual(Wire.toolChoice("none"), "none")
    assert.strictEqual(Wire.toolChoice("required"), "required")
    assert.deepStrictEqual(Wire.toolChoice({ tool: "t" }), { type: "function", function: { name: "t" } })
    assert.strictEqual(Wire.toolChoice({ oneOf: ["t"] }), undefined)
    assert.strictEqual(Wire.toolChoice({ mode: "required", oneOf: ["t"] }), "required")
  })
})
