import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import { assert, describe, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import type * as GenerationConfig from "../src/agent/llm/GenerationConfig.js"
import * as Wire from "../src/agent/llm/internal/openAiWire.js"
import * as JsonSchemaTool from "../src/agent/llm/JsonSchemaTool.js"

/** The chat-completions `messages` of a prompt (`UnsupportedPart` for a part that cannot be sent). */
const messagesOf = (prompt: Prompt.Prompt): Array<Wire.WireMessage> | Wire.UnsupportedPart => {
  const out: Array<Wire.WireMessage> = []
  for (const message of prompt.content) {
    const wire = Wire.messageWire(message)
    if (wire instanceof Wire.UnsupportedPart) return wire
    out.push(...wire)
  }
  return out
}

/** The request body built plainly, each piece encoded afresh: what `requestJson`'s text must parse to. */
const requestBody = (
  model: string,
  options: LanguageModel.ProviderOptions,
  config: GenerationConfig.Config
): Record<string, unknown> => {
  const body: Record<string, unknown> = {
    model,
    messages: messagesOf(options.prompt),
    stream: true,
    stream_options: { include_usage: true }
  }
  if (config.maxTokens !== undefined) body.max_tokens = config.maxTokens
  if (config.temperature !== undefined) body.temperature = config.temperature
  if (options.tools.length > 0) {
    const choice = Wire.toolChoice(options.toolChoice)
    if (choice !== undefined) body.tool_choice = choice
    body.tools = Wire.tools(options.tools)
  }
  return body
}

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
    assert.deepStrictEqual(messagesOf(prompt), [
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

  describe("requestJson", () => {
    const text = FastCheck.string({ maxLength: 12 })
    const message: FastCheck.Arbitrary<Prompt.Message> = FastCheck.oneof(
      text.map((t) => Prompt.makeMessage("system", { content: t })),
      text.map((t) => Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: t })] })),
      FastCheck.tuple(text, FastCheck.array(FastCheck.tuple(text, FastCheck.dictionary(text, text)), { maxLength: 3 }))
        .map(([t, calls]) =>
          Prompt.makeMessage("assistant", {
            content: [
              Prompt.makePart("text", { text: t }),
              ...calls.map(([id, params]) =>
                Prompt.makePart("tool-call", { id, name: "look", params, providerExecuted: false })
              )
            ]
          })
        ),
      FastCheck.array(FastCheck.tuple(text, FastCheck.oneof(text, FastCheck.dictionary(text, text))), { maxLength: 3 })
        .map((results) =>
          Prompt.makeMessage("tool", {
            content: results.map(([id, result]) =>
              Prompt.makePart("tool-result", { id, name: "look", result, isFailure: false, providerExecuted: false })
            )
          })
        )
    )
    const toolList = [
      JsonSchemaTool.fromJsonSchema("look", "Looks at it", { type: "object", properties: { at: { type: "string" } } }),
      JsonSchemaTool.fromJsonSchema("say", undefined, { type: "object" })
    ]
    const optionsOf = (
      messages: ReadonlyArray<Prompt.Message>,
      tools: ReadonlyArray<JsonSchemaTool.JsonSchemaTool>,
      toolChoice: LanguageModel.ProviderOptions["toolChoice"]
    ) =>
      ({
        prompt: Prompt.fromMessages(messages),
        tools,
        toolChoice,
        responseFormat: { type: "text" }
      }) as unknown as LanguageModel.ProviderOptions
    const expected = (options: LanguageModel.ProviderOptions, config: GenerationConfig.Config) =>
      JSON.parse(JSON.stringify(requestBody("m", options, config)))

    it.prop(
      "parses to the body built plainly, also when its messages and tools were encoded before (an appended history)",
      [
        FastCheck.array(message, { maxLength: 6 }),
        FastCheck.array(message, { maxLength: 3 }),
        FastCheck.boolean(),
        FastCheck.constantFrom<LanguageModel.ProviderOptions["toolChoice"]>("auto", "required", { tool: "look" }),
        FastCheck.record(
          { maxTokens: FastCheck.nat(), temperature: FastCheck.double({ noNaN: true, min: 0, max: 2 }) },
          {
            requiredKeys: []
          }
        )
      ],
      ([history, appended, withTools, toolChoice, config]) => {
        const tools = withTools ? toolList : []
        const first = optionsOf(history, tools, toolChoice)
        assert.deepStrictEqual(
          JSON.parse(Wire.requestJson("m", first, undefined, config) as string),
          expected(first, config)
        )
        // The same message values and tool list again, with more messages: what was kept is reused.
        const next = optionsOf([...history, ...appended], tools, toolChoice)
        assert.deepStrictEqual(
          JSON.parse(Wire.requestJson("m", next, undefined, config) as string),
          expected(next, config)
        )
      }
    )
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
