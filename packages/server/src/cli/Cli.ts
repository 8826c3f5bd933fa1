/**
 * The `skald` command line (DESIGN §5). stdout carries only the result; errors, progress and
 * prompts go to stderr.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { Elicitation, McpClient } from "@skald/mcp"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { ExitStatus, ExitWith, UsageError } from "./CliError.js"
import { reportFailures, stdout } from "./Io.js"
import * as Elicit from "./Elicit.js"
import * as Events from "./Events.js"
import * as McpCommands from "./McpCommands.js"
import * as Output from "./Output.js"
import * as SecretCommands from "./SecretCommands.js"
import * as Serve from "./Serve.js"
import * as Target from "./Target.js"
import * as Progress from "./Progress.js"

/** How long `skald tools` waits for `tools/list_changed` after a listing before it prints. */
export const TOOLS_QUIET_PERIOD = Duration.millis(300)

/**
 * Runs `use` with a client of the command line's target, closing it afterwards. The client
 * declares elicitation and answers with `handler` (default: decline).
 */
const withClient = <A, E, R>(
  target: Target.Http,
  use: (client: McpClient.Service) => Effect.Effect<A, E, R>,
  handler: Elicitation.Handler = Elicit.declining
) =>
  Effect.gen(function*() {
    const layer = yield* Target.clientLayer(target)
    return yield* Effect.flatMap(McpClient.McpClient, use).pipe(
      Effect.provide(layer),
      Effect.provideService(Elicitation.ElicitationHandler, handler)
    )
  })

const json = Options.boolean("json").pipe(
  Options.withDescription("Print JSON exactly as the server sent it (MCP wire shape) instead of text.")
)

const tools = Command.make("tools", { json, ...Target.options }, ({ json, ...target }) =>
  withClient(target, (client) =>
    Effect.gen(function*() {
      yield* client.refreshTools
      // Servers may register tools right after initialize and announce them with
      // tools/list_changed: keep taking new lists until none came for a quiet period.
      yield* client.toolListChanges.pipe(Stream.timeout(TOOLS_QUIET_PERIOD), Stream.runDrain)
      const list = yield* client.toolList
      yield* stdout(json ? Output.json(list.wire) : Output.toolLines(list.tools))
    })
  ).pipe(reportFailures)
).pipe(Command.withDescription("List the tools of an MCP server: skald tools [--json] (--http URL | -- CMD [ARGS…])"))

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
    ),
    ...Target.options,
    elicit: Options.text("elicit").pipe(
      Options.withDescription(
        "The answer to every elicitation of this call, an ElicitResult as JSON, @FILE or @- (stdin; " +
          "use it for secrets). Without it: a prompt on a terminal, else decline."
      ),
      Options.optional
    )
  },
  ({ apiKeyEnv, args, elicit, http, json, mediaDir, timeout, tool }) =>
    Effect.gen(function*() {
      const params = Option.isSome(args) ? yield* parseArgs(args.value) : {}
      const problems = Elicit.makeProblems()
      const handler = Option.isSome(elicit)
        ? Elicit.fromAnswer(yield* Elicit.readAnswer(elicit.value), problems, yield* Effect.scope)
        : process.stdin.isTTY === true
        ? Elicit.terminal
        : Elicit.declining
      if (Option.isSome(timeout) && !(timeout.value > 0)) {
        return yield* new UsageError({ message: "--timeout must be a positive number of seconds" })
      }
      // The result is printed before the connection closes (a server may take seconds to stop);
      // progress (and task status) goes to stderr while the call runs.
      const exit = yield* Effect.exit(withClient({ http, apiKeyEnv }, (client) =>
        Progress.showing(process.stderr, (reporting) =>
          client.callTool(tool, params, {
            ...(Option.isSome(timeout) ? { timeout: Duration.millis(Math.round(timeout.value * 1000)) } : {}),
            ...reporting
          })).pipe(
          Effect.tap((outcome) =>
            problems.first() !== undefined ? Effect.void : Effect.flatMap(
              json ? Effect.succeed(Output.json(outcome.wire)) : Output.renderResult(outcome.result, mediaDir),
              stdout
            )
          )
        ), handler))
      // An --elicit answer that did not fit the form is a usage error, whatever the call did after.
      const problem = problems.first()
      if (problem !== undefined) return yield* new UsageError({ message: problem })
      const outcome = yield* exit
      if (outcome.result._tag !== "Task" && outcome.result.isError) {
        return yield* new ExitWith({ status: ExitStatus.ToolError })
      }
    }).pipe(Effect.scoped, reportFailures)
).pipe(
  Command.withDescription(
    "Call one tool of an MCP server: skald call TOOL [--args JSON] [--timeout S] [--json] [--media-dir DIR] " +
      "[--elicit ANSWER] (--http URL | -- CMD [ARGS…])"
  )
)

/** The root command. */
export const command = Command.make("skald").pipe(
  Command.withDescription("Skald, an Effect-native MCP host. Options come before `--`; the server's command line after it."),
  Command.withSubcommands([tools, call, McpCommands.command, SecretCommands.command, Serve.command, Events.command])
)

/** Parses and runs a command line (argv without node and the script, already split at `--`). */
export const run = (argv: ReadonlyArray<string>) =>
  Command.run(command, { name: "skald", version: "0.1.0" })(["node", "skald", ...argv])
