/**
 * The server a one-off command talks to: `-- CMD [ARGS…]` (stdio). Everything after the first
 * `--` of the command line is the server's, passed untouched.
 *
 * @since 0.1.0
 */
import { McpClient, StdioTransport } from "@skald/mcp"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Path from "node:path"
import { UsageError } from "./CliError.js"
import * as Settings from "./Settings.js"

/** The server command line given after `--` (empty when none was given). */
export class ServerCommandLine extends Context.Tag("@skald/server/cli/ServerCommandLine")<
  ServerCommandLine,
  ReadonlyArray<string>
>() {}

/** Splits argv (without node and the script) at the first `--`. */
export const splitArgv = (argv: ReadonlyArray<string>): { readonly own: Array<string>; readonly server: Array<string> } => {
  const at = argv.indexOf("--")
  return at === -1 ? { own: [...argv], server: [] } : { own: argv.slice(0, at), server: argv.slice(at + 1) }
}

/** A client layer for the target of this command line. */
export const clientLayer = Effect.gen(function*() {
  const commandLine = yield* ServerCommandLine
  const [command, ...args] = commandLine
  if (command === undefined || command.length === 0) {
    return yield* new UsageError({
      message: "no MCP server given: put the server's command line after `--`, e.g. `skald tools -- node server.js`"
    })
  }
  const settings = yield* Settings.Settings
  const transport = StdioTransport.layer({ server: Path.basename(command), command, args })
  return McpClient.layer({ callTimeout: settings.callTimeout, startTimeout: settings.startTimeout }).pipe(
    Layer.provide(transport)
  )
})
