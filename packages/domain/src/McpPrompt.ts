/**
 * Prompts as an MCP server describes them (`prompts/list`), what `prompts/get` returns, and the
 * answer of `completion/complete`, with the one lenient mapping from each wire shape.
 *
 * @since 0.1.0
 */
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/** One argument a prompt takes. */
export const PromptArgument = Schema.Struct({
  name: Schema.String,
  title: Schema.optionalWith(Schema.String, { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  required: Schema.Boolean
})
export type PromptArgument = typeof PromptArgument.Type

/** A prompt the server lists. */
export class McpPrompt extends Schema.Class<McpPrompt>("@skald/domain/McpPrompt")({
  name: Schema.String,
  title: Schema.optionalWith(Schema.String, { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  arguments: Schema.Array(PromptArgument)
}) {}

/** One message of a prompt: its role and its content block exactly as sent (text, image, resource, …). */
export const PromptMessage = Schema.Struct({
  role: Schema.Literal("user", "assistant"),
  content: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
export type PromptMessage = typeof PromptMessage.Type

/** A `prompts/get` answer. */
export const PromptResult = Schema.Struct({
  description: Schema.optionalWith(Schema.String, { exact: true }),
  messages: Schema.Array(PromptMessage)
})
export type PromptResult = typeof PromptResult.Type

/** A `completion/complete` answer: at most 100 values, with the total and whether more exist. */
export const Completion = Schema.Struct({
  values: Schema.Array(Schema.String),
  total: Schema.optionalWith(Schema.Number, { exact: true }),
  hasMore: Schema.optionalWith(Schema.Boolean, { exact: true })
})
export type Completion = typeof Completion.Type

const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

const titled = (wire: { readonly [key: string]: unknown }) => {
  const out: { title?: string; description?: string } = {}
  const title = str(wire.title)
  const description = str(wire.description)
  if (title !== undefined) out.title = title
  if (description !== undefined) out.description = description
  return out
}

/** A `prompts/list` entry; `None` without a name. Arguments without a name are dropped. */
export const promptFromWire = (wire: unknown): Option.Option<McpPrompt> => {
  if (!Predicate.isRecord(wire)) return Option.none()
  const name = str(wire.name)
  if (name === undefined || name.length === 0) return Option.none()
  const args: Array<PromptArgument> = []
  if (Array.isArray(wire.arguments)) {
    for (const arg of wire.arguments) {
      if (!Predicate.isRecord(arg) || typeof arg.name !== "string" || arg.name.length === 0) continue
      args.push({ name: arg.name, ...titled(arg), required: arg.required === true })
    }
  }
  return Option.some(McpPrompt.make({ name, ...titled(wire), arguments: args }))
}

/** A `prompts/get` answer; messages of an unknown role or without a content object are dropped. */
export const promptResultFromWire = (wire: unknown): Option.Option<PromptResult> => {
  if (!Predicate.isRecord(wire) || !Array.isArray(wire.messages)) return Option.none()
  const messages: Array<PromptMessage> = []
  for (const m of wire.messages) {
    if (!Predicate.isRecord(m) || (m.role !== "user" && m.role !== "assistant") || !Predicate.isRecord(m.content)) {
      continue
    }
    messages.push({ role: m.role, content: m.content })
  }
  const description = str(wire.description)
  return Option.some(description === undefined ? { messages } : { description, messages })
}

/** A `completion/complete` answer; `None` without `completion.values`. Non-string values are dropped. */
export const completionFromWire = (wire: unknown): Option.Option<Completion> => {
  const c = Predicate.isRecord(wire) ? wire.completion : undefined
  if (!Predicate.isRecord(c) || !Array.isArray(c.values)) return Option.none()
  const out: { values: Array<string>; total?: number; hasMore?: boolean } = {
    values: c.values.filter((v): v is string => typeof v === "string")
  }
  if (typeof c.total === "number") out.total = c.total
  if (typeof c.hasMore === "boolean") out.hasMore = c.hasMore
  return Option.some(out)
}
