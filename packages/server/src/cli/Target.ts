/**
 * The server a one-off command talks to: `--http URL [--api-key-env VAR]`, or `-- CMD [ARGS…]`
 * (stdio), and the folders it is offered as roots (`--root PATH`, repeatable). Everything after the first `--` of the command line is the server's, passed untouched.
 * The options only: the client layer they lead to is in TargetClient.ts, which the command tree
 * does not load.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import * as Context from "effect/Context"
import type * as Option from "effect/Option"

/** The server command line given after `--` (empty when none was given). */
export class ServerCommandLine extends Context.Tag("@skald/server/cli/ServerCommandLine")<
  ServerCommandLine,
  ReadonlyArray<string>
>() {}

/** Splits argv (without node and the script) at the first `--`. */
export const splitArgv = (
  argv: ReadonlyArray<string>
): { readonly own: Array<string>; readonly server: Array<string> } => {
  const at = argv.indexOf("--")
  return at === -1 ? { own: [...argv], server: [] } : { own: argv.slice(0, at), server: argv.slice(at + 1) }
}

/** The `--http`, `--api-key-env` and `--root` options, shared by every one-off command. */
export const options = {
  http: Options.text("http").pipe(
    Options.withDescription("The URL of a streamable HTTP (or legacy SSE) MCP server, instead of `-- CMD`."),
    Options.optional
  ),
  apiKeyEnv: Options.text("api-key-env").pipe(
    Options.withDescription("The environment variable holding the server's api key (sent as a bearer token)."),
    Options.optional
  ),
  root: Options.text("root").pipe(
    Options.withDescription("A folder the server is offered as a root (MCP roots); repeat it for several."),
    Options.repeated
  )
}

/** What the options said. */
export interface Http {
  readonly http: Option.Option<string>
  readonly apiKeyEnv: Option.Option<string>
  readonly root: ReadonlyArray<string>
}
