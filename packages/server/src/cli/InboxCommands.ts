/**
 * `skald inbox [--json]` and `skald inbox answer ID …`: the pending items of the home's running
 * host, and answering one, over the host's RPC (RpcHost.ts; docs/inbox.md *From the command
 * line*). Answer values come from stdin only (`--field K=@-`), never from argv. The commands and
 * their options; what they do is in InboxHandlers.ts.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import * as Lazy from "./Lazy.js"

const load = () => import("./InboxHandlers.js")

const token = Options.redacted("token").pipe(
  Options.optional,
  Options.withDescription("The host's access token (default SKALD_TOKEN; prefer it: argv is visible to other users).")
)

const flag = (name: string, description: string) => Options.boolean(name).pipe(Options.withDescription(description))

const listConfig = {
  json: flag("json", "Print JSON (an array of the items, as the RPC gives them) instead of text."),
  home: Host.home,
  token
}

/** What `skald inbox` parsed. */
export type ListArgs = Command.Command.ParseConfig<typeof listConfig>

const answerConfig = {
  id: Args.text({ name: "ID" }).pipe(Args.withDescription("The item's id, as `skald inbox` lists it.")),
  accept: flag("accept", "Accept an elicitation (its form's values from --field K=@-)."),
  field: Options.text("field").pipe(
    Options.repeated,
    Options.withDescription(
      "K=@-: the value of field K, one line of stdin per --field, in order (values are never taken from argv)."
    )
  ),
  decline: flag("decline", "Decline an elicitation."),
  cancel: flag("cancel", "Cancel an elicitation (dismiss it without a choice)."),
  yes: flag("yes", "Approve a tool call."),
  no: flag("no", "Deny a tool call."),
  always: flag("always", "Approve a tool call and allow that tool from now on (adds an approval rule)."),
  dismiss: flag("dismiss", "Dismiss a notification."),
  home: Host.home,
  token
}

/** What `skald inbox answer` parsed. */
export type AnswerArgs = Command.Command.ParseConfig<typeof answerConfig>

const answer = Command.make("answer", answerConfig, Lazy.handler(load, (m) => m.answer)).pipe(
  Command.withDescription(Help.about({
    summary: "Answer a pending item of the running host: an approval, an elicitation or a notification.",
    details: [
      "Exactly one of --yes, --no, --always (approvals), --accept, --decline, --cancel (elicitations), --dismiss.",
      "--field K=@- reads field K's value from stdin, one line per --field in order; a value on argv is refused.",
      "The host checks the values against the form: a value that does not fit leaves the item pending (exit 2)."
    ],
    usage: ["skald inbox answer [options] ID"],
    examples: [
      "skald inbox answer 3f2a… --yes",
      "printf '%s\\n' \"$USER\" | skald inbox answer 3f2a… --accept --field user=@-",
      "skald inbox answer 3f2a… --decline"
    ]
  }))
)

/** `skald inbox …`. */
export const command = Command.make("inbox", listConfig, Lazy.handler(load, (m) => m.list)).pipe(
  Command.withDescription(Help.about({
    summary:
      "The pending items of the running host (`skald serve` of this home): approvals, elicitations, notifications.",
    details: [
      "Each item: kind, id, origin (session, server, tool), age, deadline; an approval's tool and arguments, an " +
      "elicitation's fields (masked ones marked; values are never shown).",
      "The host is the one recorded in the home (data/host.json); its access token, if it has one: SKALD_TOKEN or --token."
    ],
    usage: ["skald inbox [options]", "skald inbox answer [options] ID"],
    examples: ["skald inbox", "skald inbox --json", "skald inbox answer 3f2a… --yes"]
  })),
  Command.withSubcommands([answer])
)
