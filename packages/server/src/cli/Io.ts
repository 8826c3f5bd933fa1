/**
 * The command line's two streams: stdout carries only the result; errors, progress and prompts
 * go to stderr. And the one place a failure becomes "skald: <what happened>" plus exit status 2.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { ExitStatus, ExitWith } from "./CliError.js"

/** Prints the result on stdout (a trailing newline added when missing). */
export const stdout = (text: string) =>
  Effect.sync(() => void process.stdout.write(text.endsWith("\n") ? text : `${text}\n`))

/** Prints a line on stderr. */
export const stderr = (text: string) => Effect.sync(() => void process.stderr.write(`${text}\n`))

/** Prints what went wrong on stderr (first line: what happened and what to do) and ends with status 2. */
export const reportFailures = <A, R>(effect: Effect.Effect<A, unknown, R>): Effect.Effect<A, ExitWith, R> =>
  effect.pipe(
    Effect.catchAll((error) => {
      if (error instanceof ExitWith) return Effect.fail(error)
      const message = typeof error === "object" && error !== null && "message" in error
        ? String((error as { message: unknown }).message)
        : String(error)
      return Effect.zipRight(stderr(`skald: ${message}`), Effect.fail(new ExitWith({ status: ExitStatus.Failure })))
    })
  )
