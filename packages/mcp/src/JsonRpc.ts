/**
 * JSON-RPC 2.0 messages as MCP uses them: the Schema codec, and the fast classifier the engine's
 * reader uses on every incoming message (it agrees with the codec; see the property tests).
 *
 * @since 0.1.0
 */
import type * as McpError from "@skald/domain/McpError"
import * as Schema from "effect/Schema"

/** A request id. The two directions number their ids independently. */
export const RequestId = Schema.Union(Schema.String, Schema.Number)
export type RequestId = string | number

const Params = Schema.optionalWith(Schema.Unknown, { exact: true })

/** A request: method and id. */
export const Request = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: RequestId,
  method: Schema.String,
  params: Params
})
export type Request = typeof Request.Type

/** A notification: method, no id. */
export const Notification = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  method: Schema.String,
  params: Params
})
export type Notification = typeof Notification.Type

/** A successful response. */
export const Success = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: RequestId,
  result: Schema.Unknown
})
export type Success = typeof Success.Type

/** The error object of an error response. */
export const ErrorObject = Schema.Struct({
  code: Schema.Number,
  message: Schema.String,
  data: Params
})
export type ErrorObject = typeof ErrorObject.Type

/** An error response; `id` is null when the request could not be read. */
export const Failure = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: Schema.NullOr(RequestId),
  error: ErrorObject
})
export type Failure = typeof Failure.Type

/**
 * Any JSON-RPC message. Decoded exactly (no unknown keys dropped, no missing `result` read as
 * `undefined`), so an error response can never pass for a success, and a notification has no `id`.
 */
export const Message = Schema.Union(
  Request,
  Schema.Struct({ ...Notification.fields, id: Schema.optionalWith(Schema.Never, { exact: true }) }),
  Success,
  Failure
).annotations({ parseOptions: { exact: true } })
export type Message = Request | Notification | Success | Failure

/** The codec between one line of JSON text and a message. */
export const MessageFromJson = Schema.parseJson(Message)

/** Standard error codes. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603
} as const

/** A message read off the wire, classified. */
export type Classified =
  | { readonly _tag: "Request"; readonly message: Request }
  | { readonly _tag: "Notification"; readonly message: Notification }
  | { readonly _tag: "Response"; readonly message: Success | Failure }

/** What the engine routes: a classified message, or a transport's word that a request failed in transit. */
export type Incoming =
  | Classified
  | { readonly _tag: "Undelivered"; readonly id: RequestId; readonly error: McpError.McpError }

const isId = (u: unknown): u is RequestId => typeof u === "string" || typeof u === "number"

const isErrorObject = (u: unknown): u is ErrorObject =>
  typeof u === "object" && u !== null && typeof (u as ErrorObject).code === "number" &&
  typeof (u as ErrorObject).message === "string"

/**
 * Classifies a parsed JSON value without a full Schema decode (the hot path). `undefined` when the
 * value is not a JSON-RPC 2.0 message. A message with both `method` and `id` is a request, so a
 * server request is never mistaken for a response.
 */
export const classify = (u: unknown): Classified | undefined => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) return undefined
  const m = u as Record<string, unknown>
  if (m.jsonrpc !== "2.0") return undefined
  if (typeof m.method === "string") {
    if (!("id" in m)) return { _tag: "Notification", message: m as unknown as Notification }
    if (isId(m.id)) return { _tag: "Request", message: m as unknown as Request }
  }
  const response = responseOf(m)
  return response === undefined ? undefined : { _tag: "Response", message: response }
}

/**
 * The value itself when `classify` would call it a response, else `undefined` — without the
 * classification wrapper (the stdio transport's hot path: most messages are responses).
 */
export const asResponse = (u: unknown): Success | Failure | undefined => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) return undefined
  const m = u as Record<string, unknown>
  if (m.jsonrpc !== "2.0") return undefined
  if (typeof m.method === "string" && (!("id" in m) || isId(m.id))) return undefined
  return responseOf(m)
}

/** The response part of `classify`, for a `jsonrpc: "2.0"` object that is not a request or notification. */
const responseOf = (m: Record<string, unknown>): Success | Failure | undefined => {
  if ("result" in m && isId(m.id)) return m as unknown as Success
  if ("error" in m && isErrorObject(m.error) && (m.id === null || isId(m.id))) return m as unknown as Failure
  return undefined
}

/** A request message. */
export const request = (id: RequestId, method: string, params?: unknown): Request =>
  params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params }

/**
 * A plain `tools/call` request as JSON text — the same text as `JSON.stringify` of `request(id,
 * "tools/call", { name, arguments: args, _meta: { progressToken: id } })`, written directly (the
 * engine's hot path; a property test holds the two equal).
 */
export const toolsCallJson = (id: number, name: string, args: unknown): string =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${
    JSON.stringify(args)
  },"_meta":{"progressToken":${id}}}}`

/** A notification message. */
export const notification = (method: string, params?: unknown): Notification =>
  params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }

/** A success response. */
export const success = (id: RequestId, result: unknown): Success => ({ jsonrpc: "2.0", id, result })

/** An error response. */
export const failure = (id: RequestId | null, code: number, message: string, data?: unknown): Failure => ({
  jsonrpc: "2.0",
  id,
  error: data === undefined ? { code, message } : { code, message, data }
})
