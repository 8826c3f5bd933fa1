/**
 * The host-side result of any tool, as persisted and replayed to the model.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** A text result. */
export class TextResult extends Schema.TaggedClass<TextResult>("@skald/domain/TextResult")("Text", {
  text: Schema.String,
  /** The tool answered `isError: true` (its result is its report of a failure). */
  isError: Schema.optionalWith(Schema.Boolean, { exact: true })
}) {}

/** A JSON result. */
export class JsonResult extends Schema.TaggedClass<JsonResult>("@skald/domain/JsonResult")("Json", {
  value: Schema.Unknown,
  /** The tool answered `isError: true` (its result is its report of a failure). */
  isError: Schema.optionalWith(Schema.Boolean, { exact: true })
}) {}

/** Text | Json. */
export const ToolResult = Schema.Union(TextResult, JsonResult)
export type ToolResult = TextResult | JsonResult

/** The persisted `result_type` tag. */
export const ResultKind = Schema.Literal("string", "json")
export type ResultKind = typeof ResultKind.Type

/** The string persisted and replayed to the model: the text, or compact JSON. */
export const toWire = (result: ToolResult): string =>
  result._tag === "Text" ? result.text : JSON.stringify(result.value) ?? "null"

/** `"string"` for Text, `"json"` for Json. */
export const kind = (result: ToolResult): ResultKind => (result._tag === "Text" ? "string" : "json")

/** Whether the tool answered `isError: true`. */
export const isError = (result: ToolResult): boolean => result.isError === true
