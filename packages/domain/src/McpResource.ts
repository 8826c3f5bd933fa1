/**
 * Resources as an MCP server describes them (`resources/list`, `resources/templates/list`) and
 * what `resources/read` returns, with the one lenient mapping from each wire shape.
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/** A resource the server lists. */
export class McpResource extends Schema.Class<McpResource>("@skald/domain/McpResource")({
  uri: Schema.String,
  name: Schema.String,
  title: Schema.optionalWith(Schema.String, { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  mimeType: Schema.optionalWith(Schema.String, { exact: true }),
  /** The size in bytes, when the server knows it. */
  size: Schema.optionalWith(Schema.Number, { exact: true })
}) {}

/** A family of resources named by an RFC 6570 URI template. */
export class McpResourceTemplate extends Schema.Class<McpResourceTemplate>("@skald/domain/McpResourceTemplate")({
  uriTemplate: Schema.String,
  name: Schema.String,
  title: Schema.optionalWith(Schema.String, { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  mimeType: Schema.optionalWith(Schema.String, { exact: true })
}) {}

/** The text contents of a resource. */
export class McpTextContents extends Schema.TaggedClass<McpTextContents>("@skald/domain/McpTextContents")("Text", {
  uri: Schema.String,
  mimeType: Schema.optionalWith(Schema.String, { exact: true }),
  text: Schema.String
}) {}

/** The binary contents of a resource, decoded from the wire's base64. */
export class McpBlobContents extends Schema.TaggedClass<McpBlobContents>("@skald/domain/McpBlobContents")("Blob", {
  uri: Schema.String,
  mimeType: Schema.optionalWith(Schema.String, { exact: true }),
  data: Schema.Uint8ArrayFromSelf
}) {}

/** One item of a `resources/read` answer. */
export const McpResourceContents = Schema.Union(McpTextContents, McpBlobContents)
export type McpResourceContents = McpTextContents | McpBlobContents

const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

const optionals = (wire: { readonly [key: string]: unknown }) => {
  const out: { title?: string; description?: string; mimeType?: string } = {}
  const title = str(wire.title)
  const description = str(wire.description)
  const mimeType = str(wire.mimeType)
  if (title !== undefined) out.title = title
  if (description !== undefined) out.description = description
  if (mimeType !== undefined) out.mimeType = mimeType
  return out
}

/** A `resources/list` entry; `None` without a `uri`. A missing `name` is the URI. */
export const resourceFromWire = (wire: unknown): Option.Option<McpResource> => {
  if (!Predicate.isRecord(wire)) return Option.none()
  const uri = str(wire.uri)
  if (uri === undefined || uri.length === 0) return Option.none()
  const size = typeof wire.size === "number" && Number.isFinite(wire.size) ? { size: wire.size } : {}
  return Option.some(McpResource.make({ uri, name: str(wire.name) ?? uri, ...optionals(wire), ...size }))
}

/** A `resources/templates/list` entry; `None` without a `uriTemplate`. */
export const templateFromWire = (wire: unknown): Option.Option<McpResourceTemplate> => {
  if (!Predicate.isRecord(wire)) return Option.none()
  const uriTemplate = str(wire.uriTemplate)
  if (uriTemplate === undefined || uriTemplate.length === 0) return Option.none()
  return Option.some(
    McpResourceTemplate.make({ uriTemplate, name: str(wire.name) ?? uriTemplate, ...optionals(wire) })
  )
}

/**
 * One item of `contents` in a `resources/read` answer: `text`, or `blob` (base64) decoded to bytes
 * (browser-safe); `None` when it is neither, or the base64 is malformed.
 */
export const contentsFromWire = (wire: unknown): Option.Option<McpResourceContents> => {
  if (!Predicate.isRecord(wire)) return Option.none()
  const uri = str(wire.uri) ?? ""
  const mimeType = str(wire.mimeType)
  const mime = mimeType === undefined ? {} : { mimeType }
  if (typeof wire.text === "string") return Option.some(McpTextContents.make({ uri, ...mime, text: wire.text }))
  if (typeof wire.blob === "string") {
    const data = Encoding.decodeBase64(wire.blob)
    return Either.isLeft(data) ? Option.none() : Option.some(McpBlobContents.make({ uri, ...mime, data: data.right }))
  }
  return Option.none()
}
