/**
 * Spans on the hot path. Effect's built-in tracer exports nothing, yet creating one of its spans
 * (random trace and span ids, an attribute map, an exit hook) costs more than the rest of a call,
 * so with that tracer in place the span is skipped. Any installed tracer (OpenTelemetry, a test's
 * recording tracer) gets every span.
 */
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as Tracer from "effect/Tracer"

/** Effect's built-in tracer (the default when none is installed). */
export const builtIn: Tracer.Tracer = Effect.runSync(Effect.tracer)

/** True when the fiber runs under an installed tracer (anything but the built-in one). */
export const isTraced = (fiber: Fiber.RuntimeFiber<any, any>): boolean => fiber.currentTracer !== builtIn

/** A client span around `body`: `Effect.useSpan` without a captured stack trace. */
export const around = <A, E, R>(
  name: string,
  attributes: Record<string, unknown>,
  body: () => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => Effect.useSpan(name, { kind: "client", captureStackTrace: false, attributes }, body)

/**
 * `Effect.useSpan` without a captured stack trace, skipped under the built-in tracer. One fiber
 * step to look at the tracer; the attributes are built only when a span is made.
 */
export const hot = <A, E, R>(
  name: string,
  attributes: () => Record<string, unknown>,
  body: () => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) => isTraced(fiber) ? around(name, attributes(), body) : body())
