/**
 * `skald model set|show`: which model the agent talks to (ModelSettings.ts). The commands and
 * their options; what they do is in ModelHandlers.ts. The environment (`SKALD_LLM_*`) wins over
 * what `set` stores, field by field.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import * as Lazy from "./Lazy.js"

const setConfig = {
  provider: Options.text("provider").pipe(
    Options.withDescription("openai (any OpenAI-compatible chat-completions server) or anthropic."),
    Options.optional
  ),
  baseUrl: Options.text("base-url").pipe(
    Options.withDescription(
      "The API's base URL (default http://127.0.0.1:11434/v1 for openai, https://api.anthropic.com for anthropic)."
    ),
    Options.optional
  ),
  model: Options.text("model").pipe(
    Options.withDescription("The model's name, e.g. claude-sonnet-4-5."),
    Options.optional
  ),
  apiKey: Options.text("api-key").pipe(
    Options.withDescription(
      "The API key: a ${NAME} reference into the secret store, or a literal (moved into the store as SKALD_LLM_API_KEY; prefer --api-key-stdin: argv is visible to other users)."
    ),
    Options.optional
  ),
  apiKeyStdin: Options.boolean("api-key-stdin").pipe(
    Options.withDescription(
      "Read the API key from stdin (one trailing newline stripped) and move it into the secret store."
    )
  ),
  home: Host.home
}

/** What `skald model set` parsed. */
export type SetArgs = Command.Command.ParseConfig<typeof setConfig>

const set = Command.make("set", setConfig, Lazy.handler(() => import("./ModelHandlers.js"), (m) => m.set)).pipe(
  Command.withDescription(Help.about({
    summary: "Store the model settings (the SKALD_LLM_* environment variables win over them, field by field).",
    usage: ["skald model set [--provider P] [--base-url URL] [--model M] [--api-key ${NAME} | --api-key-stdin]"],
    examples: [
      "printf %s \"$ANTHROPIC_API_KEY\" | skald model set --provider anthropic --model claude-sonnet-4-5 --api-key-stdin",
      "skald model set --provider openai --base-url http://127.0.0.1:11434/v1 --model llama3.2"
    ]
  }))
)

const showConfig = {
  json: Options.boolean("json").pipe(Options.withDescription("Print the settings as JSON ({field: {value, source}}).")),
  home: Host.home
}

/** What `skald model show` parsed. */
export type ShowArgs = Command.Command.ParseConfig<typeof showConfig>

const show = Command.make("show", showConfig, Lazy.handler(() => import("./ModelHandlers.js"), (m) => m.show)).pipe(
  Command.withDescription(Help.about({
    summary: "Show the effective model settings and where each comes from (env, stored, default); never the key.",
    usage: ["skald model show [--json]"],
    examples: ["skald model show", "skald model show --json"]
  }))
)

/** `skald model …`. */
export const command = Command.make("model").pipe(
  Command.withDescription(Help.about({
    summary: "The model the agent talks to: provider, base URL, model, API key.",
    usage: ["skald model COMMAND [options]"],
    examples: ["skald model show", "skald model set --model claude-sonnet-4-5"]
  })),
  Command.withSubcommands([set, show])
)
