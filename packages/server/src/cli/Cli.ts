/**
 * The `skald` command line (DESIGN §5). stdout carries only the result; errors, progress and
 * prompts go to stderr. This module and the *Commands.ts files are the command tree (commands,
 * options, help); what a command does is in its *Handler(s).ts module, loaded when it runs (Lazy.ts).
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as AgentCommands from "./AgentCommands.js"
import * as ApprovalCommands from "./ApprovalCommands.js"
import * as CallOptions from "./CallOptions.js"
import { UsageError } from "./CliError.js"
import * as Events from "./Events.js"
import * as Help from "./Help.js"
import * as InboxCommands from "./InboxCommands.js"
import { reportFailures, stdout } from "./Io.js"
import * as Lazy from "./Lazy.js"
import * as McpCommands from "./McpCommands.js"
import * as ModelCommands from "./ModelCommands.js"
import * as ResourceCommands from "./ResourceCommands.js"
import * as SecretCommands from "./SecretCommands.js"
import * as Serve from "./Serve.js"
import * as Target from "./Target.js"
import * as TicCommands from "./TicCommands.js"

const json = Options.boolean("json").pipe(
  Options.withDescription("Print JSON exactly as the server sent it (MCP wire shape) instead of text.")
)

const toolsConfig = { json, ...Target.options }

/** What `skald tools` parsed. */
export type ToolsArgs = Command.Command.ParseConfig<typeof toolsConfig>

const tools = Command.make("tools", toolsConfig, Lazy.handler(() => import("./ClientHandlers.js"), (m) => m.tools))
  .pipe(Command.withDescription(Help.about({
    summary: "List the tools of an MCP server, one a line (--json: the tools exactly as the server sent them).",
    usage: ["skald tools [options] -- CMD [ARGS…]", "skald tools [options] --http URL"],
    examples: [
      "skald tools -- npx -y @modelcontextprotocol/server-everything stdio",
      "skald tools --json --http http://127.0.0.1:3001/mcp"
    ]
  })))

const callConfig = {
  tool: Args.text({ name: "TOOL" }).pipe(Args.withDescription("The tool to call.")),
  ...CallOptions.options,
  mediaDir: Options.text("media-dir").pipe(
    Options.withDescription("Where media results are written (default ./skald-media)."),
    Options.withDefault("skald-media")
  ),
  ...Target.options
}

/** What `skald call` parsed. */
export type CallArgs = Command.Command.ParseConfig<typeof callConfig>

const call = Command.make("call", callConfig, Lazy.handler(() => import("./ClientHandlers.js"), (m) => m.call)).pipe(
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
  Command.withSubcommands([
    tools,
    call,
    ResourceCommands.resources,
    ResourceCommands.read,
    ResourceCommands.prompts,
    ResourceCommands.prompt,
    McpCommands.command,
    SecretCommands.command,
    Serve.command,
    Events.command,
    ModelCommands.command,
    AgentCommands.agent,
    AgentCommands.chat,
    AgentCommands.sessions,
    ApprovalCommands.command,
    InboxCommands.command,
    TicCommands.command
  ])
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
 * help, completions and the global options first (Help.ts), then @effect/cli. The one place a
 * failure becomes what stderr says and the exit status (`reportFailures`): handlers just fail.
 */
export const run = (argv: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    const root = Help.tree(command)
    const prepared = Help.prepare(root, argv)
    switch (prepared._tag) {
      case "Help":
        return stdout(
          Help.render(prepared.node, Help.widthOf(process.stdout), VERSION, Help.colourAllowed(process.stdout))
        )
      case "Completions": {
        const script = Help.completions(root, prepared.shell)
        return script === undefined
          ? Effect.fail(new UsageError({ message: "--completions takes bash, zsh or fish" }))
          : stdout(script)
      }
      case "Problem":
        return Effect.fail(new UsageError({ message: prepared.message }))
      case "Run": {
        const malformed = McpCommands.keyValueProblem(prepared.argv)
        if (malformed !== undefined) return Effect.fail(new UsageError({ message: malformed }))
        const cli = Help.plainErrors(
          Command.run(command, { name: "skald", version: VERSION })([
            "node",
            "skald",
            ...McpCommands.groupKeyValues(prepared.argv)
          ]),
          parseHint
        )
        return prepared.logLevel === undefined ? cli : Logger.withMinimumLogLevel(cli, prepared.logLevel)
      }
    }
  }).pipe(reportFailures)
