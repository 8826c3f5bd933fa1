/**
 * The model follows its settings (packages/server/src/agent/llm/Model.ts): a change made while it
 * runs — the model's name, the base URL, the provider, the key (a `${NAME}` reference whose secret
 * appears later) — takes effect at the next request once the settings are read again (every
 * `settingsRecheck`; default 1 s), without rebuilding anything that uses it; unusable settings
 * fail that request with an error naming the setting, and the next one after the fix works. Real
 * stand-in servers over loopback HTTP (OpenAI's and Anthropic's wire formats), a real home
 * (SQLite, the secret store on disk). And through a running `skald serve`: `skald model set` in
 * another process changes the model of the host's next turn.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import { assert, describe, it } from "@effect/vitest"
import * as Model from "@skald/server/agent/llm/Model"
import { ModelSettings } from "@skald/server/agent/llm/ModelSettings"
import * as StreamParts from "@skald/server/agent/llm/StreamParts"
import { SecretStore } from "@skald/server/host/SecretStore"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { runSkald } from "./cli-support.js"
import * as AnthropicStandin from "./fixtures/anthropic-standin.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { makeHome, servicesLayer } from "./host-support.js"
import { addFixture, hostClient, serve } from "./serve-support.js"

/** A stand-in that answers every request with `text`. */
const answering = (text: string) => ModelStandin.start(() => ModelStandin.text(text))

/** The model's text for one request, through the parts the agent's loop reads. */
const ask = (prompt: string) =>
  Effect.flatMap(
    LanguageModel.LanguageModel,
    (lm) =>
      StreamParts.of(lm)({ prompt: Prompt.make(prompt), tools: [] }).pipe(
        Stream.runCollect,
        Effect.map((parts) => Array.from(parts).flatMap((p) => p.type === "text-delta" ? [p.delta] : []).join(""))
      )
  )

describe("the model follows its settings", () => {
  it.scopedLive(
    "name, base URL, provider and key changed while it runs take effect at the next request",
    () =>
      Effect.gen(function*() {
        const alpha = yield* answering("from alpha")
        const beta = yield* answering("from beta")
        const anthropic = yield* AnthropicStandin.start(
          Array.from({ length: 4 }, () => AnthropicStandin.text("from anthropic"))
        )
        const home = makeHome()
        yield* Effect.gen(function*() {
          const settings = yield* ModelSettings
          yield* settings.set({ provider: "openai", baseUrl: alpha.url, model: "m-one" })
          // Built once: everything below goes through this one model.
          const run = yield* Layer.build(Layer.fresh(Model.layer({ maxRetries: 0, settingsRecheck: 0 })))
          const model = (prompt: string) => ask(prompt).pipe(Effect.provide(run))

          assert.strictEqual(yield* model("one"), "from alpha")
          assert.strictEqual(alpha.requests.at(-1)!.body.model, "m-one")

          yield* settings.set({ model: "m-two" })
          assert.strictEqual(yield* model("two"), "from alpha")
          assert.strictEqual(alpha.requests.at(-1)!.body.model, "m-two")

          yield* settings.set({ baseUrl: beta.url })
          assert.strictEqual(yield* model("three"), "from beta")
          assert.deepStrictEqual([alpha.requests.length, beta.requests.length], [2, 1])
          assert.strictEqual(beta.requests[0]!.body.model, "m-two")

          // Another provider, its key a reference to a secret that does not exist yet: that request
          // fails naming it (nothing is sent), and works once the secret is there.
          yield* settings.set({
            provider: "anthropic",
            baseUrl: anthropic.url,
            model: "claude-three",
            apiKey: Redacted.make("${LATER_KEY}")
          })
          const failed = yield* Effect.either(model("four"))
          assert(Either.isLeft(failed))
          assert.include(failed.left.message, "LATER_KEY")
          assert.strictEqual(anthropic.requests.length, 0)
          yield* (yield* SecretStore).set("LATER_KEY", Redacted.make("sk-ant-later"))
          assert.strictEqual(yield* model("five"), "from anthropic")
          assert.strictEqual(anthropic.requests.length, 1)
          assert.strictEqual(anthropic.requests[0]!.body.model, "claude-three")
          assert.strictEqual(anthropic.requests[0]!.headers["x-api-key"], "sk-ant-later")
          assert.deepStrictEqual([alpha.requests.length, beta.requests.length], [2, 1])
        }).pipe(Effect.provide(Layer.provideMerge(ModelSettings.Default, servicesLayer(home))))
      }),
    60_000
  )

  it.scoped("by default the settings are read again once a second has passed (Clock)", () =>
    Effect.gen(function*() {
      const alpha = yield* answering("from alpha")
      const home = makeHome()
      yield* Effect.gen(function*() {
        const settings = yield* ModelSettings
        yield* settings.set({ provider: "openai", baseUrl: alpha.url, model: "m-one" })
        const run = yield* Layer.build(Layer.fresh(Model.layer({ maxRetries: 0 })))
        const model = (prompt: string) => ask(prompt).pipe(Effect.provide(run))
        yield* model("one")
        yield* settings.set({ model: "m-two" })
        yield* model("two")
        yield* TestClock.adjust("999 millis")
        yield* model("three")
        yield* TestClock.adjust("1 millis")
        yield* model("four")
        yield* model("five")
        assert.deepStrictEqual(alpha.requests.map((r) => r.body.model), ["m-one", "m-one", "m-one", "m-two", "m-two"])
      }).pipe(Effect.provide(Layer.provideMerge(ModelSettings.Default, servicesLayer(home))))
    }), 60_000)

  it.scopedLive(
    "skald model set, in another process, changes the running host's model for its next turn",
    () =>
      Effect.gen(function*() {
        const alpha = yield* answering("Answered.")
        const home = makeHome()
        const set = (...args: Array<string>) =>
          Effect.promise(() => runSkald(["model", "set", "--home", home, ...args])).pipe(
            Effect.tap((r) => assert.strictEqual(r.status, 0, r.stderr))
          )
        yield* set("--provider", "openai", "--base-url", alpha.url, "--model", "m-one")
        yield* addFixture(home, "echo", "echo")
        const host = yield* serve(home)
        yield* hostClient(home, host.url, "echo")
        const turn = Effect.promise(() =>
          runSkald(["agent", "run", "--home", home, "--approve", "deny", "--verbose", "hello"])
        ).pipe(
          Effect.tap((r) => {
            assert.strictEqual(r.status, 0, r.stderr)
            assert.strictEqual(r.stdout, "Answered.\n")
            assert.include(r.stderr, `skald: via the host at ${host.url}`)
          })
        )
        yield* turn
        yield* set("--model", "m-two")
        // The host reads the settings again for a request at least a second after it last did.
        yield* Effect.sleep("1100 millis")
        yield* turn
        assert.deepStrictEqual(alpha.requests.map((r) => r.body.model), ["m-one", "m-two"])
      }),
    180_000
  )
})
