/**
 * The parsing of a tool call's options (CallOptions.ts) into what `McpClient.callTool` takes, and
 * the progress display that goes with it. Loaded by the handlers of `skald call` and
 * `skald mcp call` only.
 *
 * @since 0.1.0
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import type { Elicitation, McpClient } from "@skald/mcp"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { Given } from "./CallOptions.js"
import { UsageError } from "./CliError.js"
import * as Elicit from "./Elicit.js"
import { readSpec } from "./Io.js"
import * as Progress from "./Progress.js"

/** A parsed call: the arguments, the elicitation handler, and where misfit answers are recorded. */
export interface Parsed {
  readonly params: McpClient.JsonObject
  readonly timeout: Option.Option<Duration.Duration>
  readonly handler: Elicitation.Handler
  /** An `--elicit` answer that did not fit a form: a usage error, reported after the call. */
  readonly problems: Elicit.Problems
}

/** `--args`: a JSON object given inline, in a file, or on stdin. */
export const parseArgs = (spec: string) =>
  Effect.gen(function*() {
    const text = yield* readSpec("args", spec)
    const value = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () =>
        new UsageError({
          message: `--args is not valid JSON: ${text.length > 80 ? `${text.slice(0, 80)}…` : text.trim()}`
        })
    })
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return yield* new UsageError({ message: "--args must be a JSON object, e.g. --args '{\"message\":\"hi\"}'" })
    }
    return value as McpClient.JsonObject
  })

/** Parses the options; the elicitation handler lives in the current scope (the call's). */
export const parse = (given: Given): Effect.Effect<Parsed, UsageError, Scope.Scope | FileSystem.FileSystem> =>
  Effect.gen(function*() {
    if (
      Option.isSome(given.args) && Option.isSome(given.elicit) && given.args.value === "@-" &&
      given.elicit.value === "@-"
    ) {
      return yield* new UsageError({
        message: "--args @- and --elicit @- cannot both read standard input: put one in a file"
      })
    }
    if (Option.isSome(given.timeout) && !(given.timeout.value > 0)) {
      return yield* new UsageError({ message: "--timeout must be a positive number of seconds" })
    }
    const params = Option.isSome(given.args) ? yield* parseArgs(given.args.value) : {}
    const problems = Elicit.makeProblems()
    const handler = Option.isSome(given.elicit)
      ? Elicit.fromAnswer(yield* Elicit.readAnswer(given.elicit.value), problems, yield* Effect.scope)
      : process.stdin.isTTY === true
      ? Elicit.terminal
      : Elicit.declining
    return {
      params,
      timeout: Option.map(given.timeout, (s) => Duration.millis(Math.round(s * 1000))),
      handler,
      problems
    }
  })

/**
 * What the call shows on stderr while it runs, and the `callTool` options that feed it: the one
 * seam for progress displays (`notifications/progress` and task status, `Progress.ts`).
 */
export const display = (parsed: Parsed) => {
  const shown = Progress.make(process.stderr)
  const callOptions: McpClient.RequestOptions = {
    ...(Option.isSome(parsed.timeout) ? { timeout: parsed.timeout.value } : {}),
    onTaskStatus: shown.onTaskStatus,
    onProgress: shown.onProgress
  }
  return { callOptions, done: shown.done }
}
