/**
 * `skald agent run`, `skald chat` and `skald sessions list|show|rm`: the agent (agent/Agent.ts)
 * and its chat sessions (agent/ChatStore.ts). The commands and their options; what they do is in
 * AgentHandlers.ts.
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

const listConfig = { json, home: Host.home, verbose: Host.verbose }

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

const showConfig = { id: sessionId, json, home: Host.home, verbose: Host.verbose }

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

const rmConfig = { id: sessionId, home: Host.home, verbose: Host.verbose }

/** What `skald sessions rm` parsed. */
export type RmArgs = Command.Command.ParseConfig<typeof rmConfig>

const rm = Command.make("rm", rmConfig, Lazy.handler(load, (m) => m.rm)).pipe(
  Command.withDescription(Help.about({
    summary: "Delete a chat session with its messages and tool calls.",
    usage: ["skald sessions rm [options] ID"],
    examples: ["skald sessions rm 5b1c…"]
  }))
)

const sessionOption = Options.text("session").pipe(
  Options.withDescription("Continue this session (see `skald sessions list`); a new one when absent."),
  Options.optional
)

const agentOption = Options.text("agent").pipe(
  Options.withDescription("The agent of a new session: <agents dir>/NAME/AGENT.md (default main)."),
  Options.optional
)

const approveOption = Options.choice("approve", ["ask", "allow", "deny"] as const).pipe(
  Options.withDescription(
    "What a tool call that needs approval becomes: ask (on the terminal), allow (run it), deny (refuse it). " +
      "Default ask on a terminal, deny when stdin is not one. Rules: `skald approvals`."
  ),
  Options.optional
)

const verboseOption = Options.boolean("verbose").pipe(
  Options.withAlias("v"),
  Options.withDescription(
    "Say on stderr where the turn runs: via the running host (`skald serve` of the home) or in this process."
  )
)

const runConfig = {
  verbose: verboseOption,
  session: sessionOption,
  agent: agentOption,
  approve: approveOption,
  json: Options.boolean("json").pipe(Options.withDescription("Print every turn event as one JSON line.")),
  home: Host.home,
  message: Args.text({ name: "MESSAGE" }).pipe(Args.withDescription("What to ask the agent."))
}

/** What `skald agent run` parsed. */
export type RunArgs = Command.Command.ParseConfig<typeof runConfig>

const run = Command.make("run", runConfig, Lazy.handler(load, (m) => m.run)).pipe(
  Command.withDescription(Help.about({
    summary: "Run one turn of the agent: connect the enabled MCP servers, ask the model, run its tool calls.",
    details: [
      "stdout: the final assistant text (--json: every turn event as a JSON line, ending with TurnDone, " +
      "TurnStopped or TurnFailed).",
      "stderr: `session: ID` for a new session, one line per tool call, a server that failed to start.",
      "Tool calls pass the approval rules (`skald approvals`): read-only tools run, the others ask — on the " +
      "terminal, or, by --approve, run (allow) or are refused (deny, the default without a terminal: " +
      "stderr names each refused call and how to allow it).",
      "The model: `skald model set` or SKALD_LLM_PROVIDER, SKALD_LLM_BASE_URL, SKALD_LLM_MODEL, SKALD_LLM_API_KEY.",
      "When `skald serve` runs for the home, the turn runs there, over its RPC (its servers, rules and inbox; " +
      "SKALD_TOKEN: its access token): --approve answers this session's approvals, and a server's question " +
      "waits in the host's inbox (`skald inbox`) unless a terminal can ask it. Else it runs in this process.",
      "Exit status 0 done, 2 failed, 130 after Ctrl-C has stopped the turn (what was done is kept)."
    ],
    usage: ["skald agent run [options] MESSAGE"],
    examples: [
      "skald agent run \"What is in notes.txt?\"",
      "skald agent run --session 5b1c… \"And the other file?\"",
      "skald agent run --json \"List the tools you have\"",
      "skald agent run --approve allow \"Tidy my calendar\""
    ]
  }))
)

/** `skald agent …`. */
export const agent = Command.make("agent").pipe(
  Command.withDescription(Help.about({
    summary: "The agent: a model with the enabled MCP servers' tools (sessions are kept in the home's database).",
    usage: ["skald agent COMMAND [options]"],
    examples: ["skald agent run \"Hello\""]
  })),
  Command.withSubcommands([run])
)

const chatConfig = {
  verbose: verboseOption,
  session: sessionOption,
  agent: agentOption,
  approve: approveOption,
  home: Host.home
}

/** What `skald chat` parsed. */
export type ChatArgs = Command.Command.ParseConfig<typeof chatConfig>

/** `skald chat`. */
export const chat = Command.make("chat", chatConfig, Lazy.handler(load, (m) => m.chat)).pipe(
  Command.withDescription(Help.about({
    summary: "Chat with the agent: the answer streams, each tool call is shown as a card.",
    details: [
      "On a terminal: Ctrl-C stops the running turn; Ctrl-C at the prompt, a second Ctrl-C, or Ctrl-D exits.",
      "A tool call that needs approval asks inline: y (run it), n (refuse it), a (always: run it and allow the tool " +
      "from now on). Without a terminal (or with --approve allow|deny) nobody is asked: --approve decides (default deny).",
      "Without a terminal: one message per line of stdin, each a turn of the same session.",
      "When `skald serve` runs for the home, the turns run there, over its RPC; else in this process (--verbose says which)."
    ],
    usage: ["skald chat [options]"],
    examples: ["skald chat", "skald chat --session 5b1c…", "echo 'hello' | skald chat"]
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
