/**
 * The server a one-off command talks to: `--http URL [--api-key-env VAR]`, or `-- CMD [ARGS…]`
 * (stdio). Everything after the first `--` of the command line is the server's, passed untouched.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import { HttpTransport, McpClient, StdioTransport } from "@skald/mcp"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
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

/** The `--http` and `--api-key-env` options, shared by every one-off command. */
export const options = {
  http: Options.text("http").pipe(
    Options.withDescription("The URL of a streamable HTTP (or legacy SSE) MCP server, instead of `-- CMD`."),
    Options.optional
  ),
  apiKeyEnv: Options.text("api-key-env").pipe(
    Options.withDescription("The environment variable holding the server's api key (sent as a bearer token)."),
    Options.optional
  )
}

/** What the options said. */
export interface Http {
  readonly http: Option.Option<string>
  readonly apiKeyEnv: Option.Option<string>
}

/** A client layer for the target of this command line. */
export const clientLayer = (target: Http) =>
  Effect.gen(function*() {
    const commandLine = yield* ServerCommandLine
    const settings = yield* Settings.Settings
    // Errors name the server by its serverInfo.name once initialize answered; before that by its
    // URL's host, or its executable's basename and first argument (`npx @scope/server-x`).
    const clientOptions: McpClient.Options = {
      callTimeout: settings.callTimeout,
      startTimeout: settings.startTimeout,
      nameFromServerInfo: true
    }
    if (Option.isSome(target.http)) {
      if (commandLine.length > 0) {
        return yield* new UsageError({ message: "give either --http URL or `-- CMD`, not both" })
      }
      const url = target.http.value
      if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
        return yield* new UsageError({ message: `--http needs an http(s) URL, got ${JSON.stringify(url)}` })
      }
      let apiKey: Redacted.Redacted<string> | undefined
      if (Option.isSome(target.apiKeyEnv)) {
        const value = process.env[target.apiKeyEnv.value]
        if (value === undefined || value.length === 0) {
          return yield* new UsageError({ message: `--api-key-env ${target.apiKeyEnv.value}: that variable is not set` })
        }
        apiKey = Redacted.make(value)
      }
      // The transport brings its own HTTP (pooled keep-alive node:http): no HttpClient layer to provide.
      return HttpTransport.layerClient({ server: new URL(url).host, url, apiKey }, clientOptions)
    }
    if (Option.isSome(target.apiKeyEnv)) {
      return yield* new UsageError({ message: "--api-key-env goes with --http" })
    }
    const [command, ...args] = commandLine
    if (command === undefined || command.length === 0) {
      return yield* new UsageError({
        message: "no MCP server given: use --http URL, or put the server's command line after `--`, " +
          "e.g. `skald tools -- node server.js`"
      })
    }
    const name = args[0] === undefined ? Path.basename(command) : `${Path.basename(command)} ${args[0]}`
    return StdioTransport.layerClient({ server: name, command, args }, clientOptions)
  })
