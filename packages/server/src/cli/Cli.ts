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
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import { ExitStatus, ExitWith, UsageError } from "./CliError.js"
import { reportFailures, stdout } from "./Io.js"
import * as CallOptions from "./CallOptions.js"
import * as Elicit from "./Elicit.js"
import * as Events from "./Events.js"
import * as Help from "./Help.js"
import * as McpCommands from "./McpCommands.js"
import * as Output from "./Output.js"
import * as SecretCommands from "./SecretCommands.js"
import * as Serve from "./Serve.js"
import * as Target from "./Target.js"

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
).pipe(Command.withDescription(Help.about({
  summary: "List the tools of an MCP server, one a line (--json: the tools exactly as the server sent them).",
  usage: ["skald tools [options] -- CMD [ARGS…]", "skald tools [options] --http URL"],
  examples: [
    "skald tools -- npx -y @modelcontextprotocol/server-everything stdio",
    "skald tools --json --http http://127.0.0.1:3001/mcp"
  ]
})))

const call = Command.make(
  "call",
  {
    tool: Args.text({ name: "TOOL" }).pipe(Args.withDescription("The tool to call.")),
    ...CallOptions.options,
    mediaDir: Options.text("media-dir").pipe(
      Options.withDescription("Where media results are written (default ./skald-media)."),
      Options.withDefault("skald-media")
    ),
    ...Target.options
  },
  ({ apiKeyEnv, http, json, mediaDir, tool, ...given }) =>
    Effect.gen(function*() {
      const parsed = yield* CallOptions.parse(given)
      const { callOptions, done } = CallOptions.display(parsed)
      // The result is printed before the connection closes (a server may take seconds to stop).
      const exit = yield* Effect.exit(withClient({ http, apiKeyEnv }, (client) =>
        client.callTool(tool, parsed.params, callOptions).pipe(
          Effect.ensuring(done),
          Effect.tap((outcome) =>
            parsed.problems.first() !== undefined ? Effect.void : Effect.flatMap(
              json ? Effect.succeed(Output.json(outcome.wire)) : Output.renderResult(outcome.result, mediaDir),
              stdout
            )
          )
        ), parsed.handler))
      // An --elicit answer that did not fit the form is a usage error, whatever the call did after.
      const problem = parsed.problems.first()
      if (problem !== undefined) return yield* new UsageError({ message: problem })
      const outcome = yield* exit
      if (outcome.result._tag !== "Task" && outcome.result.isError) {
        return yield* new ExitWith({ status: ExitStatus.ToolError })
      }
    }).pipe(Effect.scoped, reportFailures)
).pipe(
  Command.withDescription(Help.about({
    summary: "Call one tool of an MCP server and print its result (--json: the CallToolResult exactly as sent).",
    details: ["Exit status 1 when the tool answers isError, 2 on any other failure (see docs/cli.md)."],
    usage: ["skald call [options] TOOL -- CMD [ARGS…]", "skald call [options] TOOL --http URL"],
    examples: [
      "skald call echo --args '{\"message\":\"hi\"}' -- node server.js",
      "echo '{\"action\":\"accept\"}' | skald call confirm --elicit @- --timeout 30 -- node server.js"
    ]
  }))
)

/** The root command. */
export const command = Command.make("skald").pipe(
  Command.withDescription(Help.about({
    summary: "Skald, an Effect-native MCP host. Options come before `--`; the server's command line after it.",
    usage: ["skald COMMAND [options] [-- CMD [ARGS…]]"],
    examples: ["skald tools -- node server.js", "skald mcp add weather -- node weather.js", "skald serve"]
  })),
  Command.withSubcommands([tools, call, McpCommands.command, SecretCommands.command, Serve.command, Events.command])
)

/** The version `--version` prints. */
export const VERSION = "0.1.0"

/** A hint for @effect/cli's parse errors. */
const parseHint = (text: string): string | undefined =>
  /unknown argument/i.test(text)
    ? "options come before `--` and the server's command line after it, e.g. `skald tools -- node server.js`"
    : undefined

/**
 * Parses and runs a command line (argv without node and the script, already split at `--`):
 * help, completions and the global options first (Help.ts), then @effect/cli.
 */
export const run = (argv: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    const root = Help.tree(command)
    const prepared = Help.prepare(root, argv)
    switch (prepared._tag) {
      case "Help":
        return stdout(Help.render(prepared.node, Help.widthOf(process.stdout), VERSION, Help.colourAllowed(process.stdout)))
      case "Completions": {
        const script = Help.completions(root, prepared.shell)
        return script === undefined
          ? reportFailures(Effect.fail(new UsageError({ message: "--completions takes bash, zsh or fish" })))
          : stdout(script)
      }
      case "Problem":
        return reportFailures(Effect.fail(new UsageError({ message: prepared.message })))
      case "Run": {
        const cli = Help.plainErrors(
          Command.run(command, { name: "skald", version: VERSION })(["node", "skald", ...prepared.argv]),
          parseHint
        )
        return prepared.logLevel === undefined ? cli : Logger.withMinimumLogLevel(cli, prepared.logLevel)
      }
    }
  })
