/**
 * `skald sessions list|show|rm`: the agent's chat sessions (agent/ChatStore.ts). The commands and
 * their options; what they do is in AgentHandlers.ts. (`skald agent run` joins them once a model
 * provider is configured.)
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import * as Lazy from "./Lazy.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print JSON instead of text."))

const sessionId = Args.text({ name: "ID" }).pipe(Args.withDescription("The session's id (see `skald sessions list`)."))

const load = () => import("./AgentHandlers.js")

const listConfig = { json, home: Host.home }

/** What `skald sessions list` parsed. */
export type ListArgs = Command.Command.ParseConfig<typeof listConfig>

const list = Command.make("list", listConfig, Lazy.handler(load, (m) => m.list)).pipe(
  Command.withDescription(Help.about({
    summary: "List the chat sessions, the most recently active first: id, agent, last activity, title.",
    details: ["--json: an array of {id, agent, title?, createdAt, updatedAt}."],
    usage: ["skald sessions list [options]"],
    examples: ["skald sessions list", "skald sessions list --json"]
  }))
)

const showConfig = { id: sessionId, json, home: Host.home }

/** What `skald sessions show` parsed. */
export type ShowArgs = Command.Command.ParseConfig<typeof showConfig>

const show = Command.make("show", showConfig, Lazy.handler(load, (m) => m.show)).pipe(
  Command.withDescription(Help.about({
    summary: "Print a chat session's messages and tool calls, in order.",
    details: [
      "Text: one block per message; each tool call with its status and the start of its result.",
      "--json: {session, messages: [{seq, role, text, createdAt, calls: [{callId, name, arguments, " +
      "status, result, resultType}]}]}, results whole."
    ],
    usage: ["skald sessions show [options] ID"],
    examples: ["skald sessions show 5b1c…", "skald sessions show --json 5b1c…"]
  }))
)

const rmConfig = { id: sessionId, home: Host.home }

/** What `skald sessions rm` parsed. */
export type RmArgs = Command.Command.ParseConfig<typeof rmConfig>

const rm = Command.make("rm", rmConfig, Lazy.handler(load, (m) => m.rm)).pipe(
  Command.withDescription(Help.about({
    summary: "Delete a chat session with its messages and tool calls.",
    usage: ["skald sessions rm [options] ID"],
    examples: ["skald sessions rm 5b1c…"]
  }))
)

/** `skald sessions …`. */
export const sessions = Command.make("sessions").pipe(
  Command.withDescription(Help.about({
    summary: "The agent's chat sessions (stored in the home's database).",
    usage: ["skald sessions COMMAND [options]"],
    examples: ["skald sessions list", "skald sessions show ID", "skald sessions rm ID"]
  })),
  Command.withSubcommands([list, show, rm])
)
