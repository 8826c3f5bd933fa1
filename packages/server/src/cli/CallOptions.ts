/**
 * The options of a tool call, one definition for `skald call` and `skald mcp call`:
 * `--args JSON|@FILE|@-`, `--timeout S`, `--elicit ANSWER|@FILE|@-`, `--json`; and their parsing
 * into what `McpClient.callTool` takes.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import type { Elicitation, McpClient } from "@skald/mcp"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Fs from "node:fs"
import { UsageError } from "./CliError.js"
import * as Elicit from "./Elicit.js"
import * as Progress from "./Progress.js"

/** The options (spread them into a command's config). */
export const options = {
  args: Options.text("args").pipe(
    Options.withDescription("The tool's arguments: a JSON object, @FILE, or @- (stdin). Default {}."),
    Options.optional
  ),
  timeout: Options.float("timeout").pipe(
    Options.withDescription("Seconds to wait for the result (default SKALD_MCP_CALL_TIMEOUT, else 120)."),
    Options.optional
  ),
  json: Options.boolean("json").pipe(Options.withDescription("Print the result as JSON instead of text.")),
  elicit: Options.text("elicit").pipe(
    Options.withDescription(
      "The answer to every elicitation of the call: an ElicitResult as JSON, @FILE or @- (stdin; use it " +
        "for secrets). Without it: a prompt on a terminal, else decline."
    ),
    Options.optional
  )
}

/** What the options said. */
export interface Given {
  readonly args: Option.Option<string>
  readonly timeout: Option.Option<number>
  readonly elicit: Option.Option<string>
}

/** A parsed call: the arguments, the elicitation handler, and where misfit answers are recorded. */
export interface Parsed {
  readonly params: McpClient.JsonObject
  readonly timeout: Option.Option<Duration.Duration>
  readonly handler: Elicitation.Handler
  /** An `--elicit` answer that did not fit a form: a usage error, reported after the call. */
  readonly problems: Elicit.Problems
}

const readText = (option: string, spec: string) =>
  spec === "@-"
    ? Effect.try({
      try: () => Fs.readFileSync(0, "utf8"),
      catch: () => new UsageError({ message: `--${option} @- could not read standard input` })
    })
    : spec.startsWith("@")
    ? Effect.try({
      try: () => Fs.readFileSync(spec.slice(1), "utf8"),
      catch: () => new UsageError({ message: `--${option}: cannot read the file ${spec.slice(1)}` })
    })
    : Effect.succeed(spec)

/** `--args`: a JSON object given inline, in a file, or on stdin. */
export const parseArgs = (spec: string) =>
  Effect.gen(function*() {
    const text = yield* readText("args", spec)
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
export const parse = (given: Given): Effect.Effect<Parsed, UsageError, Scope.Scope> =>
  Effect.gen(function*() {
    if (Option.isSome(given.args) && Option.isSome(given.elicit) && given.args.value === "@-" && given.elicit.value === "@-") {
      return yield* new UsageError({ message: "--args @- and --elicit @- cannot both read standard input: put one in a file" })
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
