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
 * `InvalidModelSetting`, `UnknownModelKeyReference`.
 *
 * @since 0.1.0
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Anthropic from "./Anthropic.js"
import { ModelSettings, type Resolved } from "./ModelSettings.js"
import * as OpenAiCompatible from "./OpenAiCompatible.js"

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
}

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

/** The model from the settings, over the given HTTP client and dispatcher. */
export const layerWith = (
  tuning: Tuning = {}
): Layer.Layer<LanguageModel.LanguageModel, ModelError, ModelSettings | Http> =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.flatMap(ModelSettings, (settings) => settings.resolve),
      (resolved) => providerLayer(resolved, tuning)
    ).pipe(Effect.withSpan("Model.layer"))
  )

/** The model from the settings, over Node's HTTP client and undici's dispatcher (`http`). */
export const layer = (tuning: Tuning = {}): Layer.Layer<LanguageModel.LanguageModel, ModelError, ModelSettings> =>
  layerWith(tuning).pipe(Layer.provide(http))
