/**
 * Where the manager gets the answerer of its servers' `sampling/createMessage` (the host's model,
 * sampling/HostSampling.ts). With one in the manager's context, each server connected while
 * `available` holds (a model is configured) declares `sampling`; the others declare nothing.
 *
 * @since 0.1.0
 */
import type { Sampling } from "@skald/mcp"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

/** The answerer, and whether a server connected now may be offered it. */
export interface Service {
  readonly handler: Sampling.Handler
  /** Whether a model is configured now (asked at each connect). */
  readonly available: Effect.Effect<boolean>
}

/** The manager's source of sampling. */
export class SamplingSource extends Context.Tag("@skald/server/SamplingSource")<SamplingSource, Service>() {}
