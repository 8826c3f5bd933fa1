/**
 * Per-request generation settings both providers honour: `max_tokens`, `temperature` and stop
 * sequences, for the requests made inside `withConfig(…)` (e.g. a server's sampling
 * request, sampling/HostSampling.ts). Unset, a provider sends its own defaults (the turn loop's
 * requests are made so).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/** The settings; a field left out is the provider's default. */
export interface Config {
  readonly maxTokens?: number | undefined
  readonly temperature?: number | undefined
  readonly stopSequences?: ReadonlyArray<string> | undefined
}

/** The settings of the current request (default: none). */
export class GenerationConfig extends Context.Reference<GenerationConfig>()("@skald/server/GenerationConfig", {
  defaultValue: (): Config => ({})
}) {}

/** Runs `effect` with `config` for the requests it makes. */
export const withConfig = (config: Config) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, GenerationConfig, config)
