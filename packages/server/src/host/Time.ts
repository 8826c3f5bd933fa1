/**
 * The host's one clock adapter: every timestamp it stores or writes is read from Effect's `Clock`
 * (so `TestClock` drives the host) and rendered as ISO-8601 UTC here.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"

/** `millis` (since the epoch) as ISO-8601 UTC, e.g. `2026-07-03T12:34:56.789Z`. */
export const isoOf = (millis: number): string => DateTime.formatIso(DateTime.unsafeMake(millis))

/** Now, on the fiber's `Clock`, as ISO-8601 UTC. */
export const nowIso: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, isoOf)
