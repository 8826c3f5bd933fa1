/**
 * The providers' one retry policy (OpenAiCompatible.ts, Anthropic.ts): which failures are tried
 * again, after how long, and how many times.
 *
 * - **What**: an answer of 408, 429 or 5xx (Anthropic's 529 "overloaded" included), and a
 *   connection that failed before any answer; each provider says which of its failures these are.
 * - **When**: after the delay the server asks for (`retry-after-ms`, or `Retry-After` in seconds or
 *   as an HTTP date: internal/retryAfter.ts) when it gives one, else after an exponential backoff
 *   from `retryBaseDelay`, doubling, capped at `retryMaxDelay` — as the official OpenAI and
 *   Anthropic SDKs do. A server asking for more than `retryMaxDelay` is not waited for: the failure
 *   is final at once (the provider's message says what it asked).
 * - **How many**: `maxRetries` tries in all (default 3; 1 = no retry).
 *
 * Delays go through `Schedule` and `Clock` (tests run them on the `TestClock`).
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"

/** The policy's settings, as both providers' options carry them. */
export interface Options {
  /** Tries in all for a retryable failure (default 3; 1 = no retry). */
  readonly maxRetries?: number | undefined
  /** The first backoff delay (default 500 ms), doubled each try. */
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  /** The longest backoff delay, and the longest delay a server may ask for and be waited for (default 20 s). */
  readonly retryMaxDelay?: Duration.DurationInput | undefined
}

export const defaults = {
  maxRetries: 3,
  retryBaseDelay: Duration.millis(500),
  retryMaxDelay: Duration.seconds(20)
} as const

/** Statuses worth another try: a request timeout, rate limited, and the server's own failures. */
export const isRetryableStatus = (status: number): boolean => status === 408 || status === 429 || status >= 500

/** What a failed try tells the policy. */
export interface Verdict {
  readonly retryable: boolean
  /** The delay the server asked for, if it did. */
  readonly retryAfterMillis: number | undefined
}

/** The longest delay waited for. */
export const maxDelayOf = (options: Options): Duration.Duration =>
  Duration.decode(options.retryMaxDelay ?? defaults.retryMaxDelay)

/**
 * The schedule for failures of type `In`, told apart by `verdict` (given the time now, for a
 * `Retry-After` that is a date). Each retryable failure is logged at debug level, annotated with
 * `module` and the failure's `describe`.
 */
export const schedule = <In>(
  options: Options,
  verdict: (input: In, now: number) => Verdict,
  log: { readonly module: string; readonly describe: (input: In) => string }
): Schedule.Schedule<unknown, In> => {
  const tries = Math.max(1, Math.floor(options.maxRetries ?? defaults.maxRetries))
  const base = Duration.decode(options.retryBaseDelay ?? defaults.retryBaseDelay)
  const cap = maxDelayOf(options)
  const capMillis = Duration.toMillis(cap)
  const judged = (input: In) => Effect.map(Clock.currentTimeMillis, (now) => verdict(input, now))
  return Schedule.exponential(base, 2).pipe(
    Schedule.intersect(Schedule.recurs(tries - 1)),
    Schedule.intersect(Schedule.identity<In>()),
    Schedule.tapInput((input: In) =>
      Effect.flatMap(judged(input), (v) =>
        v.retryable
          ? Effect.logDebug("model request failed; it may be retried").pipe(
            Effect.annotateLogs({ module: log.module, error: log.describe(input) })
          )
          : Effect.void)
    ),
    Schedule.whileInputEffect((input: In) =>
      Effect.map(
        judged(input),
        (v) => v.retryable && (v.retryAfterMillis === undefined || v.retryAfterMillis <= capMillis)
      )
    ),
    // The server's delay, else the backoff capped (`exponential`'s own output is not).
    Schedule.modifyDelayEffect(([[backoff], input]) =>
      Effect.map(
        judged(input),
        (v) => v.retryAfterMillis === undefined ? Duration.min(backoff, cap) : Duration.millis(v.retryAfterMillis)
      )
    )
  )
}
