/**
 * What a `tools/call` produced, classified once at the transport level.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** Inline media decoded from base64: an `image`, `audio`, or embedded `resource` blob. */
export class McpInlineMedia extends Schema.TaggedClass<McpInlineMedia>("@skald/domain/McpInlineMedia")("Inline", {
  kind: Schema.Literal("image", "audio", "resource"),
  mimeType: Schema.String,
  data: Schema.Uint8ArrayFromSelf,
  /** The resource URI, for an embedded resource. */
  uri: Schema.optionalWith(Schema.String, { exact: true })
}) {}

/** A `resource_link`: a URI the server points at, not fetched. */
export class McpResourceLink extends Schema.TaggedClass<McpResourceLink>("@skald/domain/McpResourceLink")("Link", {
  uri: Schema.String,
  mimeType: Schema.optionalWith(Schema.String, { exact: true }),
  name: Schema.optionalWith(Schema.String, { exact: true })
}) {}

/** One media item of a result. */
export const McpMedia = Schema.Union(McpInlineMedia, McpResourceLink)
export type McpMedia = McpInlineMedia | McpResourceLink

/** A plain text result: the text items joined with newlines. */
export class McpText extends Schema.TaggedClass<McpText>("@skald/domain/McpText")("Text", {
  text: Schema.String,
  isError: Schema.Boolean
}) {}

/** A structured result (`structuredContent`), preferred over the text mirror. */
export class McpJson extends Schema.TaggedClass<McpJson>("@skald/domain/McpJson")("Json", {
  value: Schema.Unknown,
  isError: Schema.Boolean
}) {}

/** A result carrying at least one media block, plus any text and structured content. */
export class McpMediaResult extends Schema.TaggedClass<McpMediaResult>("@skald/domain/McpMediaResult")("Media", {
  text: Schema.String,
  structured: Schema.optionalWith(Schema.Unknown, { exact: true }),
  items: Schema.Array(McpMedia),
  isError: Schema.Boolean
}) {}

/** The server deferred the call: a durable task to poll (`CreateTaskResult`). */
export class McpTaskHandle extends Schema.TaggedClass<McpTaskHandle>("@skald/domain/McpTaskHandle")("Task", {
  taskId: Schema.String,
  status: Schema.String,
  statusMessage: Schema.optionalWith(Schema.String, { exact: true }),
  pollInterval: Schema.optionalWith(Schema.Number, { exact: true }),
  ttl: Schema.optionalWith(Schema.NullOr(Schema.Number), { exact: true })
}) {}

/** Text | Json | Media | Task. */
export const McpCallResult = Schema.Union(McpText, McpJson, McpMediaResult, McpTaskHandle)
export type McpCallResult = McpText | McpJson | McpMediaResult | McpTaskHandle
