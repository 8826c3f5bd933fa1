/**
 * ModelSettings (packages/server/src/agent/llm/ModelSettings.ts) over a real home: a SQLite file
 * and the secret store on disk; the environment through a ConfigProvider. And `skald model
 * set|show` through the real binary.
 */
import { assert, describe, it } from "@effect/vitest"
import { ModelSettings } from "@skald/server/agent/llm/ModelSettings"
import * as ModelSettingsModule from "@skald/server/agent/llm/ModelSettings"
import { SecretStore } from "@skald/server/host/SecretStore"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runSkald } from "./cli-support.js"
import { filesUnder, makeHome, servicesLayer } from "./host-support.js"

const settingsLayer = (home: string) => ModelSettings.Default.pipe(Layer.provideMerge(servicesLayer(home)))

/** Runs with the given environment (only SKALD_LLM_* matter here). */
const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

/** Every byte of the home's database files (the WAL included). */
const databaseBytes = (home: string) =>
  Buffer.concat(
    filesUnder(Path.join(home, "data")).filter((f) => /skald\.db/.test(f)).map((f) => Fs.readFileSync(f))
  )

describe("ModelSettings", () => {
  it.effect("defaults: openai on a local Ollama, no key; no model is a typed error naming the setting", () =>
    Effect.gen(function*() {
      const settings = yield* ModelSettings
      const shown = yield* settings.show
      assert.deepStrictEqual(shown, {
        provider: { value: "openai", source: "default" },
        baseUrl: { value: "http://127.0.0.1:11434/v1", source: "default" },
        model: { value: undefined, source: "unset" },
        apiKey: { value: undefined, source: "unset" }
      })
      const error = yield* Effect.flip(settings.resolve)
      assert.strictEqual(error._tag, "ModelNotConfigured")
      assert.include(error.message, "SKALD_LLM_MODEL")
    }).pipe(withEnv({}), Effect.provide(settingsLayer(makeHome()))))

  it.effect("the environment wins per field over the stored settings", () =>
    Effect.gen(function*() {
      const settings = yield* ModelSettings
      const result = yield* settings.set({
        provider: "anthropic",
        model: "claude-stored",
        baseUrl: "http://127.0.0.1:9/"
      })
      assert.deepStrictEqual(result, { movedKeyTo: undefined, overriddenByEnv: [] })
      const env = { SKALD_LLM_MODEL: "claude-from-env", SKALD_LLM_BASE_URL: "" }
      const shown = yield* withEnv(env)(settings.show)
      assert.deepStrictEqual(shown.provider, { value: "anthropic", source: "stored" })
      assert.deepStrictEqual(shown.model, { value: "claude-from-env", source: "env" })
      assert.deepStrictEqual(shown.baseUrl, { value: "http://127.0.0.1:9/", source: "stored" }) // empty = unset
      const resolved = yield* withEnv(env)(settings.resolve)
      assert.deepStrictEqual({ ...resolved }, {
        provider: "anthropic",
        baseUrl: "http://127.0.0.1:9/",
        model: "claude-from-env",
        apiKey: undefined
      })
      // The provider's default base URL follows the provider.
      const other = yield* withEnv({ SKALD_LLM_PROVIDER: "openai" })(settings.show)
      assert.deepStrictEqual(other.provider, { value: "openai", source: "env" })
      // A field stored while the environment overrides it is reported.
      const overridden = yield* withEnv(env)(settings.set({ model: "claude-2" }))
      assert.deepStrictEqual(overridden.overriddenByEnv, ["SKALD_LLM_MODEL"])
    }).pipe(withEnv({}), Effect.provide(settingsLayer(makeHome()))))

  it.effect("a literal key is moved into the secret store; the database holds only ${NAME}", () => {
    const home = makeHome()
    const key = "sk-ant-api03-very-secret-value-0123456789"
    return Effect.gen(function*() {
      const settings = yield* ModelSettings
      const result = yield* settings.set({ model: "m", apiKey: Redacted.make(key) })
      assert.strictEqual(result.movedKeyTo, "SKALD_LLM_API_KEY")
      const stored = yield* (yield* SecretStore).get("SKALD_LLM_API_KEY")
      assert.strictEqual(Option.map(stored, Redacted.value).pipe(Option.getOrUndefined), key)
      assert.strictEqual(
        Fs.readFileSync(Path.join(home, "secrets", "vars", "SKALD_LLM_API_KEY"), "utf8"),
        key
      )
      const shown = yield* settings.show
      assert.deepStrictEqual(shown.apiKey, { value: "${SKALD_LLM_API_KEY}", source: "stored" })
      const resolved = yield* settings.resolve
      assert.strictEqual(Redacted.value(resolved.apiKey!), key)
      const bytes = databaseBytes(home)
      assert.isAbove(bytes.length, 0)
      assert.isTrue(bytes.includes("${SKALD_LLM_API_KEY}"))
      assert.isFalse(bytes.includes(key))
    }).pipe(withEnv({}), Effect.provide(settingsLayer(home)))
  })

  it.effect("a ${NAME} reference is stored as is and resolved through the store, then the environment", () =>
    Effect.gen(function*() {
      const settings = yield* ModelSettings
      yield* (yield* SecretStore).set("ANTHROPIC_KEY", Redacted.make("from-the-store"))
      const result = yield* settings.set({ model: "m", apiKey: Redacted.make("${ANTHROPIC_KEY}") })
      assert.strictEqual(result.movedKeyTo, undefined)
      assert.strictEqual(Redacted.value((yield* settings.resolve).apiKey!), "from-the-store")
      // The environment's SKALD_LLM_API_KEY may itself be a reference, or a literal (masked in show).
      yield* (yield* SecretStore).set("OTHER_KEY", Redacted.make("other"))
      const viaEnv = yield* withEnv({ SKALD_LLM_API_KEY: "${OTHER_KEY}" })(settings.resolve)
      assert.strictEqual(Redacted.value(viaEnv.apiKey!), "other")
      const literal = yield* withEnv({ SKALD_LLM_API_KEY: "sk-literal" })(settings.show)
      assert.deepStrictEqual(literal.apiKey, { value: ModelSettingsModule.MASK, source: "env" })
      const missing = yield* withEnv({ SKALD_LLM_API_KEY: "${NOWHERE_TO_BE_FOUND}" })(settings.resolve).pipe(
        Effect.flip
      )
      assert.strictEqual(missing._tag, "UnknownModelKeyReference")
      assert.include(missing.message, "NOWHERE_TO_BE_FOUND")
    }).pipe(withEnv({}), Effect.provide(settingsLayer(makeHome()))))

  it.effect("bad values are typed errors naming the setting and where it came from", () =>
    Effect.gen(function*() {
      const settings = yield* ModelSettings
      const provider = yield* Effect.flip(settings.set({ provider: "gemini" }))
      assert.strictEqual(provider._tag, "InvalidModelSetting")
      assert.include(provider.message, "SKALD_LLM_PROVIDER")
      const url = yield* Effect.flip(settings.set({ baseUrl: "https://user:pw@example.com/v1" }))
      assert.include(url.message, "credential")
      const fromEnv = yield* withEnv({ SKALD_LLM_PROVIDER: "bard", SKALD_LLM_MODEL: "m" })(settings.resolve).pipe(
        Effect.flip
      )
      assert.include(fromEnv.message, "the environment variable SKALD_LLM_PROVIDER cannot be used")
      // Nothing was stored by the failed sets.
      assert.deepStrictEqual((yield* settings.show).provider, { value: "openai", source: "default" })
    }).pipe(withEnv({}), Effect.provide(settingsLayer(makeHome()))))
})

describe("skald model set|show", () => {
  const clean = { SKALD_LLM_PROVIDER: "", SKALD_LLM_BASE_URL: "", SKALD_LLM_MODEL: "", SKALD_LLM_API_KEY: "" }

  it("set then show through the real binary; a literal key from stdin goes to the store", async () => {
    const home = makeHome()
    const set = await runSkald(
      ["model", "set", "--home", home, "--provider", "anthropic", "--model", "claude-test", "--api-key-stdin"],
      { env: clean, input: "sk-ant-from-stdin\n" }
    )
    assert.strictEqual(set.status, 0, set.stderr)
    assert.strictEqual(set.stdout, "")
    assert.include(set.stderr, "SKALD_LLM_API_KEY")
    assert.notInclude(set.stderr, "sk-ant-from-stdin")
    assert.strictEqual(
      Fs.readFileSync(Path.join(home, "secrets", "vars", "SKALD_LLM_API_KEY"), "utf8"),
      "sk-ant-from-stdin"
    )
    const show = await runSkald(["model", "show", "--home", home, "--json"], {
      env: { ...clean, SKALD_LLM_BASE_URL: "http://127.0.0.1:1/" }
    })
    assert.strictEqual(show.status, 0, show.stderr)
    assert.deepStrictEqual(JSON.parse(show.stdout), {
      provider: { value: "anthropic", source: "stored" },
      baseUrl: { value: "http://127.0.0.1:1/", source: "env" },
      model: { value: "claude-test", source: "stored" },
      apiKey: { value: "${SKALD_LLM_API_KEY}", source: "stored" }
    })
    const text = await runSkald(["model", "show", "--home", home], { env: clean })
    assert.strictEqual(text.status, 0, text.stderr)
    assert.match(text.stdout, /^provider\s+anthropic\s+\(stored\)$/m)
    assert.match(text.stdout, /^base-url\s+https:\/\/api\.anthropic\.com\s+\(default\)$/m)
    assert.notInclude(text.stdout + text.stderr, "sk-ant-from-stdin")
    // A reference on argv is stored as is; a literal on argv is moved, with a warning.
    const ref = await runSkald(["model", "set", "--home", home, "--api-key", "${MY_KEY}"], { env: clean })
    assert.strictEqual(ref.status, 0, ref.stderr)
    assert.notInclude(ref.stderr, "warning")
    const shown = await runSkald(["model", "show", "--home", home, "--json"], { env: clean })
    assert.deepStrictEqual(JSON.parse(shown.stdout).apiKey, { value: "${MY_KEY}", source: "stored" })
    const literal = await runSkald(["model", "set", "--home", home, "--api-key", "sk-on-argv"], { env: clean })
    assert.strictEqual(literal.status, 0, literal.stderr)
    assert.include(literal.stderr, "visible to other users")
    assert.strictEqual(Fs.readFileSync(Path.join(home, "secrets", "vars", "SKALD_LLM_API_KEY"), "utf8"), "sk-on-argv")
  })

  it("a bad value is a usage failure (exit 2) and set without a field says what to give", async () => {
    const home = makeHome()
    const bad = await runSkald(["model", "set", "--home", home, "--provider", "gemini"], { env: clean })
    assert.strictEqual(bad.status, 2)
    assert.match(bad.stderr, /^skald: .*SKALD_LLM_PROVIDER/)
    const none = await runSkald(["model", "set", "--home", home], { env: clean })
    assert.strictEqual(none.status, 2)
    assert.include(none.stderr, "--model")
    const both = await runSkald(["model", "set", "--home", home, "--api-key", "x", "--api-key-stdin"], {
      env: clean,
      input: "y"
    })
    assert.strictEqual(both.status, 2)
  })
})
