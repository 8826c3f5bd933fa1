/**
 * `skald approvals list|set|rm`: the approval rules (inbox/ApprovalRules.ts, docs/inbox.md
 * *Approvals*). The commands and their options; what they do is in ApprovalHandlers.ts, thin over
 * the `ApprovalRules` service.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import * as Lazy from "./Lazy.js"

const load = () => import("./ApprovalHandlers.js")

const pattern = Args.text({ name: "PATTERN" }).pipe(
  Args.withDescription("A tool name (mcp__server__tool, delete_mcp), a prefix ending in * (mcp__server__*), or *.")
)

const decision = Args.choice([["allow", "allow"], ["ask", "ask"], ["deny", "deny"]] as const, { name: "DECISION" })
  .pipe(Args.withDescription("allow (run), ask (ask the person), or deny (refuse)."))

const listConfig = {
  json: Options.boolean("json").pipe(Options.withDescription("Print JSON instead of text.")),
  home: Host.home
}

/** What `skald approvals list` parsed. */
export type ListArgs = Command.Command.ParseConfig<typeof listConfig>

const list = Command.make("list", listConfig, Lazy.handler(load, (m) => m.list)).pipe(
  Command.withDescription(Help.about({
    summary: "List the approval rules: pattern, decision, when it was set.",
    details: [
      "The most specific rule matching a tool decides: an exact name, else the longest prefix*, else *.",
      "A tool no rule matches: read-only (readOnlyHint) runs, anything else asks; delete_mcp and register_mcp ask.",
      "--json: an array of {pattern, decision, createdAt}."
    ],
    usage: ["skald approvals list [options]"],
    examples: ["skald approvals list", "skald approvals list --json"]
  }))
)

const setConfig = { pattern, decision, home: Host.home }

/** What `skald approvals set` parsed. */
export type SetArgs = Command.Command.ParseConfig<typeof setConfig>

const set = Command.make("set", setConfig, Lazy.handler(load, (m) => m.set)).pipe(
  Command.withDescription(Help.about({
    summary: "Set the decision of a tool pattern (a new rule, or the existing one changed).",
    usage: ["skald approvals set [options] PATTERN DECISION"],
    examples: [
      "skald approvals set 'mcp__gcal__*' ask",
      "skald approvals set mcp__gcal__list_events allow",
      "skald approvals set delete_mcp deny"
    ]
  }))
)

const rmConfig = { pattern, home: Host.home }

/** What `skald approvals rm` parsed. */
export type RmArgs = Command.Command.ParseConfig<typeof rmConfig>

const rm = Command.make("rm", rmConfig, Lazy.handler(load, (m) => m.rm)).pipe(
  Command.withDescription(Help.about({
    summary: "Remove the rule of a tool pattern (the next most specific rule, or the default, decides).",
    usage: ["skald approvals rm [options] PATTERN"],
    examples: ["skald approvals rm 'mcp__gcal__*'"]
  }))
)

/** `skald approvals …`. */
export const command = Command.make("approvals").pipe(
  Command.withDescription(Help.about({
    summary: "The approval rules: which tool calls of the agent run, ask the person, or are refused.",
    usage: ["skald approvals COMMAND [options]"],
    examples: ["skald approvals list", "skald approvals set 'mcp__gcal__*' ask"]
  })),
  Command.withSubcommands([list, set, rm])
)
