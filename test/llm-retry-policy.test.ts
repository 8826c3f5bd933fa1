/**
 * The providers' one retry policy (packages/server/src/agent/llm/internal/retryPolicy.ts), held by
 * both — the OpenAI-compatible provider and Anthropic's — against stand-ins speaking each wire
 * format over loopback: a 408 is retried; a server's delay is what is waited, even when shorter
 * than the backoff; with the default settings a delay of 15 s is waited (on the `TestClock`) and
 * one of 25 s is not (more than the longest, 20 s): the call fails at once, saying how long.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import { assert, describe, it } from "@effect/vitest"
import * as Model from "@skald/server/agent/llm/Model"
import type { Provider } from "@skald/server/agent/llm/ModelSettings"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import * as AnthropicStandin from "./fixtures/anthropic-standin.js"
import * as ModelStandin from "./fixtures/model-standin.js"

/** A stand-in of `provider` answering a failure (`status`, with `retryAfter` when given), then "ok". */
const failingOnce = (provider: Provider, status: number, retryAfter?: string) =>
  Effect.gen(function*() {
    const headers: Record<string, string> = retryAfter === undefined ? {} : { "retry-after": retryAfter }
    if (provider === "openai") {
      const standin = yield* ModelStandin.start([
        ModelStandin.error(status, "try again later", { headers }),
        ModelStandin.text("ok")
      ])
      return { url: standin.url, requests: () => standin.requests.length }
    }
    const standin = yield* AnthropicStandin.start([
      AnthropicStandin.status(status, headers),
      AnthropicStandin.text("ok")
    ])
    return { url: standin.url, requests: () => standin.requests.length }
  })

/** One `generateText` through `provider`'s layer (as the host makes it), with `tuning`. */
const ask = (provider: Provider, url: string, tuning: Model.Tuning) =>
  LanguageModel.generateText({ prompt: "hi" }).pipe(
    Effect.map((response) => response.text),
    Effect.provide(
      Model.providerLayer({ provider, baseUrl: url, model: "m", apiKey: undefined }, tuning).pipe(
        Layer.provide(Model.http)
      )
    )
  )

/** Waits (in real time) until a fiber sleeps on the TestClock, and returns the wake-up times. */
const pendingSleeps = Effect.gen(function*() {
  for (;;) {
    const sleeps = yield* TestClock.sleeps()
    if (Chunk.size(sleeps) > 0) return Chunk.toArray(sleeps)
    yield* TestServices.provideLive(Effect.sleep("2 millis"))
  }
})

for (const provider of ["openai", "anthropic"] as const) {
  describe(`the retry policy (${provider})`, () => {
    it.scopedLive("a 408 is tried again", () =>
      Effect.gen(function*() {
        const standin = yield* failingOnce(provider, 408)
        assert.strictEqual(yield* ask(provider, standin.url, { retryBaseDelay: "1 millis" }), "ok")
        assert.strictEqual(standin.requests(), 2)
      }))

    it.scopedLive("the server's delay is waited, even when shorter than the backoff", () =>
      Effect.gen(function*() {
        const standin = yield* failingOnce(provider, 429, "0")
        // A backoff of an hour: only the server's delay can make the retry happen in time.
        const tuning = { retryBaseDelay: Duration.hours(1), retryMaxDelay: Duration.hours(2) }
        assert.strictEqual(yield* ask(provider, standin.url, tuning), "ok")
        assert.strictEqual(standin.requests(), 2)
      }))

    it.scoped("by default a delay of 15 s is waited (TestClock), one of 25 s is not", () =>
      Effect.gen(function*() {
        const now = yield* TestClock.currentTimeMillis
        const waited = yield* failingOnce(provider, 429, "15")
        const fiber = yield* Effect.fork(ask(provider, waited.url, {}))
        assert.deepStrictEqual(yield* pendingSleeps, [now + 15_000])
        assert.strictEqual(waited.requests(), 1)
        yield* TestClock.adjust("15 seconds")
        assert.strictEqual(yield* Fiber.join(fiber), "ok")
        assert.strictEqual(waited.requests(), 2)

        const refused = yield* failingOnce(provider, 429, "25")
        const error = yield* Effect.flip(ask(provider, refused.url, {}))
        assert.strictEqual(refused.requests(), 1)
        assert.match(error.message, /retry after (25 s|25s)/)
      }))
  })
}
