/**
 * The `skald` command line (DESIGN §5). stdout carries only the result; errors, progress and
 * prompts go to stderr.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { McpClient } from "@skald/mcp"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { ExitStatus, ExitWith, UsageError } from "./CliError.js"
import * as Output from "./Output.js"
import * as Target from "./Target.js"
import * as TaskProgress from "./TaskProgress.js"

/** How long `skald tools` waits for `tools/list_changed` after a listing before it prints. */
export const TOOLS_QUIET_PERIOD = Duration.millis(300)

const stdout = (text: string) => Effect.sync(() => void process.stdout.write(text.endsWith("\n") ? text : `${text}\n`))
const stderr = (text: string) => Effect.sync(() => void process.stderr.write(`${text}\n`))

/** Prints what went wrong on stderr (first line: what happened and what to do) and ends with status 2. */
const reportFailures = <A, R>(effect: Effect.Effect<A, unknown, R>): Effect.Effect<A, ExitWith, R> =>
  effect.pipe(
    Effect.catchAll((error) => {
      if (error instanceof ExitWith) return Effect.fail(error)
      const message = typeof error === "object" && error !== null && "message" in error
        ? String((error as { message: unknown }).message)
        : String(error)
      return Effect.zipRight(stderr(`skald: ${message}`), Effect.fail(new ExitWith({ status: ExitStatus.Failure })))
    })
  )

/** Runs `use` with a client of the command line's target, closing it afterwards. */
const withClient = <A, E, R>(use: (client: McpClient.Service) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const layer = yield* Target.clientLayer
    return yield* Effect.flatMap(McpClient.McpClient, use).pipe(Effect.provide(layer))
  })

const json = Options.boolean("json").pipe(
  Options.withDescription("Print JSON exactly as the server sent it (MCP wire shape) instead of text.")
)

const tools = Command.make("tools", { json }, ({ json }) =>
  withClient((client) =>
    Effect.gen(function*() {
      yield* client.refreshTools
      // Servers may register tools right after initialize and announce them with
      // tools/list_changed: keep taking new lists until none came for a quiet period.
      yield* client.toolListChanges.pipe(Stream.timeout(TOOLS_QUIET_PERIOD), Stream.runDrain)
      const list = yield* client.toolList
      yield* stdout(json ? Output.json(list.wire) : Output.toolLines(list.tools))
    })
  ).pipe(reportFailures)
).pipe(Command.withDescription("List the tools of an MCP server: skald tools [--json] -- CMD [ARGS…]"))

const parseArgs = (text: string) =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: () => new UsageError({ message: `--args is not valid JSON: ${text.length > 80 ? `${text.slice(0, 80)}…` : text}` })
  }).pipe(
    Effect.filterOrFail(
      (value): value is McpClient.JsonObject => typeof value === "object" && value !== null && !Array.isArray(value),
      () => new UsageError({ message: "--args must be a JSON object, e.g. --args '{\"message\":\"hi\"}'" })
    )
  )

const call = Command.make(
  "call",
  {
    tool: Args.text({ name: "TOOL" }).pipe(Args.withDescription("The tool to call.")),
    args: Options.text("args").pipe(
      Options.withDescription("The tool's arguments as a JSON object (default {})."),
      Options.optional
    ),
    timeout: Options.float("timeout").pipe(
      Options.withDescription("Seconds to wait for the result (default SKALD_MCP_CALL_TIMEOUT or 120)."),
      Options.optional
    ),
    json,
    mediaDir: Options.text("media-dir").pipe(
      Options.withDescription("Where media results are written (default ./skald-media)."),
      Options.withDefault("skald-media")
    )
  },
  ({ args, json, mediaDir, timeout, tool }) =>
    Effect.gen(function*() {
      const params = Option.isSome(args) ? yield* parseArgs(args.value) : {}
      if (Option.isSome(timeout) && !(timeout.value > 0)) {
        return yield* new UsageError({ message: "--timeout must be a positive number of seconds" })
      }
      const progress = TaskProgress.make(process.stderr)
      // The result is printed before the connection closes (a server may take seconds to stop).
      const outcome = yield* withClient((client) =>
        client.callTool(tool, params, {
          ...(Option.isSome(timeout) ? { timeout: Duration.millis(Math.round(timeout.value * 1000)) } : {}),
          onTaskStatus: progress.report
        }).pipe(
          Effect.ensuring(progress.done),
          Effect.tap((outcome) =>
            Effect.flatMap(
              json ? Effect.succeed(Output.json(outcome.wire)) : Output.renderResult(outcome.result, mediaDir),
              stdout
            )
          )
        )
      )
      if (outcome.result._tag !== "Task" && outcome.result.isError) {
        return yield* new ExitWith({ status: ExitStatus.ToolError })
      }
    }).pipe(reportFailures)
).pipe(
  Command.withDescription(
    "Call one tool of an MCP server: skald call TOOL [--args JSON] [--timeout S] [--json] [--media-dir DIR] -- CMD [ARGS…]"
  )
)

/** The root command. */
export const command = Command.make("skald").pipe(
  Command.withDescription("Skald, an Effect-native MCP host. Options come before `--`; the server's command line after it."),
  Command.withSubcommands([tools, call])
)

/** Parses and runs a command line (argv without node and the script, already split at `--`). */
export const run = (argv: ReadonlyArray<string>) =>
  Command.run(command, { name: "skald", version: "0.1.0" })(["node", "skald", ...argv])
