/**
 * The Anthropic provider (packages/server/src/agent/llm/Anthropic.ts) over loopback: against
 * aimock (a model server we did not write, speaking the Messages wire format) for the tool loop,
 * parallel calls and usage; against our stand-in (test/fixtures/anthropic-standin.ts) for what
 * aimock can't do on demand: 429 with Retry-After, 5xx, a reset, a mid-stream error, a hang.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import type * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as Anthropic from "@skald/server/agent/llm/Anthropic"
import * as JsonSchemaTool from "@skald/server/agent/llm/JsonSchemaTool"
import * as StreamParts from "@skald/server/agent/llm/StreamParts"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Standin from "./fixtures/anthropic-standin.js"
import { aimock } from "./support/aimock.js"

const weatherSchema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: { city: { type: "string", description: "City name" }, units: { $ref: "#/$defs/units" } },
  required: ["city"],
  additionalProperties: false,
  $defs: { units: { type: "string", enum: ["metric", "imperial"] } }
}
const weather = JsonSchemaTool.fromJsonSchema("mcp__weather__forecast", "The forecast for a city", weatherSchema)
const toolkit = Toolkit.make(weather)
/** The tools' handlers: never run (the tests resolve tool calls themselves). */
const handlers = toolkit.toLayer({
  mcp__weather__forecast: () => Effect.die("the test runs the tools itself")
}) as Layer.Layer<Tool.Handler<string>>

const model = (options: Anthropic.Options) => Anthropic.layer(options).pipe(Layer.provide(NodeHttpClient.layerUndici))

const withModel = <A, E, R extends LanguageModel.LanguageModel | Tool.Handler<string>>(
  options: Anthropic.Options,
  effect: Effect.Effect<A, E, R>
) => Effect.provide(effect, Layer.merge(model(options), handlers))

/** A quick retry policy: the tests never wait for a real backoff. */
const quick = { retryBaseDelay: Duration.millis(1), retryMaxDelay: Duration.seconds(5) }

describe("Anthropic against aimock", () => {
  it.scopedLive("runs a two-round tool loop with parallel calls and reports usage", () =>
    Effect.gen(function*() {
      const mock = yield* aimock
      // The first fixture that matches answers: the round-2 one (the last message is Rome's result) first.
      mock.onToolResult("toolu_rome", {
        content: "Paris is sunny, Rome is rainy.",
        usage: { input_tokens: 80, output_tokens: 9 }
      })
      mock.onMessage("weather in Paris and Rome", {
        toolCalls: [
          { id: "toolu_paris", name: "mcp__weather__forecast", arguments: JSON.stringify({ city: "Paris" }) },
          { id: "toolu_rome", name: "mcp__weather__forecast", arguments: JSON.stringify({ city: "Rome" }) }
        ],
        usage: { input_tokens: 42, output_tokens: 7 }
      })
      const options = { baseUrl: mock.url, model: "claude-test", apiKey: Redacted.make("sk-ant-test-key") }
      yield* withModel(
        options,
        Effect.gen(function*() {
          const first = Prompt.make("What is the weather in Paris and Rome?")
          // Round 1, streamed: two tool calls in one answer.
          const parts = Chunk.toReadonlyArray(
            yield* Stream.runCollect(LanguageModel.streamText({
              prompt: first,
              toolkit,
              disableToolCallResolution: true
            }))
          )
          const calls = parts.filter((p) => p.type === "tool-call")
          assert.deepStrictEqual(calls.map((c) => [c.id, c.name, c.params]), [
            ["toolu_paris", "mcp__weather__forecast", { city: "Paris" }],
            ["toolu_rome", "mcp__weather__forecast", { city: "Rome" }]
          ])
          const finish = parts.find((p) => p.type === "finish")
          assert.strictEqual(finish?.reason, "tool-calls")
          assert.strictEqual(finish?.usage.inputTokens, 42)
          assert.strictEqual(finish?.usage.outputTokens, 7)
          // The test runs the tools and appends their results.
          const second = Prompt.merge(first, Prompt.fromResponseParts(parts)).pipe(
            Prompt.merge(Prompt.fromMessages([
              Prompt.makeMessage("tool", {
                content: calls.map((c) =>
                  Prompt.makePart("tool-result", {
                    id: c.id,
                    name: c.name,
                    isFailure: false,
                    result: `${(c.params as { city: string }).city}: ${c.id === "toolu_paris" ? "sunny" : "rainy"}`,
                    providerExecuted: false
                  })
                )
              })
            ]))
          )
          // Round 2, not streamed: the text answer.
          const answer = yield* LanguageModel.generateText({ prompt: second, toolkit, disableToolCallResolution: true })
          assert.strictEqual(answer.text, "Paris is sunny, Rome is rainy.")
          assert.strictEqual(answer.toolCalls.length, 0)
          assert.strictEqual(answer.usage.inputTokens, 80)
          assert.strictEqual(answer.usage.outputTokens, 9)
        })
      )
      const requests = mock.getRequests()
      assert.strictEqual(requests.length, 2)
      for (const r of requests) {
        assert.match(r.path, /^\/v1\/messages(\?|$)/)
        assert.isDefined(r.headers["x-api-key"]) // aimock's journal shows it "[REDACTED]"
        assert.strictEqual(r.headers["anthropic-version"], "2023-06-01")
      }
    }))
})

describe("Anthropic's wire format", () => {
  it.scopedLive("sends an MCP tool's JSON Schema as input_schema, unchanged", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([Standin.text("ok")])
      yield* withModel(
        { baseUrl: `${standin.url}/v1`, model: "claude-test", apiKey: Redacted.make("sk-ant-wire") },
        LanguageModel.generateText({ prompt: "hi", toolkit, disableToolCallResolution: true })
      )
      const body = standin.requests[0]!.body
      assert.match(standin.requests[0]!.path, /^\/v1\/messages(\?|$)/)
      assert.strictEqual(body.model, "claude-test")
      assert.deepStrictEqual(body.tools, [{
        name: "mcp__weather__forecast",
        description: "The forecast for a city",
        input_schema: weatherSchema
      }])
      assert.strictEqual(standin.requests[0]!.headers["x-api-key"], "sk-ant-wire")
      assert.strictEqual(body.max_tokens, 4096)
    }))

  it.scopedLive("retries a 429 after its Retry-After (seconds and HTTP date), then succeeds", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([
        Standin.status(429, { "retry-after": "0" }),
        Standin.status(529, { "retry-after": new Date(Date.now() - 1000).toUTCString() }),
        Standin.text("third time lucky")
      ])
      // A backoff of an hour: only Retry-After can make the retries happen in time.
      const answer = yield* withModel(
        { baseUrl: standin.url, model: "m", retryBaseDelay: Duration.hours(1), retryMaxDelay: Duration.hours(2) },
        LanguageModel.generateText({ prompt: "hi" })
      )
      assert.strictEqual(answer.text, "third time lucky")
      assert.strictEqual(standin.requests.length, 3)
    }))

  it.scopedLive("gives up after 3 tries with a typed error carrying Anthropic's message", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([
        Standin.status(500),
        Standin.status(503),
        Standin.status(429),
        Standin.text("x")
      ])
      const error = yield* withModel(
        { baseUrl: standin.url, model: "m", apiKey: Redacted.make("sk-ant-secret-123"), ...quick },
        LanguageModel.generateText({ prompt: "hi" })
      ).pipe(Effect.flip)
      assert.strictEqual(standin.requests.length, 3)
      assert.strictEqual(error._tag, "HttpResponseError")
      assert.include(
        error.message,
        "rate_limit_error: Number of request tokens has exceeded your per-minute rate limit"
      )
      assert.notInclude(JSON.stringify(error), "sk-ant-secret-123")
      assert.notInclude(error.message, "sk-ant-secret-123")
    }))

  it.scopedLive("the number of tries is configurable; a 400 is not retried", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([
        Standin.status(503),
        Standin.status(400, {}, { type: "invalid_request_error", message: "max_tokens: must be at least 1" }),
        Standin.text("never")
      ])
      const error = yield* withModel(
        { baseUrl: standin.url, model: "m", maxRetries: 5, ...quick },
        LanguageModel.generateText({ prompt: "hi" })
      ).pipe(Effect.flip)
      assert.strictEqual(standin.requests.length, 2)
      assert.include(error.message, "invalid_request_error: max_tokens: must be at least 1")
      const once = yield* Standin.start([Standin.status(503), Standin.text("never")])
      yield* withModel(
        { baseUrl: once.url, model: "m", maxRetries: 1, ...quick },
        LanguageModel.generateText({ prompt: "hi" })
      )
        .pipe(Effect.flip)
      assert.strictEqual(once.requests.length, 1)
    }))

  it.scoped("without Retry-After the backoff doubles from the base, capped (TestClock)", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([Standin.status(503), Standin.status(502), Standin.text("done")])
      const fiber = yield* withModel(
        { baseUrl: standin.url, model: "m", retryBaseDelay: Duration.millis(500), retryMaxDelay: Duration.millis(700) },
        LanguageModel.generateText({ prompt: "hi" })
      ).pipe(Effect.fork)
      /** Waits (in real time, bounded) for the stand-in to have seen `n` requests. */
      const seen = (n: number) =>
        Effect.promise(async () => {
          for (let i = 0; i < 500 && standin.requests.length < n; i++) await new Promise((r) => setTimeout(r, 10))
          return standin.requests.length
        })
      /** Lets real time pass (a request that should not come has its chance to arrive). */
      const settle = Effect.promise(() => new Promise((r) => setTimeout(r, 150)))
      assert.strictEqual(yield* seen(1), 1)
      yield* settle
      yield* TestClock.adjust(Duration.millis(499))
      yield* settle
      assert.strictEqual(standin.requests.length, 1)
      yield* TestClock.adjust(Duration.millis(1))
      assert.strictEqual(yield* seen(2), 2)
      yield* settle
      // The second delay would be 1 s; the cap makes it 700 ms.
      yield* TestClock.adjust(Duration.millis(699))
      yield* settle
      assert.strictEqual(standin.requests.length, 2)
      yield* TestClock.adjust(Duration.millis(1))
      const answer = yield* Fiber.join(fiber)
      assert.strictEqual(answer.text, "done")
      assert.strictEqual(standin.requests.length, 3)
    }))

  it.scopedLive("a Retry-After beyond the longest delay fails at once, saying how long", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([Standin.status(429, { "retry-after": "3600" }), Standin.text("never")])
      const error = yield* withModel(
        { baseUrl: standin.url, model: "m", ...quick },
        LanguageModel.generateText({ prompt: "hi" })
      ).pipe(Effect.flip)
      assert.strictEqual(standin.requests.length, 1)
      assert.include(error.message, "retry after 1h")
    }))

  it.scopedLive("retries a connection reset, streamed", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([Standin.reset, Standin.text("after the reset")])
      const parts = yield* withModel(
        { baseUrl: standin.url, model: "m", ...quick },
        Stream.runCollect(LanguageModel.streamText({ prompt: "hi" }))
      )
      const text = Chunk.toReadonlyArray(parts).flatMap((p) => p.type === "text-delta" ? [p.delta] : []).join("")
      assert.strictEqual(text, "after the reset")
      assert.strictEqual(standin.requests.length, 2)
    }))

  it.scopedLive("a mid-stream error event fails the stream with Anthropic's message", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([
        Standin.midStreamError({ type: "overloaded_error", message: "Overloaded" })
      ])
      const error = yield* withModel(
        { baseUrl: standin.url, model: "m", ...quick },
        Stream.runCollect(LanguageModel.streamText({ prompt: "hi" }))
      ).pipe(Effect.flip)
      assert.strictEqual(error._tag, "UnknownError")
      assert.include(error.message, "overloaded_error: Overloaded")
      // Not retried: part of the answer had been streamed.
      assert.strictEqual(standin.requests.length, 1)
    }))

  it.scopedLive("interrupting a streaming call aborts the HTTP request", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([Standin.hang])
      const fiber = yield* withModel(
        { baseUrl: standin.url, model: "m" },
        Stream.runCollect(LanguageModel.streamText({ prompt: "hi" }))
      ).pipe(Effect.fork)
      while (standin.requests.length === 0) yield* Effect.sleep(Duration.millis(10))
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      yield* Effect.promise(() => standin.whenAborted)
      assert.strictEqual(standin.aborted(), 1)
    }))

  it.scopedLive("interrupting a non-streaming call aborts the HTTP request", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([Standin.hang])
      const fiber = yield* withModel({ baseUrl: standin.url, model: "m" }, LanguageModel.generateText({ prompt: "hi" }))
        .pipe(Effect.fork)
      while (standin.requests.length === 0) yield* Effect.sleep(Duration.millis(10))
      assert.isTrue(Exit.isInterrupted(yield* Fiber.interrupt(fiber)))
      yield* Effect.promise(() => standin.whenAborted)
      assert.strictEqual(standin.aborted(), 1)
    }))

  it.scopedLive("resets on every try: a typed request error, without the key", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([Standin.reset, Standin.reset])
      const error = yield* withModel(
        { baseUrl: standin.url, model: "m", apiKey: Redacted.make("sk-ant-reset-key"), maxRetries: 2, ...quick },
        LanguageModel.generateText({ prompt: "hi" })
      ).pipe(Effect.flip)
      assert.strictEqual(standin.requests.length, 2)
      assert.strictEqual(error._tag, "HttpRequestError")
      assert.notInclude(JSON.stringify(error), "sk-ant-reset-key")
      assert.notInclude(error.message, "sk-ant-reset-key")
    }))
})

describe("Anthropic's raw parts (StreamParts, what the turn loop reads)", () => {
  const raw = (prompt: Prompt.Prompt) =>
    Effect.flatMap(
      LanguageModel.LanguageModel,
      (lm) =>
        Stream.runCollect(StreamParts.of(lm)({ prompt, tools: [weather] })).pipe(Effect.map(Chunk.toReadonlyArray))
    )

  it.scopedLive("the same calls, usage and request as through LanguageModel, folded without its schema", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start(
        Array.from({ length: 4 }, () =>
          Standin.message({
            text: "Checking.",
            toolUses: [{ id: "toolu_1", name: "mcp__weather__forecast", input: { city: "Paris" } }]
          }, { input: 33, output: 6 }))
      )
      const first = Prompt.make([
        { role: "system", content: "Be brief." },
        { role: "user", content: "Weather in Paris?" }
      ])
      yield* withModel(
        { baseUrl: standin.url, model: "claude-test", ...quick },
        Effect.gen(function*() {
          assert.isTrue(StreamParts.isRaw(yield* LanguageModel.LanguageModel))
          const parts = yield* raw(first)
          const decoded = Chunk.toReadonlyArray(
            yield* Stream.runCollect(
              LanguageModel.streamText({ prompt: first, toolkit, disableToolCallResolution: true })
            )
          )
          const callsOf = (ps: ReadonlyArray<StreamParts.Part>) =>
            ps.flatMap((p) => p.type === "tool-call" ? [[p.id, p.name, p.params]] : [])
          const textOf = (ps: ReadonlyArray<StreamParts.Part>) =>
            ps.flatMap((p) => p.type === "text-delta" ? [p.delta] : []).join("")
          assert.deepStrictEqual(callsOf(parts), [["toolu_1", "mcp__weather__forecast", { city: "Paris" }]])
          assert.deepStrictEqual(callsOf(parts), callsOf(decoded))
          assert.strictEqual(textOf(parts), "Checking.")
          assert.strictEqual(textOf(parts), textOf(decoded))
          const finish = parts.find((p) => p.type === "finish")
          assert.strictEqual(finish?.type === "finish" ? finish.reason : undefined, "tool-calls")
          assert.strictEqual(finish?.type === "finish" ? finish.usage.inputTokens : undefined, 33)
          assert.strictEqual(finish?.type === "finish" ? finish.usage.outputTokens : undefined, 6)
          // Round 2 (the call and its result in the prompt), both ways: the same request body.
          const second = Prompt.merge(
            first,
            Prompt.fromMessages([
              Prompt.makeMessage("assistant", {
                content: [
                  Prompt.makePart("text", { text: "Checking. " }),
                  Prompt.makePart("tool-call", {
                    id: "toolu_1",
                    name: "mcp__weather__forecast",
                    params: { city: "Paris" },
                    providerExecuted: false
                  })
                ]
              }),
              Prompt.makeMessage("tool", {
                content: [Prompt.makePart("tool-result", {
                  id: "toolu_1",
                  name: "mcp__weather__forecast",
                  isFailure: true,
                  result: "no forecast today",
                  providerExecuted: false
                })]
              })
            ])
          )
          yield* raw(second)
          yield* Stream.runDrain(LanguageModel.streamText({ prompt: second, toolkit, disableToolCallResolution: true }))
        })
      )
      const bodies = standin.requests.map((r) => r.body as Record<string, unknown>)
      const sent = (b: Record<string, unknown>) => ({
        model: b.model,
        max_tokens: b.max_tokens,
        system: b.system,
        messages: b.messages,
        tools: b.tools,
        stream: b.stream
      })
      assert.deepStrictEqual(sent(bodies[0]!), sent(bodies[1]!))
      assert.deepStrictEqual(sent(bodies[2]!), sent(bodies[3]!))
      assert.deepStrictEqual((bodies[2]!.messages as Array<any>)[2].content[0], {
        type: "tool_result",
        tool_use_id: "toolu_1",
        content: JSON.stringify("no forecast today"),
        is_error: true
      })
    }))

  it.scopedLive("a mid-stream error event fails the raw stream with Anthropic's message; not retried", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([
        Standin.midStreamError({ type: "overloaded_error", message: "Overloaded" })
      ])
      const error = yield* withModel({ baseUrl: standin.url, model: "m", ...quick }, raw(Prompt.make("hi"))).pipe(
        Effect.flip
      )
      assert.strictEqual(error._tag, "UnknownError")
      assert.include(error.message, "overloaded_error: Overloaded")
      assert.strictEqual(standin.requests.length, 1)
    }))

  it.scopedLive("a tool input that is not JSON, or a tool not offered, is MalformedOutput (the loop asks again)", () =>
    Effect.gen(function*() {
      const call = Standin.message({ toolUses: [{ id: "toolu_x", name: "mcp__weather__forecast", input: {} }] })
      const broken: Standin.Answer = call.kind === "message"
        ? {
          ...call,
          events: call.events.map((e) => {
            const data = e.data as { type?: string; delta?: { type?: string } }
            return data.delta?.type === "input_json_delta"
              ? { ...e, data: { ...data, delta: { type: "input_json_delta", partial_json: "{\"city\": " } } }
              : e
          })
        }
        : call
      const standin = yield* Standin.start([
        broken,
        Standin.message({ toolUses: [{ id: "toolu_y", name: "mcp__shell__rm", input: {} }] })
      ])
      const options = { baseUrl: standin.url, model: "m", ...quick }
      const notJson = yield* withModel(options, raw(Prompt.make("hi"))).pipe(Effect.flip)
      assert.strictEqual(notJson._tag, "MalformedOutput")
      assert.include(notJson.message, "mcp__weather__forecast with arguments that are not JSON")
      const notOffered = yield* withModel(options, raw(Prompt.make("hi"))).pipe(Effect.flip)
      assert.strictEqual(notOffered._tag, "MalformedOutput")
      assert.include(notOffered.message, "mcp__shell__rm, a tool it was not given")
    }))

  it.scopedLive("a 429 is retried on the raw path too (the same client)", () =>
    Effect.gen(function*() {
      const standin = yield* Standin.start([
        Standin.status(429, { "retry-after": "0" }),
        Standin.text("after the wait")
      ])
      const parts = yield* withModel({ baseUrl: standin.url, model: "m", ...quick }, raw(Prompt.make("hi")))
      assert.strictEqual(parts.flatMap((p) => p.type === "text-delta" ? [p.delta] : []).join(""), "after the wait")
      assert.strictEqual(standin.requests.length, 2)
    }))
})
