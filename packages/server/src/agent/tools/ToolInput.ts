/**
 * The built-in tools' arguments: decoded with a schema; what does not fit is a `ToolInputError`
 * the model reads (the loop turns a built-in's failure into an error result, like an MCP tool's).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** A built-in tool was called with arguments it cannot use. */
export class ToolInputError extends Schema.TaggedError<ToolInputError>("@skald/server/ToolInputError")(
  "ToolInputError",
  { tool: Schema.String, reason: Schema.String }
) {
  override get message(): string {
    return `${this.tool} cannot run with these arguments: ${this.reason}`
  }
}

/** Decodes a tool's arguments. */
export const decode = <A, I>(tool: string, schema: Schema.Schema<A, I>, args: unknown) =>
  Schema.decodeUnknown(schema, { errors: "all", onExcessProperty: "error" })(args).pipe(
    Effect.mapError((error) => new ToolInputError({ tool, reason: ParseResult.TreeFormatter.formatErrorSync(error) }))
  )

/** A built-in tool's definition, as offered to the model. */
export interface Definition {
  readonly name: string
  readonly description: string
  readonly inputSchema: Record<string, unknown>
  /** Its MCP-style hints (`readOnlyHint: true`: the approval gate allows it by default, inbox/ApprovalRules.ts). */
  readonly annotations?: { readonly readOnlyHint?: boolean } | undefined
}
