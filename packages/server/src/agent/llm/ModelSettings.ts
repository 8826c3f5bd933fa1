/**
 * Which model the agent talks to (DESIGN §5 *Model*): `SKALD_LLM_PROVIDER` (`openai` — any
 * OpenAI-compatible chat-completions server — or `anthropic`), `SKALD_LLM_BASE_URL`,
 * `SKALD_LLM_MODEL` and `SKALD_LLM_API_KEY` (a value or a `${NAME}` reference into the secret
 * store), read through effect's `Config` (the environment, or any `ConfigProvider`), over the
 * settings stored in the home's database (`settings`, keys `llm.*`). Per field, the environment
 * wins over the stored value, which wins over the default.
 *
 * Defaults: provider `openai`; base URL `http://127.0.0.1:11434/v1` for openai (a local Ollama:
 * nothing leaves the machine unless asked) and `https://api.anthropic.com` for anthropic; no key.
 * The model has no default: resolving without one fails with `ModelNotConfigured`.
 *
 * A key is never stored in the database: `set` with a literal key moves it into the secret store
 * as `SKALD_LLM_API_KEY` and stores the reference `${SKALD_LLM_API_KEY}`; `show` never returns a
 * key's value (a reference is shown, a literal is masked).
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as SecretNames from "../../host/SecretNames.js"
import * as SecretStore from "../../host/SecretStore.js"
import * as SettingsRepo from "../../host/SettingsRepo.js"

/** The providers. */
export const providers = ["openai", "anthropic"] as const
export type Provider = typeof providers[number]

/** The settings' fields, with their environment variable and stored key. */
export const fields = {
  provider: { env: "SKALD_LLM_PROVIDER", key: "llm.provider" },
  baseUrl: { env: "SKALD_LLM_BASE_URL", key: "llm.base_url" },
  model: { env: "SKALD_LLM_MODEL", key: "llm.model" },
  apiKey: { env: "SKALD_LLM_API_KEY", key: "llm.api_key" }
} as const
export type Field = keyof typeof fields

/** The store name a literal key given to `set` is moved to. */
export const API_KEY_SECRET = "SKALD_LLM_API_KEY"

/** The default base URL of each provider. */
export const defaultBaseUrl: Record<Provider, string> = {
  openai: "http://127.0.0.1:11434/v1",
  anthropic: "https://api.anthropic.com"
}

/** No model is configured. */
export class ModelNotConfigured extends Schema.TaggedError<ModelNotConfigured>(
  "@skald/server/ModelNotConfigured"
)("ModelNotConfigured", { variable: Schema.String }) {
  override get message(): string {
    return `no model is configured: set ${this.variable} in the environment or store a model in this home's ` +
      `model settings (e.g. claude-sonnet-4-5 for anthropic, llama3.2 for a local Ollama)`
  }
}

/** A model setting has a value that cannot be used. */
export class InvalidModelSetting extends Schema.TaggedError<InvalidModelSetting>(
  "@skald/server/InvalidModelSetting"
)("InvalidModelSetting", {
  variable: Schema.String,
  source: Schema.Literal("env", "stored", "given"),
  reason: Schema.String
}) {
  override get message(): string {
    const where = this.source === "env"
      ? `the environment variable ${this.variable}`
      : this.source === "stored"
      ? `the stored value of ${this.variable}`
      : `the value given for ${this.variable}`
    return `${where} cannot be used: ${this.reason}`
  }
}

/** `SKALD_LLM_API_KEY` refers to a secret that is neither stored nor in the environment. */
export class UnknownModelKeyReference extends Schema.TaggedError<UnknownModelKeyReference>(
  "@skald/server/UnknownModelKeyReference"
)("UnknownModelKeyReference", { variable: Schema.String }) {
  override get message(): string {
    return `the model's API key refers to \${${this.variable}}, which is neither a stored secret nor an environment ` +
      `variable: store the secret ${this.variable}, or change the key's reference`
  }
}

/** Where a field's value came from. */
export type Source = "env" | "stored" | "default" | "unset"

/** One field as `show` gives it. */
export interface Shown {
  /** The value; for the key, a `${NAME}` reference as is and a literal as `********`. */
  readonly value: string | undefined
  readonly source: Source
}

/** The effective settings, each field with its source. The key's value never appears. */
export interface Effective {
  readonly provider: Shown
  readonly baseUrl: Shown
  readonly model: Shown
  readonly apiKey: Shown
}

/** What resolves into a provider's options (Anthropic.ts, OpenAiCompatible.ts). */
export interface Resolved {
  readonly provider: Provider
  readonly baseUrl: string
  readonly model: string
  readonly apiKey: Redacted.Redacted<string> | undefined
}

/** What `set` changes (a field left out is kept). */
export interface Changes {
  readonly provider?: string | undefined
  readonly baseUrl?: string | undefined
  readonly model?: string | undefined
  /** A literal (moved into the secret store) or a `${NAME}` reference (stored as is). */
  readonly apiKey?: Redacted.Redacted<string> | undefined
}

/** What `set` did. */
export interface SetResult {
  /** The secret a literal key was stored as (say it to the user), if one was given. */
  readonly movedKeyTo: string | undefined
  /** The fields just stored that an environment variable overrides (by variable name). */
  readonly overriddenByEnv: ReadonlyArray<string>
}

/** The mask `show` gives a literal key. */
export const MASK = "********"

const isProvider = (value: string): value is Provider => (providers as ReadonlyArray<string>).includes(value)

/** A check of one field's value: undefined when fine, else the reason. */
const problem = (field: Field, value: string): string | undefined => {
  switch (field) {
    case "provider":
      return isProvider(value) ? undefined : `${JSON.stringify(value)} is not a provider (use openai or anthropic)`
    case "baseUrl": {
      if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) {
        return `${JSON.stringify(value)} is not an http(s) URL`
      }
      const credential = SecretStore.credentialsInUrl(value)
      return credential === undefined
        ? undefined
        : `the URL carries a credential (${credential}); give the key as the API key instead`
    }
    case "model":
      return value.trim().length === 0 ? "the model name is empty" : undefined
    case "apiKey":
      return value.length === 0 ? "the key is empty" : undefined
  }
}

/** An environment variable as an optional non-empty string (an empty one counts as unset). */
const env = (name: string) =>
  Config.string(name).pipe(
    Config.option,
    Config.map(Option.filter((v) => v.length > 0))
  )

/** The model settings. */
export class ModelSettings extends Effect.Service<ModelSettings>()("@skald/server/ModelSettings", {
  dependencies: [SettingsRepo.layer],
  effect: Effect.gen(function*() {
    const repo = yield* SettingsRepo.SettingsRepo
    const secrets = yield* SecretStore.SecretStore

    /** Each field's raw value (the key unresolved) and source. */
    const raw = Effect.gen(function*() {
      const stored = yield* repo.list("llm.")
      const out = {} as Record<Field, { value: string | undefined; source: Source }>
      for (const field of Object.keys(fields) as Array<Field>) {
        const fromEnv = yield* env(fields[field].env)
        const fromStore = stored.get(fields[field].key)
        out[field] = Option.isSome(fromEnv)
          ? { value: fromEnv.value, source: "env" }
          : fromStore !== undefined
          ? { value: fromStore, source: "stored" }
          : { value: undefined, source: "unset" }
      }
      if (out.provider.value === undefined) out.provider = { value: "openai", source: "default" }
      if (out.baseUrl.value === undefined && isProvider(out.provider.value!)) {
        out.baseUrl = { value: defaultBaseUrl[out.provider.value], source: "default" }
      }
      return out
    })

    /** The effective settings with their sources; the key masked unless it is a reference. */
    const show = Effect.gen(function*() {
      const r = yield* raw
      const key = r.apiKey.value
      return {
        provider: r.provider,
        baseUrl: r.baseUrl,
        model: r.model,
        apiKey: { value: key === undefined || SecretNames.isReference(key) ? key : MASK, source: r.apiKey.source }
      } satisfies Effective as Effective
    }).pipe(Effect.withSpan("ModelSettings.show"))

    /** The settings a provider is made from: every field checked, the key resolved. */
    const resolve = Effect.gen(function*() {
      const r = yield* raw
      for (const field of ["provider", "baseUrl", "model"] as const) {
        const { source, value } = r[field]
        const reason = value === undefined ? undefined : problem(field, value)
        if (reason !== undefined) {
          return yield* new InvalidModelSetting({
            variable: fields[field].env,
            source: source === "env" ? "env" : "stored",
            reason
          })
        }
      }
      if (r.model.value === undefined) return yield* new ModelNotConfigured({ variable: fields.model.env })
      const key = r.apiKey.value
      let apiKey: Redacted.Redacted<string> | undefined = undefined
      if (key !== undefined) {
        apiKey = yield* secrets.interpolate("model", key).pipe(
          Effect.catchTag("UnknownSecretReference", (e) => new UnknownModelKeyReference({ variable: e.variable }))
        )
      }
      return {
        provider: r.provider.value as Provider,
        baseUrl: r.baseUrl.value!,
        model: r.model.value,
        apiKey
      } satisfies Resolved as Resolved
    }).pipe(Effect.withSpan("ModelSettings.resolve"))

    /** Stores the given fields; a literal key goes to the secret store, the database gets `${NAME}`. */
    const set = Effect.fn("ModelSettings.set")(function*(changes: Changes) {
      const updates = new Map<string, string>()
      for (const field of ["provider", "baseUrl", "model"] as const) {
        const value = changes[field]
        if (value === undefined) continue
        const reason = problem(field, value)
        if (reason !== undefined) {
          return yield* new InvalidModelSetting({ variable: fields[field].env, source: "given", reason })
        }
        updates.set(fields[field].key, value)
      }
      let movedKeyTo: string | undefined = undefined
      if (changes.apiKey !== undefined) {
        const key = Redacted.value(changes.apiKey)
        if (key.length === 0) {
          return yield* new InvalidModelSetting({
            variable: fields.apiKey.env,
            source: "given",
            reason: "the key is empty"
          })
        }
        if (SecretNames.isReference(key)) {
          updates.set(fields.apiKey.key, key)
        } else if (SecretNames.references(key).length > 0) {
          return yield* new InvalidModelSetting({
            variable: fields.apiKey.env,
            source: "given",
            reason: "give either a key or exactly one ${NAME} reference, not a mix"
          })
        } else {
          yield* secrets.set(API_KEY_SECRET, changes.apiKey)
          movedKeyTo = API_KEY_SECRET
          updates.set(fields.apiKey.key, `\${${API_KEY_SECRET}}`)
        }
      }
      yield* repo.update(updates)
      const overriddenByEnv: Array<string> = []
      for (const field of Object.keys(fields) as Array<Field>) {
        if (updates.has(fields[field].key) && Option.isSome(yield* env(fields[field].env))) {
          overriddenByEnv.push(fields[field].env)
        }
      }
      return { movedKeyTo, overriddenByEnv } satisfies SetResult as SetResult
    })

    return { show, resolve, set } as const
  })
}) {}
