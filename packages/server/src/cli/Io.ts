/**
 * The command line's two streams: stdout carries only the result; errors, progress and prompts
 * go to stderr. And the one place a failure becomes "skald: <what happened>" plus exit status 2.
 *
 * @since 0.1.0
 */
import * as ValidationError from "@effect/cli/ValidationError"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import { ExitStatus, ExitWith, hintFor, UsageError } from "./CliError.js"

/** Prints the result on stdout (a trailing newline added when missing). */
export const stdout = (text: string) =>
  Effect.sync(() => void process.stdout.write(text.endsWith("\n") ? text : `${text}\n`))

/** Writes bytes on stdout as they are (a log file's contents). */
export const stdoutBytes = (bytes: Uint8Array) => Effect.sync(() => void process.stdout.write(bytes))

/** Prints a line on stderr. */
export const stderr = (text: string) => Effect.sync(() => void process.stderr.write(`${text}\n`))

/**
 * Standard input to its end, for `--OPTION @-`. Read as a stream: `readFileSync(0)` fails with
 * EAGAIN when the input is not there yet and stdin is a non-blocking pipe, as it is once the CLI
 * is loaded.
 */
export const readStdin = (option: string) =>
  Effect.async<string, UsageError>((resume) => {
    const chunks: Array<Buffer> = []
    const onData = (chunk: Buffer) => chunks.push(chunk)
    const onEnd = () => {
      done()
      resume(Effect.succeed(Buffer.concat(chunks).toString("utf8")))
    }
    const onError = () => {
      done()
      resume(Effect.fail(new UsageError({ message: `--${option} @- could not read standard input` })))
    }
    const done = () => {
      process.stdin.off("data", onData).off("end", onEnd).off("error", onError)
      process.stdin.pause()
    }
    process.stdin.on("data", onData).once("end", onEnd).once("error", onError)
    process.stdin.resume()
    return Effect.sync(done)
  })

/**
 * An option's text given as itself, `@FILE` or `@-` (stdin). An unreadable file is a usage error
 * naming the option and the file (never its contents).
 */
export const readSpec = (option: string, spec: string) =>
  spec === "@-"
    ? readStdin(option)
    : spec.startsWith("@")
    ? Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(spec.slice(1))).pipe(
      Effect.mapError(() => new UsageError({ message: `--${option}: cannot read the file ${spec.slice(1)}` }))
    )
    : Effect.succeed(spec)

/** What an error says, never empty; with the command line's hint for it, if any. */
export const describeFailure = (error: unknown): string => {
  const message = typeof error === "object" && error !== null && "message" in error
    ? String((error as { message: unknown }).message)
    : String(error)
  const said = message.trim().length > 0
    ? message
    : `${
      typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : "an error"
    } without a message (please report it)`
  const hint = hintFor(error)
  return hint === undefined ? said : `${said}\n${hint}`
}

/**
 * Prints what went wrong on stderr (first line: what happened and what to do) and ends with status
 * 2. Applied once, by the runner (Cli.run), around every command. @effect/cli's own parse errors
 * pass through: it printed them already (Help.plainErrors), and main.ts gives them their status.
 */
export const reportFailures = <A, R>(
  effect: Effect.Effect<A, unknown, R>
): Effect.Effect<A, ExitWith | ValidationError.ValidationError, R> =>
  effect.pipe(
    Effect.catchAll((error) => {
      if (error instanceof ExitWith || ValidationError.isValidationError(error)) return Effect.fail(error)
      return Effect.zipRight(
        stderr(`skald: ${describeFailure(error)}`),
        Effect.fail(new ExitWith({ status: ExitStatus.Failure }))
      )
    })
  )

/**
 * The diagnostics logger: `skald: <level>: [<server>] <text>` on stderr, the server named by
 * the `mcp.server` annotation of the line (every line of a connection carries it).
 */
export const stderrLogger = Logger.make(({ annotations, logLevel, message }) => {
  const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
  const server = Option.getOrUndefined(HashMap.get(annotations, "mcp.server"))
  const who = typeof server === "string" && server.length > 0 ? `[${server}] ` : ""
  process.stderr.write(`skald: ${logLevel.label.toLowerCase()}: ${who}${text}\n`)
})
