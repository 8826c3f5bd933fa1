/**
 * Spans on the hot path. Effect's built-in tracer exports nothing, yet creating one of its spans
 * (random trace and span ids, an attribute map, an exit hook) costs more than the rest of a call,
 * so with that tracer in place the span is skipped. Any installed tracer (OpenTelemetry, a test's
 * recording tracer) gets every span.
 */
import * as Effect from "effect/Effect"
import type * as Tracer from "effect/Tracer"

const builtIn: Tracer.Tracer = Effect.runSync(Effect.tracer)

/** `Effect.useSpan` without a captured stack trace, skipped under the built-in tracer. */
export const hot = <A, E, R>(
  name: string,
  attributes: Record<string, unknown>,
  body: () => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.tracerWith((tracer) =>
    tracer === builtIn ? body() : Effect.useSpan(name, { kind: "client", captureStackTrace: false, attributes }, body)
  )
