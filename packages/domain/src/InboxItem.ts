/**
 * The inbox: what waits for a person — a tool call to approve, a server's elicitation, a
 * notification — the answers a person gives, how each item ended, and the changes a watcher sees.
 * Shared by the host's Inbox service, the RPC server and the web UI (browser-safe: Schema only).
 *
 * An item never carries an answer value: an elicitation describes its fields, never what was typed.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** Where an item comes from: the agent session, the MCP server, the tool (qualified or built-in), the call. */
export const Origin = Schema.Struct({
  sessionId: Schema.optionalWith(Schema.String, { exact: true }),
  server: Schema.optionalWith(Schema.String, { exact: true }),
  tool: Schema.optionalWith(Schema.String, { exact: true }),
  callId: Schema.optionalWith(Schema.String, { exact: true })
})
export type Origin = typeof Origin.Type

/** One choice of an enum field. */
export const Choice = Schema.Struct({
  value: Schema.String,
  title: Schema.optional(Schema.String)
})
export type Choice = typeof Choice.Type

const fieldBase = {
  name: Schema.String,
  title: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  required: Schema.Boolean,
  /** Shown masked: `format: password`, `writeOnly: true`, or a name with password/passphrase/secret/token. */
  masked: Schema.Boolean
}

/** A text field (`format` email / uri / date / date-time, length bounds, default). */
export const StringField = Schema.Struct({
  ...fieldBase,
  kind: Schema.Literal("string"),
  format: Schema.optional(Schema.String),
  minLength: Schema.optional(Schema.Number),
  maxLength: Schema.optional(Schema.Number),
  default: Schema.optional(Schema.String)
})

/** A number or integer field (bounds, default). */
export const NumberField = Schema.Struct({
  ...fieldBase,
  kind: Schema.Literal("number", "integer"),
  minimum: Schema.optional(Schema.Number),
  maximum: Schema.optional(Schema.Number),
  default: Schema.optional(Schema.Number)
})

/** A yes/no field. */
export const BooleanField = Schema.Struct({
  ...fieldBase,
  kind: Schema.Literal("boolean"),
  default: Schema.optional(Schema.Boolean)
})

/** A single choice. */
export const EnumField = Schema.Struct({
  ...fieldBase,
  kind: Schema.Literal("enum"),
  choices: Schema.Array(Choice),
  default: Schema.optional(Schema.String)
})

/** Several choices. */
export const MultiEnumField = Schema.Struct({
  ...fieldBase,
  kind: Schema.Literal("multi-enum"),
  choices: Schema.Array(Choice),
  minItems: Schema.optional(Schema.Number),
  maxItems: Schema.optional(Schema.Number),
  default: Schema.optional(Schema.Array(Schema.String))
})

/** One field of an elicitation form: the shape of `@skald/mcp`'s `Elicitation.Field`. */
export const Field = Schema.Union(StringField, NumberField, BooleanField, EnumField, MultiEnumField)
export type Field = typeof Field.Type

const itemBase = {
  id: Schema.String,
  origin: Origin,
  /** When it was posted (epoch ms). */
  createdAt: Schema.Number,
  /** When it expires unanswered (epoch ms); none: it waits until answered or withdrawn. */
  deadline: Schema.optionalWith(Schema.Number, { exact: true })
}

/** A tool call waiting for yes/no: the tool, the model's arguments, the tool's annotations, why it is asked. */
export class Approval extends Schema.TaggedClass<Approval>("@skald/domain/InboxItem/Approval")("Approval", {
  ...itemBase,
  /** The qualified name (`mcp__<server>__<tool>`) or a built-in tool's name. */
  tool: Schema.String,
  arguments: Schema.Unknown,
  annotations: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  /** Why it is asked, e.g. "not marked read-only". */
  reason: Schema.String
}) {}

/** A server asks the person: a form (fields; none: a yes/no confirmation) or a URL to open. */
export class Elicitation extends Schema.TaggedClass<Elicitation>("@skald/domain/InboxItem/Elicitation")(
  "Elicitation",
  {
    ...itemBase,
    mode: Schema.Literal("form", "url"),
    message: Schema.String,
    fields: Schema.Array(Field),
    /** A form without fields: accept means yes. */
    confirmation: Schema.Boolean,
    /** URL mode: the page to open (Skald never opens it itself). */
    url: Schema.optionalWith(Schema.String, { exact: true })
  }
) {}

/** A message for the person (e.g. a briefing); dismissed once read. */
export class Notification extends Schema.TaggedClass<Notification>("@skald/domain/InboxItem/Notification")(
  "Notification",
  {
    ...itemBase,
    title: Schema.String,
    body: Schema.String
  }
) {}

/** A pending item. */
export const InboxItem = Schema.Union(Approval, Elicitation, Notification)
export type InboxItem = typeof InboxItem.Type

/** Which kind of item: its tag. */
export type Kind = InboxItem["_tag"]

/** Yes to an approval; `always`: also allow this tool from now on. */
export class Approve extends Schema.TaggedClass<Approve>("@skald/domain/InboxItem/Approve")("Approve", {
  always: Schema.Boolean
}) {}

/** No to an approval. */
export class Deny extends Schema.TaggedClass<Deny>("@skald/domain/InboxItem/Deny")("Deny", {}) {}

/** An elicitation answered: the form's values (checked against its fields), or consent to open the URL. */
export class Accept extends Schema.TaggedClass<Accept>("@skald/domain/InboxItem/Accept")("Accept", {
  content: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { exact: true })
}) {}

/** An elicitation refused. */
export class Decline extends Schema.TaggedClass<Decline>("@skald/domain/InboxItem/Decline")("Decline", {}) {}

/** An elicitation dismissed without a choice. */
export class Cancel extends Schema.TaggedClass<Cancel>("@skald/domain/InboxItem/Cancel")("Cancel", {}) {}

/** A notification read. */
export class Dismiss extends Schema.TaggedClass<Dismiss>("@skald/domain/InboxItem/Dismiss")("Dismiss", {}) {}

/** An answer to an item. */
export const InboxAnswer = Schema.Union(Approve, Deny, Accept, Decline, Cancel, Dismiss)
export type InboxAnswer = typeof InboxAnswer.Type

/**
 * How an item ended: answered (`approved` … `dismissed`), `expired` (its deadline passed), or
 * `withdrawn` (the asker went away: the turn stopped, the server cancelled, the host closed).
 */
export const Outcome = Schema.Literal(
  "approved",
  "denied",
  "accepted",
  "declined",
  "cancelled",
  "expired",
  "withdrawn",
  "dismissed"
)
export type Outcome = typeof Outcome.Type

/** The outcome an answer gives. */
export const outcomeOf = (answer: InboxAnswer): Outcome => {
  switch (answer._tag) {
    case "Approve":
      return "approved"
    case "Deny":
      return "denied"
    case "Accept":
      return "accepted"
    case "Decline":
      return "declined"
    case "Cancel":
      return "cancelled"
    case "Dismiss":
      return "dismissed"
  }
}

/** The answers an item of each kind takes. */
export const answersOf: { readonly [K in Kind]: ReadonlyArray<InboxAnswer["_tag"]> } = {
  Approval: ["Approve", "Deny"],
  Elicitation: ["Accept", "Decline", "Cancel"],
  Notification: ["Dismiss"]
}

/** An item was posted (or was pending when the watcher subscribed). */
export class ItemAdded extends Schema.TaggedClass<ItemAdded>("@skald/domain/InboxItem/ItemAdded")("ItemAdded", {
  item: InboxItem
}) {}

/** An item ended; it is no longer pending. */
export class ItemResolved extends Schema.TaggedClass<ItemResolved>("@skald/domain/InboxItem/ItemResolved")(
  "ItemResolved",
  { id: Schema.String, outcome: Outcome }
) {}

/** What a watcher of the inbox sees. */
export const InboxChange = Schema.Union(ItemAdded, ItemResolved)
export type InboxChange = typeof InboxChange.Type

/** No pending item has this id: it never existed, or it was already answered, expired or withdrawn. */
export class InboxItemNotFound extends Schema.TaggedError<InboxItemNotFound>("@skald/domain/InboxItemNotFound")(
  "InboxItemNotFound",
  { id: Schema.String }
) {
  override get message(): string {
    return `no pending inbox item '${this.id}': it was already answered, expired or withdrawn, or never existed. ` +
      "List the pending items to see what is waiting"
  }
}

/** The answer is not one this item takes (e.g. Approve on an elicitation). */
export class InboxAnswerMismatch extends Schema.TaggedError<InboxAnswerMismatch>("@skald/domain/InboxAnswerMismatch")(
  "InboxAnswerMismatch",
  { id: Schema.String, expected: Schema.String }
) {
  override get message(): string {
    return `inbox item '${this.id}' cannot take that answer: it expects ${this.expected}`
  }
}

/** An elicitation's content does not fit its form; `problem` names fields and what is wrong, never values. */
export class InboxAnswerInvalid extends Schema.TaggedError<InboxAnswerInvalid>("@skald/domain/InboxAnswerInvalid")(
  "InboxAnswerInvalid",
  { id: Schema.String, problem: Schema.String }
) {
  override get message(): string {
    return `the answer to inbox item '${this.id}' does not fit its form: ${this.problem}. ` +
      "The item is still pending: answer again"
  }
}

/** Why `resolve` refused an answer. */
export type ResolveError = InboxItemNotFound | InboxAnswerMismatch | InboxAnswerInvalid
