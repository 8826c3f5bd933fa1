/**
 * The agent's model as a `LanguageModel` layer, from the model settings (ModelSettings.ts): the
 * provider picks `OpenAiCompatible.layer` (`openai`: any OpenAI-compatible chat-completions
 * server) or `Anthropic.layer` (`anthropic`), with the base URL, the model and the key (resolved
 * from the secret store, a `Redacted`: never logged, redacted from errors), over undici: the
 * OpenAI-compatible provider sends through its dispatcher (`NodeHttpClient.Dispatcher`) directly,
 * Anthropic's through an `HttpClient` (`layer` brings both, over one dispatcher: `http`;
 * `layerWith` takes others).
 *
 * Building it fails with the settings' typed errors: `ModelNotConfigured` (no model),
 * `InvalidModelSetting`, `UnknownModelKeyReference`. Built, it follows the settings: a request
 * made at least `settingsRecheck` (1 s) after the settings were last read reads them again (they
 * may have been changed from another process: `skald model set`, a secret set), and a change
 * takes effect from that request on — a new provider is made for the new settings, the same one
 * kept while they stay the same. Settings that became unusable fail the request (an `AiError`
 * naming the setting) until they are fixed.
 *
 * @since 0.1.0
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Anthropic from "./Anthropic.js"
import { ModelSettings, type Resolved } from "./ModelSettings.js"
import * as OpenAiCompatible from "./OpenAiCompatible.js"
import * as StreamParts from "./StreamParts.js"

/**
 * Why the model could not be made: the settings' errors (`ModelNotConfigured`, `InvalidModelSetting`,
 * `UnknownModelKeyReference`) and the store's.
 */
export type ModelError = Effect.Effect.Error<ModelSettings["resolve"]>

/** What the providers take besides the settings (tests shorten the retries). */
export interface Tuning {
  readonly maxRetries?: number | undefined
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  readonly retryMaxDelay?: Duration.DurationInput | undefined
  /** How long the settings read for one request hold for the next ones (default 1 s; 0: read for every request). */
  readonly settingsRecheck?: Duration.DurationInput | undefined
}

const DEFAULT_SETTINGS_RECHECK = Duration.seconds(1)

/** What the providers send through: an `HttpClient` (Anthropic) and undici's dispatcher (OpenAI-compatible). */
export type Http = HttpClient.HttpClient | NodeHttpClient.Dispatcher

/** Node's HTTP client and undici's dispatcher it sends through: one connection pool for both providers. */
export const http: Layer.Layer<Http> = NodeHttpClient.layerUndiciWithoutDispatcher.pipe(
  Layer.provideMerge(NodeHttpClient.dispatcherLayer)
)

/** The provider's layer for resolved settings. */
export const providerLayer = (
  settings: Resolved,
  tuning: Tuning = {}
): Layer.Layer<LanguageModel.LanguageModel, never, Http> => {
  const common = {
    baseUrl: settings.baseUrl,
    model: settings.model,
    ...(settings.apiKey === undefined ? {} : { apiKey: settings.apiKey }),
    ...(tuning.maxRetries === undefined ? {} : { maxRetries: tuning.maxRetries }),
    ...(tuning.retryBaseDelay === undefined ? {} : { retryBaseDelay: tuning.retryBaseDelay }),
    ...(tuning.retryMaxDelay === undefined ? {} : { retryMaxDelay: tuning.retryMaxDelay })
  }
  switch (settings.provider) {
    case "anthropic":
      return Anthropic.layer(common)
    case "openai":
      return OpenAiCompatible.layer(common)
  }
}

/** Whether two resolved settings make the same provider. */
const sameSettings = (a: Resolved, b: Resolved): boolean =>
  a.provider === b.provider && a.baseUrl === b.baseUrl && a.model === b.model &&
  (a.apiKey === undefined || b.apiKey === undefined
    ? a.apiKey === b.apiKey
    : Redacted.value(a.apiKey) === Redacted.value(b.apiKey))

/**
 * The model from the settings, over the given HTTP client and dispatcher: made from the settings
 * as they are now (failing with their errors), then following them (see the module's comment).
 */
export const layerWith = (
  tuning: Tuning = {}
): Layer.Layer<LanguageModel.LanguageModel, ModelError, ModelSettings | Http> =>
  Layer.scoped(
    LanguageModel.LanguageModel,
    Effect.gen(function*() {
      const settings = yield* ModelSettings
      const http = yield* Effect.context<Http>()
      const scope = yield* Effect.scope
      const recheckMillis = Duration.toMillis(tuning.settingsRecheck ?? DEFAULT_SETTINGS_RECHECK)
      /** A provider for `resolved`, living until the layer's scope closes (a request may still use it). */
      const make = (resolved: Resolved) =>
        Effect.gen(function*() {
          const child = yield* Scope.fork(scope, ExecutionStrategy.sequential)
          const built = yield* Layer.buildWithScope(providerLayer(resolved, tuning), child)
          return Context.get(built, LanguageModel.LanguageModel)
        }).pipe(Effect.provide(http), Effect.withSpan("Model.make"))
      const first = yield* settings.resolve
      let current = { resolved: first, model: yield* make(first), readAt: yield* Clock.currentTimeMillis }
      const lock = yield* Effect.makeSemaphore(1)
      const reread = lock.withPermits(1)(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (now - current.readAt < recheckMillis) return current.model
        const resolved = yield* settings.resolve.pipe(
          Effect.mapError((error) =>
            new AiError.UnknownError({
              module: "Model",
              method: "settings",
              description: `the model settings cannot be used: ${error.message}`
            })
          )
        )
        current = sameSettings(resolved, current.resolved)
          ? { ...current, readAt: now }
          : { resolved, model: yield* make(resolved), readAt: now }
        return current.model
      }))
      /** The provider for the settings as they are now. */
      const model: Effect.Effect<LanguageModel.Service, AiError.AiError> = Effect.flatMap(
        Clock.currentTimeMillis,
        (now) => now - current.readAt < recheckMillis ? Effect.succeed(current.model) : reread
      )
      const service = LanguageModel.LanguageModel.of({
        generateText: ((options: any) => Effect.flatMap(model, (m) => m.generateText(options))) as any,
        generateObject: ((options: any) => Effect.flatMap(model, (m) => m.generateObject(options))) as any,
        streamText: ((options: any) => Stream.unwrap(Effect.map(model, (m) => m.streamText(options)))) as any
      })
      return StreamParts.withOpen(service, (request) => Effect.flatMap(model, (m) => StreamParts.openOf(m)(request)))
    }).pipe(Effect.withSpan("Model.layer"))
  )

/** The model from the settings, over Node's HTTP client and undici's dispatcher (`http`). */
export const layer = (tuning: Tuning = {}): Layer.Layer<LanguageModel.LanguageModel, ModelError, ModelSettings> =>
  layerWith(tuning).pipe(Layer.provide(http))
