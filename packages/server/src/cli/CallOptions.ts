/**
 * The options of a tool call, one definition for `skald call` and `skald mcp call`:
 * `--args JSON|@FILE|@-`, `--timeout S`, `--elicit ANSWER|@FILE|@-`, `--json`. Their parsing
 * into what `McpClient.callTool` takes is in CallParse.ts, which only the handlers load.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import type * as Option from "effect/Option"

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
