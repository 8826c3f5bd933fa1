/**
 * The OpenAI-compatible chat-completions provider against real peers over loopback:
 * `@copilotkit/aimock` (a model server we did not write: a two-round tool loop, parallel calls,
 * usage) and our stand-in (test/fixtures/model-standin.ts) for what aimock lacks — each server
 * quirk, an abort, 429 with Retry-After, 5xx, a mid-stream error, a connection reset.
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import * as Response from "@effect/ai/Response"
import * as Toolkit from "@effect/ai/Toolkit"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as JsonSchemaTool from "@skald/server/agent/llm/JsonSchemaTool"
import * as OpenAiCompatible from "@skald/server/agent/llm/OpenAiCompatible"
import * as StreamParts from "@skald/server/agent/llm/StreamParts"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import * as Tracer from "effect/Tracer"
import { performance } from "node:perf_hooks"
import { inspect } from "node:util"
import * as ModelStandin from "./fixtures/model-standin.js"
import { aimock } from "./support/aimock.js"

// -----------------------------------------------------------------------------
// Helpers
// -----------------------------------------------------------------------------

const mcpSchema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: { city: { $ref: "#/$defs/city" }, unit: { type: "string", enum: ["C", "F"] } },
  $defs: { city: { type: "string", minLength: 1, description: "a city name" } },
  required: ["city"],
  additionalProperties: false
}

const weather = JsonSchemaTool.fromJsonSchema("get_weather", "The weather in a city", mcpSchema)
const time = JsonSchemaTool.fromJsonSchema("get_time", "The time in a city", { type: "object" })
const tools = Toolkit.make(weather, time)
const handlers = tools.toLayer({
  get_weather: () => Effect.succeed("sunny"),
  get_time: () => Effect.succeed("noon")
})

const model = (baseUrl: string, options?: Partial<OpenAiCompatible.Options>) =>
  // the client's dispatcher lives in the test's scope (Effect.provide would close it after make)
  Effect.flatMap(Layer.build(NodeHttpClient.dispatcherLayer), (context) =>
    OpenAiCompatible.make({
      baseUrl,
      model: "test-model",
      retryBaseDelay: "1 millis",
      retryMaxDelay: "5 seconds",
      ...options
    }).pipe(Effect.provide(context)))

type Part = Response.StreamPart<any>

/** Streams a prompt (with the toolkit, tool calls left unresolved) and collects every part. */
const streamAll = (lm: LanguageModel.Service, prompt: Prompt.RawInput) =>
  lm.streamText({ prompt, toolkit: tools, disableToolCallResolution: true }).pipe(
    Stream.runCollect,
    Effect.map(Chunk.toArray),
    Effect.provide(handlers)
  ) as Effect.Effect<Array<Part>, AiError.AiError>

const textOf = (parts: ReadonlyArray<Part>) =>
  parts.flatMap((part) => part.type === "text-delta" ? [part.delta] : []).join("")
const callsOf = (parts: ReadonlyArray<Part>) =>
  parts.flatMap((part) => part.type === "tool-call" ? [{ id: part.id, name: part.name, params: part.params }] : [])
const finishOf = (parts: ReadonlyArray<Part>) => {
  const finish = parts.find((part) => part.type === "finish")
  assert.isDefined(finish)
  return finish as Response.FinishPart
}

const failureOf = <A>(exit: Exit.Exit<A, AiError.AiError>): AiError.AiError => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
  assert.isDefined(failure, Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "")
  return failure!
}

// -----------------------------------------------------------------------------
// Against aimock
// -----------------------------------------------------------------------------

describe("OpenAiCompatible against aimock", () => {
  it.scopedLive("a two-round tool loop with parallel calls, and usage", () =>
    Effect.gen(function*() {
      const mock = yield* aimock
      mock.on({ userMessage: "Oslo", hasToolResult: false }, {
        toolCalls: [
          { id: "call_w", name: "get_weather", arguments: JSON.stringify({ city: "Oslo", unit: "C" }) },
          { id: "call_t", name: "get_time", arguments: JSON.stringify({ city: "Oslo" }) }
        ],
        usage: { prompt_tokens: 42, completion_tokens: 9 }
      })
      mock.on({ userMessage: "Oslo", hasToolResult: true }, {
        content: "It is sunny in Oslo at noon.",
        usage: { prompt_tokens: 60, completion_tokens: 8 }
      })
      const lm = yield* model(`${mock.url}/v1`)
      const prompt: Prompt.RawInput = [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Weather and time in Oslo?" }
      ]

      // Round 1: the model calls both tools at once.
      const round1 = yield* streamAll(lm, prompt)
      const calls = callsOf(round1)
      assert.deepStrictEqual(calls, [
        { id: "call_w", name: "get_weather", params: { city: "Oslo", unit: "C" } },
        { id: "call_t", name: "get_time", params: { city: "Oslo" } }
      ])
      const finish1 = finishOf(round1)
      assert.strictEqual(finish1.reason, "tool-calls")
      assert.strictEqual(finish1.usage.inputTokens, 42)
      assert.strictEqual(finish1.usage.outputTokens, 9)

      // The test runs the tools and appends the results; round 2 answers in text.
      const round2Prompt = Prompt.merge(
        Prompt.make(prompt),
        Prompt.make([
          { role: "assistant", content: calls.map((call) => ({ type: "tool-call" as const, ...call })) },
          {
            role: "tool",
            content: [
              {
                type: "tool-result",
                id: "call_w",
                name: "get_weather",
                result: { sky: "sunny" },
                isFailure: false,
                providerExecuted: false
              },
              {
                type: "tool-result",
                id: "call_t",
                name: "get_time",
                result: "noon",
                isFailure: false,
                providerExecuted: false
              }
            ]
          }
        ])
      )
      const round2 = yield* streamAll(lm, round2Prompt)
      assert.strictEqual(textOf(round2), "It is sunny in Oslo at noon.")
      assert.deepStrictEqual(callsOf(round2), [])
      const finish2 = finishOf(round2)
      assert.strictEqual(finish2.reason, "stop")
      assert.strictEqual(finish2.usage.inputTokens, 60)
      assert.strictEqual(finish2.usage.outputTokens, 8)
      assert.strictEqual(finish2.usage.totalTokens, 68)

      // What reached aimock: the tool calls and results of round 1 in round 2's messages.
      const journal = mock.getRequests().filter((entry: any) => entry.path?.endsWith("/chat/completions"))
      assert.strictEqual(journal.length, 2)
      const body = journal[1]!.body as any
      assert.deepStrictEqual(body.messages.slice(2), [
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_w",
              type: "function",
              function: { name: "get_weather", arguments: JSON.stringify({ city: "Oslo", unit: "C" }) }
            },
            {
              id: "call_t",
              type: "function",
              function: { name: "get_time", arguments: JSON.stringify({ city: "Oslo" }) }
            }
          ]
        },
        { role: "tool", tool_call_id: "call_w", content: JSON.stringify({ sky: "sunny" }) },
        { role: "tool", tool_call_id: "call_t", content: "noon" }
      ])
    }))

  it.scopedLive("generateText collects the stream: text and usage", () =>
    Effect.gen(function*() {
      const mock = yield* aimock
      mock.onMessage("hello", { content: "Hi there!", usage: { prompt_tokens: 5, completion_tokens: 3 } })
      const lm = yield* model(`${mock.url}/v1`)
      const response = yield* lm.generateText({ prompt: "hello" })
      assert.strictEqual(response.text, "Hi there!")
      assert.strictEqual(response.finishReason, "stop")
      assert.strictEqual(response.usage.inputTokens, 5)
      assert.strictEqual(response.usage.outputTokens, 3)
    }))
})

// -----------------------------------------------------------------------------
// Against the stand-in
// -----------------------------------------------------------------------------

describe("OpenAiCompatible against the stand-in", () => {
  it.scopedLive("sends a streaming request with the MCP schema untouched and never strict", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.text(["Hel", "lo", "!"])])
      const lm = yield* model(standin.url, { apiKey: Redacted.make("sk-test-key"), headers: { "X-Title": "skald" } })
      const parts = yield* streamAll(lm, [
        { role: "system", content: "sys" },
        { role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] }
      ])
      assert.strictEqual(textOf(parts), "Hello!")
      const types = parts.map((part) => part.type)
      assert.deepStrictEqual(types, [
        "response-metadata",
        "text-start",
        "text-delta",
        "text-delta",
        "text-delta",
        "text-end",
        "finish"
      ])
      assert.deepStrictEqual(finishOf(parts).usage.inputTokens, 11)

      const request = standin.requests[0]!
      assert.strictEqual(request.path, "/v1/chat/completions")
      assert.strictEqual(request.headers.authorization, "Bearer sk-test-key")
      assert.strictEqual(request.headers["x-title"], "skald")
      assert.strictEqual(request.body.model, "test-model")
      assert.strictEqual(request.body.stream, true)
      assert.deepStrictEqual(request.body.stream_options, { include_usage: true })
      assert.deepStrictEqual(request.body.messages, [
        { role: "system", content: "sys" },
        { role: "user", content: "a\nb" }
      ])
      assert.notInclude(request.text, "strict")
      assert.deepStrictEqual(request.body.tools.map((tool: any) => tool.function.name), ["get_weather", "get_time"])
      // The MCP server's schema reaches the wire byte for byte ($schema, $defs, additionalProperties).
      const sent = request.text.slice(request.text.indexOf(`"parameters":`) + `"parameters":`.length)
      assert.isTrue(sent.startsWith(JSON.stringify(mcpSchema)), sent)
      assert.deepStrictEqual(request.body.tools[0], {
        type: "function",
        function: { name: "get_weather", description: "The weather in a city", parameters: mcpSchema }
      })
      assert.notProperty(request.body, "tool_choice")
    }))

  const twoCalls: ReadonlyArray<ModelStandin.ToolCall> = [
    { id: "call_a", name: "get_weather", arguments: { city: "Oslo" } },
    { id: "call_b", name: "get_time", arguments: { city: "Bergen" } }
  ]
  const quirks: ReadonlyArray<[string, ModelStandin.Quirks]> = [
    ["no quirk", {}],
    ["tool-call index always 0", { toolIndexZero: true }],
    ["tool-call index missing", { noToolIndex: true }],
    ["first delta without id", { firstDeltaWithoutId: true }],
    ["whole arguments in one delta", { wholeArguments: true }],
    ["choices: null on the usage chunk", { usageChoicesNull: true }],
    ["index 0, first delta without id, whole arguments", {
      toolIndexZero: true,
      firstDeltaWithoutId: true,
      wholeArguments: true
    }]
  ]
  for (const [name, quirk] of quirks) {
    it.scopedLive(`tolerates ${name}`, () =>
      Effect.gen(function*() {
        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls(twoCalls, {
            quirks: quirk,
            text: "Looking.",
            usage: { prompt_tokens: 30, completion_tokens: 4 }
          })
        ])
        const lm = yield* model(standin.url)
        const parts = yield* streamAll(lm, "weather?")
        assert.strictEqual(textOf(parts), "Looking.")
        const calls = callsOf(parts)
        assert.deepStrictEqual(calls.map(({ name, params }) => ({ name, params })), [
          { name: "get_weather", params: { city: "Oslo" } },
          { name: "get_time", params: { city: "Bergen" } }
        ])
        if (quirk.wholeArguments === true && quirk.firstDeltaWithoutId === true) {
          // no id ever came: synthesized, and distinct
          assert.strictEqual(new Set(calls.map((call) => call.id)).size, 2)
          assert.notInclude(calls.map((call) => call.id), "call_a")
        } else {
          assert.deepStrictEqual(calls.map((call) => call.id), ["call_a", "call_b"])
        }
        const finish = finishOf(parts)
        assert.strictEqual(finish.reason, "tool-calls")
        assert.strictEqual(finish.usage.inputTokens, 30)
        assert.strictEqual(finish.usage.outputTokens, 4)
      }))
  }

  it.scopedLive("synthesizes distinct ids when a server sends none, even with index always 0", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([
        ModelStandin.toolCalls(twoCalls, { quirks: { noToolCallId: true, toolIndexZero: true } })
      ])
      const lm = yield* model(standin.url)
      const calls = callsOf(yield* streamAll(lm, "weather?"))
      assert.deepStrictEqual(calls.map(({ name, params }) => ({ name, params })), [
        { name: "get_weather", params: { city: "Oslo" } },
        { name: "get_time", params: { city: "Bergen" } }
      ])
      assert.strictEqual(new Set(calls.map((call) => call.id)).size, 2)
      for (const call of calls) assert.isTrue(call.id.length > 0)
    }))

  it.scopedLive("completed streams leave their connection open for the next requests (keep-alive)", () =>
    Effect.gen(function*() {
      const turns = 16
      const standin = yield* ModelStandin.start((request) => // the end of each response comes a little after [DONE], as it may over a real network
      ({
        ...(request.index % 2 === 0 ? ModelStandin.text(`turn ${request.index}`) : ModelStandin.toolCalls(twoCalls)),
        endDelay: 20
      }))
      const lm = yield* model(standin.url)
      for (let i = 0; i < turns; i++) {
        const parts = yield* streamAll(lm, `${i}`)
        if (i % 2 === 0) assert.strictEqual(textOf(parts), `turn ${i}`)
        else assert.strictEqual(callsOf(parts).length, 2)
      }
      assert.strictEqual(standin.requests.length, turns)
      assert.deepStrictEqual(standin.aborted, [])
      // The next request may start while the previous bodies still drain (the parts end at [DONE]; a
      // body ends 20 ms later), so undici opens a connection per request until the first drain ends
      // (a few on a loaded machine) and reuses them from then on: far fewer than one per request.
      assert.isAtMost(standin.connections(), turns / 2, inspect(standin.requests.map((request) => request.connection)))
    }))

  it.scopedLive("the parts end at [DONE], before the body does; the body drains in the background and the connection is kept", () =>
    Effect.gen(function*() {
      // the response's end comes 0.8 s after [DONE] (within the drain's 1 s): the parts must not wait for it
      const standin = yield* ModelStandin.start((request) =>
        request.index === 0 ? { ...ModelStandin.toolCalls(twoCalls), endDelay: 800 } : ModelStandin.text("next")
      )
      const lm = yield* model(standin.url)
      const parts = yield* streamAll(lm, "first")
      assert.strictEqual(callsOf(parts).length, 2)
      assert.strictEqual(parts.at(-1)?.type, "finish")
      assert.isUndefined(standin.requests[0]!.timing.lastByteAt, "the parts waited for the end of the body")
      // the drained connection is not thrown away
      assert.strictEqual(textOf(yield* streamAll(lm, "second")), "next")
      assert.deepStrictEqual(standin.aborted, [])
    }))

  it.scopedLive("a server that hangs after [DONE] still finishes the turn", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([{ events: ModelStandin.textEvents(["done"]), done: true, hang: true }])
      const response = yield* (yield* model(standin.url)).generateText({ prompt: "hi" })
      assert.strictEqual(response.text, "done")
      assert.strictEqual(response.finishReason, "stop")
      yield* standin.awaitAborted(0).pipe(Effect.timeout("10 seconds"))
    }))

  it.scopedLive("interrupting the consumer aborts the HTTP request", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.hanging(["Hel"])])
      const lm = yield* model(standin.url)
      const firstDelta = yield* Deferred.make<string>()
      const consumer = yield* lm.streamText({ prompt: "hi" }).pipe(
        Stream.runForEach((part) =>
          part.type === "text-delta" ? Deferred.succeed(firstDelta, part.delta) : Effect.void
        ),
        Effect.fork
      )
      assert.strictEqual(yield* Deferred.await(firstDelta), "Hel")
      assert.isFalse(standin.requests[0]!.aborted)
      yield* Fiber.interrupt(consumer)
      yield* standin.awaitAborted(0).pipe(Effect.timeout("10 seconds"))
      assert.isTrue(standin.requests[0]!.aborted)
      assert.deepStrictEqual(standin.aborted, [0])
    }))

  it.scopedLive("a consumer that stops early (take) aborts the request too", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.hanging(["a", "b"])])
      const lm = yield* model(standin.url)
      const parts = yield* lm.streamText({ prompt: "hi" }).pipe(
        Stream.filter((part) => part.type === "text-delta"),
        Stream.take(1),
        Stream.runCollect
      )
      assert.strictEqual(Chunk.size(parts), 1)
      yield* standin.awaitAborted(0).pipe(Effect.timeout("10 seconds"))
    }))

  it.scopedLive("a 5xx is retried, then succeeds; a 400 is not retried", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([
        ModelStandin.error(503, "The engine is currently overloaded"),
        ModelStandin.text("ok")
      ])
      const lm = yield* model(standin.url)
      assert.strictEqual(textOf(yield* streamAll(lm, "hi")), "ok")
      assert.strictEqual(standin.requests.length, 2)

      const bad = yield* ModelStandin.start([
        ModelStandin.error(400, "model 'nope' does not exist", { code: "model_not_found" })
      ])
      const error = failureOf(yield* Effect.exit(streamAll(yield* model(bad.url), "hi")))
      assert.strictEqual(bad.requests.length, 1)
      assert.instanceOf(error, AiError.HttpResponseError)
      assert.strictEqual((error as AiError.HttpResponseError).response.status, 400)
      assert.include(error.message, "model 'nope' does not exist (model_not_found)")
    }))

  it.scopedLive("429s exhaust the tries: a typed error with the provider's message", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([
        ModelStandin.rateLimited("0", "Rate limit reached for test-model"),
        ModelStandin.rateLimited("0", "Rate limit reached for test-model"),
        ModelStandin.rateLimited("0", "Rate limit reached for test-model"),
        ModelStandin.text("never")
      ])
      const lm = yield* model(standin.url)
      const error = failureOf(yield* Effect.exit(streamAll(lm, "hi")))
      assert.strictEqual(standin.requests.length, 3)
      assert.instanceOf(error, AiError.HttpResponseError)
      const response = error as AiError.HttpResponseError
      assert.strictEqual(response.response.status, 429)
      assert.include(response.description, "The model server answered 429: Rate limit reached for test-model")
      assert.include(response.description, "gave up after 3 tries")
    }))

  it.scopedLive("maxRetries sets the tries in all", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([
        ModelStandin.error(500, "boom"),
        ModelStandin.error(500, "boom"),
        ModelStandin.text("ok")
      ])
      const error = failureOf(yield* Effect.exit(streamAll(yield* model(standin.url, { maxRetries: 2 }), "hi")))
      assert.strictEqual(standin.requests.length, 2)
      assert.include(error.message, "boom")
    }))

  it.scopedLive("a Retry-After longer than the longest delay is not waited for", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.rateLimited("3600"), ModelStandin.text("ok")])
      const error = failureOf(yield* Effect.exit(streamAll(yield* model(standin.url), "hi")))
      assert.strictEqual(standin.requests.length, 1)
      assert.include(error.message, "retry after 3600 s")
    }))

  it.scopedLive("a connection reset before the response is retried; repeated resets give a typed error", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.reset, ModelStandin.text("ok")])
      assert.strictEqual(textOf(yield* streamAll(yield* model(standin.url), "hi")), "ok")
      assert.strictEqual(standin.requests.length, 2)

      const resets = yield* ModelStandin.start([ModelStandin.reset, ModelStandin.reset, ModelStandin.reset])
      const error = failureOf(yield* Effect.exit(streamAll(yield* model(resets.url), "hi")))
      assert.strictEqual(resets.requests.length, 3)
      assert.instanceOf(error, AiError.HttpRequestError)
      assert.strictEqual((error as AiError.HttpRequestError).reason, "Transport")
      assert.include(error.message, "Could not reach the model server")
    }))

  it.scopedLive("a reset after the headers but before the first byte of the body is retried", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.resetAfterHeaders, ModelStandin.text("ok")])
      assert.strictEqual(textOf(yield* streamAll(yield* model(standin.url), "hi")), "ok")
      assert.strictEqual(standin.requests.length, 2)

      const resets = yield* ModelStandin.start([
        ModelStandin.resetAfterHeaders,
        ModelStandin.resetAfterHeaders,
        ModelStandin.resetAfterHeaders
      ])
      const error = failureOf(yield* Effect.exit(streamAll(yield* model(resets.url), "hi")))
      assert.strictEqual(resets.requests.length, 3)
      assert.instanceOf(error, AiError.HttpResponseError)
      assert.include(error.message, "gave up after 3 tries")
    }))

  it.scopedLive("a stream cut mid-way is a typed error, not retried (bytes were streamed)", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([
        { events: ModelStandin.textEvents(["a", "b"]).slice(0, 2), reset: "after-events" },
        ModelStandin.text("never")
      ])
      const error = failureOf(yield* Effect.exit(streamAll(yield* model(standin.url), "hi")))
      assert.strictEqual(standin.requests.length, 1)
      assert.instanceOf(error, AiError.HttpResponseError)
      assert.include(error.message, "broke mid-stream")
    }))

  it.scopedLive("a mid-stream error event is a typed error with the provider's message", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([
        ModelStandin.midStreamError("The server had an error while processing")
      ])
      const lm = yield* model(standin.url)
      const seen: Array<string> = []
      const exit = yield* lm.streamText({ prompt: "hi" }).pipe(
        Stream.runForEach((part) => Effect.sync(() => seen.push(part.type))),
        Effect.exit
      )
      const error = failureOf(exit)
      assert.instanceOf(error, AiError.UnknownError)
      assert.include(error.message, "The server had an error while processing (internal_error)")
      assert.notInclude(seen, "finish")
      assert.strictEqual(standin.requests.length, 1)
    }))

  it.scopedLive("events split across network reads (mid-line, mid-character) are parsed whole", () =>
    Effect.gen(function*() {
      const pieces = ["héllo ", "wörld ", "✓ 🎉"]
      const standin = yield* ModelStandin.start([
        { events: ModelStandin.textEvents(pieces), pieceBytes: 7 },
        { events: ModelStandin.toolCallEvents(twoCalls, { quirks: { toolIndexZero: true } }), pieceBytes: 5 }
      ])
      const lm = yield* model(standin.url)
      assert.strictEqual(textOf(yield* streamAll(lm, "hi")), pieces.join(""))
      assert.deepStrictEqual(callsOf(yield* streamAll(lm, "hi")).map((call) => call.params), [
        { city: "Oslo" },
        { city: "Bergen" }
      ])
    }))

  it.scopedLive("generateObject asks for a json_schema response format, without strict", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.text(["{\"city\":", "\"Oslo\",\"days\":3}"])])
      const Trip = Schema.Struct({ city: Schema.String, days: Schema.Number })
      const response = yield* (yield* model(standin.url)).generateObject({
        prompt: "plan",
        schema: Trip,
        objectName: "trip"
      })
      assert.deepStrictEqual(response.value, { city: "Oslo", days: 3 })
      const body = standin.requests[0]!.body
      assert.strictEqual(body.response_format.type, "json_schema")
      assert.strictEqual(body.response_format.json_schema.name, "trip")
      assert.deepStrictEqual(body.response_format.json_schema.schema.required, ["city", "days"])
      assert.notInclude(standin.requests[0]!.text, "strict")
    }))

  it.scopedLive("a tool-calling turn finished with \"stop\" (Ollama) is still a tool-calls finish", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.toolCalls(twoCalls, { finishReason: "stop" })])
      const parts = yield* streamAll(yield* model(standin.url), "weather?")
      assert.strictEqual(callsOf(parts).length, 2)
      assert.strictEqual(finishOf(parts).reason, "tool-calls")
    }))

  it.scopedLive("reasoning deltas (reasoning_content, reasoning) stream as reasoning parts before the text", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([{
        events: [
          ModelStandin.deltaChunk({ role: "assistant", reasoning_content: "Let me" }),
          ModelStandin.deltaChunk({ reasoning: " think." }),
          ModelStandin.deltaChunk({ content: "42" }),
          ModelStandin.deltaChunk({}, undefined, "stop"),
          ModelStandin.usageChunk()
        ]
      }])
      const parts = yield* streamAll(yield* model(standin.url), "why?")
      assert.deepStrictEqual(
        parts.flatMap((part) =>
          part.type === "reasoning-delta" || part.type === "text-delta" ? [`${part.type}:${part.delta}`] : []
        ),
        ["reasoning-delta:Let me", "reasoning-delta: think.", "text-delta:42"]
      )
      const types = parts.map((part) => part.type)
      assert.isBelow(types.indexOf("reasoning-end"), types.indexOf("text-start"))
    }))

  it.scopedLive("a server that ignores stream: true and answers one JSON object is understood", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([{
        body: {
          id: "chatcmpl-1",
          object: "chat.completion",
          created: 1_767_225_600,
          model: "m",
          choices: [{
            index: 0,
            message: {
              role: "assistant",
              content: "Calling.",
              tool_calls: [
                { id: "c1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Oslo\"}" } },
                { id: "c2", type: "function", function: { name: "get_time", arguments: "{}" } }
              ]
            },
            finish_reason: "tool_calls"
          }],
          usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }
        }
      }, { body: { error: { message: "context length exceeded", code: "context_length_exceeded" } } }])
      const lm = yield* model(standin.url)
      const parts = yield* streamAll(lm, "hi")
      assert.strictEqual(textOf(parts), "Calling.")
      assert.deepStrictEqual(callsOf(parts), [
        { id: "c1", name: "get_weather", params: { city: "Oslo" } },
        { id: "c2", name: "get_time", params: {} }
      ])
      assert.strictEqual(finishOf(parts).usage.totalTokens, 5)
      // and an error object with status 200
      const error = failureOf(yield* Effect.exit(streamAll(lm, "hi")))
      assert.instanceOf(error, AiError.UnknownError)
      assert.include(error.message, "context length exceeded (context_length_exceeded)")
    }))

  it.scopedLive("an event that is not JSON is MalformedOutput", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([{ events: ["{not json"] }])
      const error = failureOf(yield* Effect.exit(streamAll(yield* model(standin.url), "hi")))
      assert.instanceOf(error, AiError.MalformedOutput)
      assert.include(error.message, "{not json")
    }))

  it.scopedLive("a non-image file in the prompt is MalformedInput, and nothing is sent", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.text("never")])
      const exit = yield* Effect.exit(streamAll(yield* model(standin.url), [{
        role: "user",
        content: [{ type: "file", mediaType: "application/pdf", fileName: "a.pdf", data: new Uint8Array([1]) }]
      }]))
      const error = failureOf(exit)
      assert.instanceOf(error, AiError.MalformedInput)
      assert.include(error.message, "application/pdf")
      assert.strictEqual(standin.requests.length, 0)
    }))

  it.scopedLive("the API key never appears in an error, a log or a span", () =>
    Effect.gen(function*() {
      const secret = "sk-standin-SECRET-7f3a"
      const headerSecret = "hdr-SECRET-91b2"
      const spans: Array<Tracer.Span> = []
      const native = yield* Effect.tracer
      const tracer = Tracer.make({
        span: (...args) => {
          const span = native.span(...args)
          spans.push(span)
          return span
        },
        context: native.context
      })
      const logs: Array<string> = []
      const logger = Logger.make(({ message, annotations }) => logs.push(inspect({ message, annotations })))
      const standin = yield* ModelStandin.start([
        ModelStandin.error(500, "boom"),
        ModelStandin.error(500, "boom"),
        ModelStandin.error(500, "boom"),
        ModelStandin.reset,
        ModelStandin.reset,
        ModelStandin.reset
      ])
      const lm = yield* model(standin.url, {
        apiKey: Redacted.make(secret),
        headers: { "x-api-token": headerSecret }
      })
      const errors: Array<AiError.AiError> = []
      for (let i = 0; i < 2; i++) {
        const exit = yield* streamAll(lm, "hi").pipe(
          Effect.tapErrorCause(Effect.logError),
          Effect.withSpan("test.call"),
          Effect.withTracer(tracer),
          Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
          Logger.withMinimumLogLevel(LogLevel.All),
          Effect.exit
        )
        errors.push(failureOf(exit))
      }
      assert.strictEqual(standin.requests[0]!.headers.authorization, `Bearer ${secret}`)
      assert.strictEqual(standin.requests[0]!.headers["x-api-token"], headerSecret)
      const attributes = spans.map((span) =>
        `${span.name} ${inspect(span.attributes)} ${inspect((span as any).events)}`
      )
      assert.isTrue(attributes.some((line) => line.includes("authorization")), "the HTTP spans record headers")
      assert.isTrue(logs.some((line) => line.includes("may be retried")), "the retries are logged (at debug)")
      assert.isTrue(logs.length >= 2)
      const everything = [
        ...errors.flatMap((
          error
        ) => [String(error), error.message, inspect(error, { depth: 10 }), JSON.stringify(error)]),
        ...attributes,
        ...logs
      ].join("\n")
      assert.notInclude(everything, secret)
      assert.notInclude(everything, headerSecret)
    }))

  it.scopedLive("the stand-in spaces its events (eventDelay) and records when each was written", () =>
    Effect.gen(function*() {
      const events = ModelStandin.textEvents(["Hel", "lo"])
      const standin = yield* ModelStandin.start([{ events, eventDelay: 1 }, ModelStandin.text("again")])
      const lm = yield* model(standin.url)
      const seen: Array<number> = []
      const parts = yield* lm.streamText({ prompt: "hi" }).pipe(
        Stream.tap((part) => Effect.sync(() => part.type === "text-delta" && seen.push(performance.now()))),
        Stream.runCollect,
        Effect.map(Chunk.toArray)
      )
      assert.strictEqual(textOf(parts as ReadonlyArray<Part>), "Hello")
      const timing = standin.requests[0]!.timing
      // One time per event, in order, between the request's arrival and the last byte.
      assert.strictEqual(timing.eventsAt.length, events.length)
      const order = [timing.arrived, ...timing.eventsAt, timing.lastByteAt!]
      assert.deepStrictEqual(order, [...order].sort((a, b) => a - b))
      // Each text delta reached the consumer after the stand-in wrote it (events 1 and 2 are the contents).
      assert.isAtLeast(seen[0]!, timing.eventsAt[1]!)
      assert.isAtLeast(seen[1]!, timing.eventsAt[2]!)
      // Without eventDelay the events are written at once, and still recorded.
      const again = yield* Stream.runCollect(lm.streamText({ prompt: "hi" }))
      assert.strictEqual(textOf(Chunk.toArray(again) as ReadonlyArray<Part>), "again")
      assert.strictEqual(standin.requests[1]!.timing.eventsAt.length, ModelStandin.textEvents(["again"]).length)
      assert.isDefined(standin.requests[1]!.timing.lastByteAt)
    }))
})

// -----------------------------------------------------------------------------
// Retry-After, under the TestClock
// -----------------------------------------------------------------------------

/** Waits (in real time) until a fiber sleeps on the TestClock, and returns the wake-up times. */
const pendingSleeps = Effect.gen(function*() {
  for (;;) {
    const sleeps = yield* TestClock.sleeps()
    if (Chunk.size(sleeps) > 0) return Chunk.toArray(sleeps)
    yield* TestServices.provideLive(Effect.sleep("2 millis"))
  }
})

describe("OpenAiCompatible retries honour Retry-After", () => {
  const cases: ReadonlyArray<[string, (now: number) => string, number]> = [
    ["seconds", () => "2", 2000],
    ["an HTTP date", (now) => new Date(now + 3000).toUTCString(), 3000]
  ]
  for (const [name, header, expected] of cases) {
    it.scoped(`429 with Retry-After as ${name}: waits that long, then succeeds`, () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2026, 11, 1, 12, 0, 0))
        const now = yield* TestClock.currentTimeMillis
        const standin = yield* ModelStandin.start([ModelStandin.rateLimited(header(now)), ModelStandin.text("ok")])
        const lm = yield* model(standin.url, { retryBaseDelay: "10 millis", retryMaxDelay: "10 seconds" })
        const fiber = yield* Effect.fork(streamAll(lm, "hi"))
        yield* standin.awaitRequests(1)
        const sleeps = yield* pendingSleeps
        assert.deepStrictEqual(sleeps, [now + expected])
        yield* TestClock.adjust(expected - 1)
        assert.strictEqual(standin.requests.length, 1)
        yield* TestClock.adjust(1)
        const parts = yield* Fiber.join(fiber)
        assert.strictEqual(textOf(parts), "ok")
        assert.strictEqual(standin.requests.length, 2)
      }))
  }

  it.scoped("without Retry-After: exponential backoff from the base delay, capped", () =>
    Effect.gen(function*() {
      const now = yield* TestClock.currentTimeMillis
      const standin = yield* ModelStandin.start([
        ModelStandin.error(502, "bad gateway"),
        ModelStandin.error(502, "bad gateway"),
        ModelStandin.error(502, "bad gateway"),
        ModelStandin.text("ok")
      ])
      const lm = yield* model(standin.url, { maxRetries: 4, retryBaseDelay: "400 millis", retryMaxDelay: "1 second" })
      const fiber = yield* Effect.fork(streamAll(lm, "hi"))
      yield* standin.awaitRequests(1)
      assert.deepStrictEqual(yield* pendingSleeps, [now + 400])
      yield* TestClock.adjust(400)
      yield* standin.awaitRequests(2)
      assert.deepStrictEqual(yield* pendingSleeps, [now + 400 + 800])
      yield* TestClock.adjust(800)
      yield* standin.awaitRequests(3)
      assert.deepStrictEqual(yield* pendingSleeps, [now + 400 + 800 + 1000]) // 1600 capped at 1 s
      yield* TestClock.adjust(1000)
      assert.strictEqual(textOf(yield* Fiber.join(fiber)), "ok")
      assert.strictEqual(standin.requests.length, 4)
    }))
})

// -----------------------------------------------------------------------------
// The accumulator, as a property
// -----------------------------------------------------------------------------

describe("OpenAiCompatible stream folding", () => {
  const argsArb = FastCheck.dictionary(
    FastCheck.string({ minLength: 1, maxLength: 6 }),
    FastCheck.oneof(FastCheck.string(), FastCheck.integer(), FastCheck.boolean()),
    { maxKeys: 4 }
  )
  const callArb = FastCheck.record({
    name: FastCheck.constantFrom("get_weather", "get_time"),
    arguments: argsArb
  })
  const quirkArb = FastCheck.record({
    toolIndexZero: FastCheck.boolean(),
    noToolIndex: FastCheck.boolean(),
    firstDeltaWithoutId: FastCheck.boolean(),
    noToolCallId: FastCheck.boolean(),
    wholeArguments: FastCheck.boolean(),
    usageChoicesNull: FastCheck.boolean()
  })

  it.effect.prop(
    "any mix of quirks yields the calls the server meant, in order",
    [FastCheck.array(callArb, { minLength: 1, maxLength: 4 }), quirkArb],
    ([calls, quirk]) =>
      Effect.gen(function*() {
        const standin = yield* ModelStandin.start([ModelStandin.toolCalls(
          calls.map((call, i) => ({ ...call, id: `call_${i}` })),
          { quirks: quirk }
        )])
        const lm = yield* model(standin.url)
        const got = callsOf(yield* streamAll(lm, "go"))
        assert.deepStrictEqual(got.map(({ name, params }) => ({ name, arguments: params })), calls)
        if (quirk.noToolCallId || (quirk.firstDeltaWithoutId && quirk.wholeArguments)) {
          assert.strictEqual(new Set(got.map((call) => call.id)).size, calls.length)
        } else {assert.deepStrictEqual(
            got.map((call) => call.id),
            calls.map((_, i) => `call_${i}`)
          )}
      }).pipe(Effect.scoped, TestServices.provideLive),
    { fastCheck: { numRuns: 25 } }
  )
})

// -----------------------------------------------------------------------------
// The raw parts the turn loop reads (StreamParts.ts)
// -----------------------------------------------------------------------------

describe("OpenAiCompatible's raw parts (StreamParts)", () => {
  const raw = (lm: LanguageModel.Service, prompt: Prompt.RawInput) =>
    StreamParts.of(lm)({ prompt: Prompt.make(prompt), tools: [weather, time] }).pipe(
      Stream.runCollect,
      Effect.map(Chunk.toArray)
    )

  it.scopedLive("the provider's own parts, not decoded by @effect/ai: the same calls, usage and request", () =>
    Effect.gen(function*() {
      const reply = ModelStandin.toolCalls([{ id: "call_w", name: "get_weather", arguments: { city: "Oslo" } }], {
        text: "Let me look.",
        usage: { prompt_tokens: 21, completion_tokens: 4 }
      })
      const standin = yield* ModelStandin.start([reply, reply])
      const lm = yield* model(standin.url)
      assert.isTrue(StreamParts.isRaw(lm))
      const prompt: Prompt.RawInput = [{ role: "user", content: "Weather in Oslo?" }]
      const parts = yield* raw(lm, prompt)
      const decoded = yield* streamAll(lm, prompt)
      assert.strictEqual(textOf(parts as Array<Part>), "Let me look.")
      assert.deepStrictEqual(callsOf(parts as Array<Part>), callsOf(decoded))
      assert.deepStrictEqual(callsOf(parts as Array<Part>), [
        { id: "call_w", name: "get_weather", params: { city: "Oslo" } }
      ])
      const finish = parts.find((part) => part.type === "finish")
      assert.isDefined(finish)
      // Encoded: a plain usage object (streamText's decode makes a `Response.Usage`).
      assert.notInstanceOf((finish as Response.FinishPartEncoded).usage, Response.Usage)
      assert.instanceOf(finishOf(decoded).usage, Response.Usage)
      assert.strictEqual((finish as Response.FinishPartEncoded).reason, "tool-calls")
      assert.strictEqual((finish as Response.FinishPartEncoded).usage.inputTokens, 21)
      assert.strictEqual((finish as Response.FinishPartEncoded).usage.outputTokens, 4)
      // Both requests asked the same: the tools, streaming.
      assert.deepStrictEqual(standin.requests[0]!.body, standin.requests[1]!.body)
      assert.deepStrictEqual(standin.requests[0]!.body.tools.map((t: any) => t.function.name), [
        "get_weather",
        "get_time"
      ])
    }))

  it.scopedLive("a call of a tool that was not offered, or with arguments not an object, is MalformedOutput", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([
        ModelStandin.toolCalls([{ name: "rm_rf", arguments: {} }]),
        ModelStandin.toolCalls([{ name: "get_time", arguments: [1, 2] }])
      ])
      const lm = yield* model(standin.url)
      const prompt: Prompt.RawInput = [{ role: "user", content: "hi" }]
      const unknown = failureOf(yield* Effect.exit(raw(lm, prompt)))
      assert.instanceOf(unknown, AiError.MalformedOutput)
      assert.include(unknown.message, "rm_rf, a tool it was not given")
      const notObject = failureOf(yield* Effect.exit(raw(lm, prompt)))
      assert.instanceOf(notObject, AiError.MalformedOutput)
      assert.include(notObject.message, "not a JSON object")
    }))

  it.effect("a LanguageModel without raw parts is read through streamText (decoded)", () =>
    Effect.gen(function*() {
      const plain = yield* LanguageModel.make({
        streamText: () =>
          Stream.fromIterable<Response.StreamPartEncoded>([
            { type: "tool-call", id: "c1", name: "get_time", params: { city: "Rome" } },
            { type: "finish", reason: "tool-calls", usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 } }
          ]),
        generateText: () => Effect.succeed([])
      })
      assert.isFalse(StreamParts.isRaw(plain))
      const parts = yield* raw(plain, [{ role: "user", content: "time?" }])
      assert.deepStrictEqual(callsOf(parts as Array<Part>), [{ id: "c1", name: "get_time", params: { city: "Rome" } }])
      assert.instanceOf((parts.find((p) => p.type === "finish") as Response.FinishPart).usage, Response.Usage)
    }))
})
