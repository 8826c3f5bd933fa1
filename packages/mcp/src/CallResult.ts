/**
 * Result extraction, written once for every transport: a `tools/call` answer (or a task's
 * `tasks/result`) becomes an `McpCallResult`.
 *
 * @since 0.1.0
 */
import * as McpCallResult from "@skald/domain/McpCallResult"
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Predicate from "effect/Predicate"

type Json = { readonly [key: string]: unknown }

/** The outcome of extraction: the result and anything worth a warning (undecodable media, …). */
export interface Extracted {
  readonly result: McpCallResult.McpCallResult
  readonly warnings: ReadonlyArray<string>
}

/**
 * Recognises a `CreateTaskResult`: nested under `task` as the spec defines it, or with its fields
 * at top level as the seed tolerates.
 */
export const parseCreateTask = (wire: unknown): McpCallResult.McpTaskHandle | undefined => {
  if (!Predicate.isRecord(wire)) return undefined
  const t = Predicate.isRecord(wire.task) ? wire.task : wire
  if (typeof t.taskId !== "string" || typeof t.status !== "string") return undefined
  return new McpCallResult.McpTaskHandle({
    taskId: t.taskId,
    status: t.status,
    ...(typeof t.statusMessage === "string" ? { statusMessage: t.statusMessage } : {}),
    ...(typeof t.pollInterval === "number" ? { pollInterval: t.pollInterval } : {}),
    ...(typeof t.ttl === "number" || t.ttl === null ? { ttl: t.ttl } : {})
  }, true)
}

const decode = (data: unknown): Uint8Array | undefined => {
  if (typeof data !== "string") return undefined
  const bytes = Encoding.decodeBase64(data)
  return Either.isRight(bytes) ? bytes.right : undefined
}

/**
 * Builds a Schema class instance without running its constructor: the fields were checked above,
 * and the constructor (defaults, validation machinery) costs more than a whole call's routing.
 * The instance is the same as the constructor's — own fields in declaration order, then `_tag` —
 * which a test checks against `new`, so an Effect upgrade that changes the layout is caught.
 */
export const unsafeInstance = <A>(Class: { readonly prototype: A }, fields: object): A =>
  Object.assign(Object.create(Class.prototype as object) as object, fields) as A

// The two results of nearly every call, built by plain constructor functions sharing the classes'
// prototypes: one allocation each, always the same object shape (as `unsafeInstance` builds them).
interface TextFields {
  text: string
  isError: boolean
  _tag: "Text"
}
interface JsonFields {
  value: unknown
  isError: boolean
  _tag: "Json"
}
const TextInstance = function(this: TextFields, text: string, isError: boolean) {
  this.text = text
  this.isError = isError
  this._tag = "Text"
} as unknown as new(text: string, isError: boolean) => McpCallResult.McpText
TextInstance.prototype = McpCallResult.McpText.prototype
const JsonInstance = function(this: JsonFields, value: unknown, isError: boolean) {
  this.value = value
  this.isError = isError
  this._tag = "Json"
} as unknown as new(value: unknown, isError: boolean) => McpCallResult.McpJson
JsonInstance.prototype = McpCallResult.McpJson.prototype

const noWarnings: ReadonlyArray<string> = Object.freeze([])

/**
 * Classifies a `CallToolResult`: a task handle first (when the call asked for a task), then Media
 * when at least one media block is present, then Json when `structuredContent` is present (it is
 * canonical), else the text items joined with newlines. `isError` is kept on every variant.
 */
export const extract = (wire: unknown, options?: { readonly taskRequested?: boolean }): Extracted => {
  if (options?.taskRequested === true) {
    const task = parseCreateTask(wire)
    if (task !== undefined) return { result: task, warnings: [] }
  }
  const result = Predicate.isRecord(wire) ? wire : {}
  const isError = result.isError === true
  const content = Array.isArray(result.content) ? result.content : []
  const hasStructured = "structuredContent" in result && result.structuredContent !== undefined
  // The common answer — text blocks only — is read without building any list.
  let text = ""
  let texts = 0
  let i = 0
  for (; i < content.length; i++) {
    const block = content[i]
    if (!Predicate.isRecord(block) || block.type !== "text") break
    if (typeof block.text !== "string") continue
    text = texts === 0 ? block.text : `${text}\n${block.text}`
    texts++
  }
  if (i === content.length) {
    return {
      result: hasStructured ? new JsonInstance(result.structuredContent, isError) : new TextInstance(text, isError),
      warnings: noWarnings
    }
  }
  return extractMixed(result, content, isError, hasStructured)
}

/** Any other answer: media, embedded resources, links, blocks of unknown types. */
const extractMixed = (
  result: Json,
  content: ReadonlyArray<unknown>,
  isError: boolean,
  hasStructured: boolean
): Extracted => {
  const warnings: Array<string> = []
  const texts: Array<string> = []
  const items: Array<McpCallResult.McpMedia> = []
  for (const block of content) {
    if (!Predicate.isRecord(block)) continue
    switch (block.type) {
      case "text": {
        if (typeof block.text === "string") texts.push(block.text)
        break
      }
      case "image":
      case "audio": {
        const data = decode(block.data)
        if (data === undefined) {
          warnings.push(`an ${block.type} block had no valid base64 data and was dropped`)
          break
        }
        items.push(
          new McpCallResult.McpInlineMedia({
            kind: block.type,
            mimeType: typeof block.mimeType === "string" ? block.mimeType : "application/octet-stream",
            data
          }, true)
        )
        break
      }
      case "resource": {
        const resource = Predicate.isRecord(block.resource) ? block.resource : {}
        const uri = typeof resource.uri === "string" ? resource.uri : undefined
        if (typeof resource.blob === "string") {
          const data = decode(resource.blob)
          if (data === undefined) {
            warnings.push("an embedded resource had no valid base64 blob and was dropped")
            break
          }
          items.push(
            new McpCallResult.McpInlineMedia({
              kind: "resource",
              mimeType: typeof resource.mimeType === "string" ? resource.mimeType : "application/octet-stream",
              data,
              ...(uri !== undefined ? { uri } : {})
            }, true)
          )
        } else if (typeof resource.text === "string") {
          texts.push(resource.text)
        }
        break
      }
      case "resource_link": {
        if (typeof block.uri !== "string") break
        items.push(
          new McpCallResult.McpResourceLink({
            uri: block.uri,
            ...(typeof block.mimeType === "string" ? { mimeType: block.mimeType } : {}),
            ...(typeof block.name === "string" ? { name: block.name } : {})
          }, true)
        )
        break
      }
    }
  }
  const text = texts.join("\n")
  if (items.length > 0) {
    return {
      result: new McpCallResult.McpMediaResult({
        text,
        items,
        isError,
        ...(hasStructured ? { structured: result.structuredContent } : {})
      }, true),
      warnings
    }
  }
  if (hasStructured) return { result: new JsonInstance(result.structuredContent, isError), warnings }
  return { result: new TextInstance(text, isError), warnings }
}
