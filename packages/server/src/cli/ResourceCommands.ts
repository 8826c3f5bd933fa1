/**
 * `skald resources|read|prompts|prompt` for the one-off target (Target.ts); the same four for
 * registered servers are `skald mcp resources|read|prompts|prompt` (McpCommands.ts). The commands
 * and their options; what they do is in ResourceHandlers.ts, loaded when one of them runs (Lazy.ts).
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as Help from "./Help.js"
import * as Lazy from "./Lazy.js"
import * as Target from "./Target.js"

/** The handlers' module, loaded when one of these commands runs. */
export const load = () => import("./ResourceHandlers.js")

/** `--json`, shared with the `skald mcp` forms. */
export const json = Options.boolean("json").pipe(
  Options.withDescription("Print JSON exactly as the server sent it (MCP wire shape) instead of text.")
)

/** `--media-dir`, shared with `skald mcp read`. */
export const mediaDir = Options.text("media-dir").pipe(
  Options.withDescription("Where binary (blob) contents are written (default ./skald-media)."),
  Options.withDefault("skald-media")
)

/** The URI argument, shared with `skald mcp read`. */
export const uri = Args.text({ name: "URI" }).pipe(Args.withDescription("The resource's URI."))

/** The prompt's `--args`, shared with `skald mcp prompt`. */
export const promptArgs = Options.text("args").pipe(
  Options.withDescription("The prompt's arguments: a JSON object of strings, @FILE, or @- (stdin). Default {}."),
  Options.optional
)

const resourcesConfig = { json, ...Target.options }

/** What `skald resources` parsed. */
export type ResourcesArgs = Command.Command.ParseConfig<typeof resourcesConfig>

/** `skald resources`. */
export const resources = Command.make("resources", resourcesConfig, Lazy.handler(load, (m) => m.resources)).pipe(
  Command.withDescription(Help.about({
    summary: "List the resources and resource templates of an MCP server, one a line.",
    details: ["--json: {\"resources\": […], \"resourceTemplates\": […]} exactly as the server sent them."],
    usage: ["skald resources [options] -- CMD [ARGS…]", "skald resources [options] --http URL"],
    examples: [
      "skald resources -- npx -y @modelcontextprotocol/server-everything stdio",
      "skald resources --json --http http://127.0.0.1:3001/mcp"
    ]
  }))
)

const readConfig = { uri, json, mediaDir, ...Target.options }

/** What `skald read` parsed. */
export type ReadArgs = Command.Command.ParseConfig<typeof readConfig>

/** `skald read`. */
export const read = Command.make("read", readConfig, Lazy.handler(load, (m) => m.read)).pipe(
  Command.withDescription(Help.about({
    summary: "Read one resource of an MCP server: text as text, binary contents written to files under --media-dir.",
    details: ["--json: the ReadResourceResult exactly as sent (binary contents stay base64)."],
    usage: ["skald read [options] URI -- CMD [ARGS…]", "skald read [options] URI --http URL"],
    examples: [
      "skald read demo://resource/dynamic/text/1 -- node server.js",
      "skald read --json demo://resource/dynamic/blob/1 -- npx -y @modelcontextprotocol/server-everything stdio"
    ]
  }))
)

const promptsConfig = { json, ...Target.options }

/** What `skald prompts` parsed. */
export type PromptsArgs = Command.Command.ParseConfig<typeof promptsConfig>

/** `skald prompts`. */
export const prompts = Command.make("prompts", promptsConfig, Lazy.handler(load, (m) => m.prompts)).pipe(
  Command.withDescription(Help.about({
    summary: "List the prompts of an MCP server and their arguments (* required), one a line.",
    details: ["--json: the prompts exactly as the server sent them."],
    usage: ["skald prompts [options] -- CMD [ARGS…]", "skald prompts [options] --http URL"],
    examples: ["skald prompts -- node server.js", "skald prompts --json --http http://127.0.0.1:3001/mcp"]
  }))
)

const promptConfig = {
  name: Args.text({ name: "PROMPT" }).pipe(Args.withDescription("The prompt to get.")),
  args: promptArgs,
  json,
  ...Target.options
}

/** What `skald prompt` parsed. */
export type PromptArgs = Command.Command.ParseConfig<typeof promptConfig>

/** `skald prompt`. */
export const prompt = Command.make("prompt", promptConfig, Lazy.handler(load, (m) => m.prompt)).pipe(
  Command.withDescription(Help.about({
    summary: "Get one prompt of an MCP server with its arguments and print its messages.",
    details: ["--json: the GetPromptResult exactly as sent."],
    usage: ["skald prompt [options] PROMPT -- CMD [ARGS…]", "skald prompt [options] PROMPT --http URL"],
    examples: ["skald prompt args-prompt --args '{\"city\":\"Oslo\"}' -- node server.js"]
  }))
)
