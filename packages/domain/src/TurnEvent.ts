/**
 * What an agent turn reports while it runs: the CLI prints these (`--json`: one JSON line each,
 * `Schema.encode(TurnEvent)`), the RPC server streams them. Every event carries its `_tag`, so a
 * line decodes back without context.
 *
 * A turn is `TurnStarted`, then any number of `TextDelta`, `ToolStarted` and `ToolDone`, then
 * exactly one of `TurnDone`, `TurnFailed` or `TurnStopped`.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { ResultKind } from "./ToolResult.js"

/** The turn began: its session, its id (the user message's id) and the user's message. */
export class TurnStarted extends Schema.TaggedClass<TurnStarted>("@skald/domain/TurnStarted")("TurnStarted", {
  sessionId: Schema.String,
  turnId: Schema.Number,
  message: Schema.String
}) {}

/** A piece of the assistant's text, as the model streams it. */
export class TextDelta extends Schema.TaggedClass<TextDelta>("@skald/domain/TextDelta")("TextDelta", {
  text: Schema.String
}) {}

/** A tool call began: the model's call id, the tool's qualified name, its arguments (a JSON object). */
export class ToolStarted extends Schema.TaggedClass<ToolStarted>("@skald/domain/ToolStarted")("ToolStarted", {
  callId: Schema.String,
  name: Schema.String,
  arguments: Schema.Unknown
}) {}

/** How a tool call ended. */
export const ToolStatus = Schema.Literal("done", "error", "cancelled", "denied")
export type ToolStatus = typeof ToolStatus.Type

/**
 * A tool call ended. `result` is exactly what the model reads (the text, or compact JSON when
 * `resultType` is `json`); `mediaUrls` are the `/api/mcp-media/…` links in it; `truncated` says the
 * result was cut at the size cap (a cut JSON result is `string`).
 */
export class ToolDone extends Schema.TaggedClass<ToolDone>("@skald/domain/ToolDone")("ToolDone", {
  callId: Schema.String,
  name: Schema.String,
  status: ToolStatus,
  result: Schema.String,
  resultType: ResultKind,
  mediaUrls: Schema.Array(Schema.String),
  truncated: Schema.Boolean
}) {}

/** Tokens the model counted over the whole turn (every round). */
export class Usage extends Schema.Class<Usage>("@skald/domain/Usage")({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number
}) {}

/**
 * The turn ended: the last round's text, the usage, the number of model rounds. `note` says why
 * the turn ended early (the round limit), for the person, not the model.
 */
export class TurnDone extends Schema.TaggedClass<TurnDone>("@skald/domain/TurnDone")("TurnDone", {
  text: Schema.String,
  usage: Usage,
  rounds: Schema.Number,
  note: Schema.optionalWith(Schema.String, { exact: true })
}) {}

/** The turn failed: what happened and what to do, and the error's tag (e.g. `HttpRequestError`). */
export class TurnFailed extends Schema.TaggedClass<TurnFailed>("@skald/domain/TurnFailed")("TurnFailed", {
  message: Schema.String,
  errorTag: Schema.String
}) {}

/**
 * The turn was stopped. What was kept in the session: the assistant's partial `text` of the round
 * that was running, the calls that had finished (`finished`), and the calls recorded `cancelled`.
 */
export class TurnStopped extends Schema.TaggedClass<TurnStopped>("@skald/domain/TurnStopped")("TurnStopped", {
  text: Schema.String,
  finished: Schema.Array(Schema.String),
  cancelled: Schema.Array(Schema.String)
}) {}

/** Any turn event. */
export const TurnEvent = Schema.Union(TurnStarted, TextDelta, ToolStarted, ToolDone, TurnDone, TurnFailed, TurnStopped)
export type TurnEvent = typeof TurnEvent.Type

/** The events that end a turn. */
export type TurnEnd = TurnDone | TurnFailed | TurnStopped

/** Whether `event` ends its turn. */
export const isEnd = (event: TurnEvent): event is TurnEnd =>
  event._tag === "TurnDone" || event._tag === "TurnFailed" || event._tag === "TurnStopped"
