/**
 * Sampling: a server asks the client's model for a message (`sampling/createMessage`, 2025-11-25,
 * with tool use, SEP-1577). The embedding app answers through a `SamplingHandler`; this module
 * has the request's Schemas, the checks the spec puts on its messages, and the answer's shape.
 *
 * The server's tools are only *offered* to the model: a tool call comes back to the server as
 * `tool_use` content (stop reason `toolUse`); the server runs it and asks again with `tool_result`.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })
const JsonRecord = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** Text. */
export const TextContent = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
/** An image, base64. */
export const ImageContent = Schema.Struct({
  type: Schema.Literal("image"),
  data: Schema.String,
  mimeType: Schema.String
})
/** Audio, base64. */
export const AudioContent = Schema.Struct({
  type: Schema.Literal("audio"),
  data: Schema.String,
  mimeType: Schema.String
})
/** The model's call of one of the request's tools (in an assistant message). */
export const ToolUseContent = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: JsonRecord,
  _meta: optional(JsonRecord)
})
/** What the server's run of a `tool_use` gave (in a user message): `CallToolResult`-like content. */
export const ToolResultContent = Schema.Struct({
  type: Schema.Literal("tool_result"),
  toolUseId: Schema.String,
  content: Schema.optionalWith(Schema.Array(JsonRecord), { default: () => [] }),
  structuredContent: optional(JsonRecord),
  isError: optional(Schema.Boolean),
  _meta: optional(JsonRecord)
})

/** One block of a sampling message. */
export const Block = Schema.Union(TextContent, ImageContent, AudioContent, ToolUseContent, ToolResultContent)
export type Block = typeof Block.Type

/** A message: one block or several. */
export const Message = Schema.Struct({
  role: Schema.Literal("user", "assistant"),
  content: Schema.Union(Block, Schema.Array(Block))
})

/** The server's advisory model preferences. */
export const ModelPreferences = Schema.Struct({
  hints: optional(Schema.Array(Schema.Struct({ name: optional(Schema.String) }))),
  costPriority: optional(Schema.Number),
  speedPriority: optional(Schema.Number),
  intelligencePriority: optional(Schema.Number)
})
export type ModelPreferences = typeof ModelPreferences.Type

/** A tool the model may call (an MCP `Tool`; it need not be one the server lists). */
export const Tool = Schema.Struct({
  name: Schema.String,
  title: optional(Schema.String),
  description: optional(Schema.String),
  inputSchema: JsonRecord
})
export type Tool = typeof Tool.Type

/** How the model may use the tools (default `auto`). */
export const ToolChoice = Schema.Struct({ mode: optional(Schema.Literal("auto", "required", "none")) })

/** `sampling/createMessage` params, as sent. */
export const CreateMessageParams = Schema.Struct({
  messages: Schema.Array(Message),
  modelPreferences: optional(ModelPreferences),
  systemPrompt: optional(Schema.String),
  includeContext: optional(Schema.Literal("none", "thisServer", "allServers")),
  temperature: optional(Schema.Number),
  maxTokens: Schema.Int.pipe(Schema.positive()),
  stopSequences: optional(Schema.Array(Schema.String)),
  metadata: optional(JsonRecord),
  tools: optional(Schema.Array(Tool)),
  toolChoice: optional(ToolChoice)
})
export type CreateMessageParams = typeof CreateMessageParams.Type

/** What a server asks, as the handler gets it: every message's content as a list. */
export interface Request {
  readonly server: string
  readonly messages: ReadonlyArray<{ readonly role: "user" | "assistant"; readonly content: ReadonlyArray<Block> }>
  readonly systemPrompt?: string | undefined
  readonly maxTokens: number
  readonly temperature?: number | undefined
  readonly stopSequences?: ReadonlyArray<string> | undefined
  readonly modelPreferences?: ModelPreferences | undefined
  /** Asked-for context inclusion; this client declares no `sampling.context`, so `none` is what it means. */
  readonly includeContext?: "none" | "thisServer" | "allServers" | undefined
  /** The tools offered to the model (none: a plain completion). */
  readonly tools: ReadonlyArray<Tool>
  readonly toolChoice: "auto" | "required" | "none"
}

/** A block of the answer: text, media, or (only when tools were offered) a tool call. */
export type ResultBlock =
  | typeof TextContent.Type
  | typeof ImageContent.Type
  | typeof AudioContent.Type
  | typeof ToolUseContent.Type

/** The answer (an MCP `CreateMessageResult`, role `assistant`). */
export interface Result {
  /** The model that answered. */
  readonly model: string
  /** `endTurn`, `stopSequence`, `maxTokens`, `toolUse`, or a provider's own. */
  readonly stopReason?: string | undefined
  /** One block, or several (e.g. text and tool calls). Without tools: exactly one text, image or audio block. */
  readonly content: ReadonlyArray<ResultBlock>
}

/** The error code of a refusal by the client's user or policy (the spec's "User rejected sampling request"). */
export const REJECTED = -1

/** The handler will not (or cannot) answer; the server gets `code` and `message` as the JSON-RPC error. */
export class SamplingRefused extends Data.TaggedError("SamplingRefused")<{
  readonly code: number
  readonly message: string
}> {}

/** What the embedding app provides to answer sampling requests. */
export interface Handler {
  /** Whether the model may be offered the server's tools (declared as `sampling.tools`). */
  readonly tools: boolean
  /**
   * Answers one request. It bounds itself (a person's deadline, the model's timeout); the engine
   * pauses the connection's request timeouts while it runs, and interrupts it when the server
   * cancels the request.
   */
  readonly createMessage: (request: Request) => Effect.Effect<Result, SamplingRefused>
}

/**
 * The sampling handler. When one is in context at connect time, the client declares `sampling`
 * (with `tools` when the handler supports them) on every transport; without one nothing is
 * declared and `sampling/createMessage` is answered "method not found".
 */
export class SamplingHandler extends Context.Tag("@skald/mcp/SamplingHandler")<SamplingHandler, Handler>() {}

/** The `sampling` capability of a handler. */
export const capability = (handler: Handler): Record<string, unknown> => handler.tools ? { tools: {} } : {}

const decodeParams = Schema.decodeUnknownEither(CreateMessageParams, { errors: "all" })

/** Why a request cannot be answered: a JSON-RPC error code and message. */
export interface Invalid {
  readonly code: number
  readonly message: string
}

const INVALID_PARAMS = -32602

const invalid = (message: string): Either.Either<never, Invalid> => Either.left({ code: INVALID_PARAMS, message })

/**
 * Reads `params` into a `Request` and checks what the spec requires (all `-32602`): the Schema;
 * `tools`/`toolChoice` only when `tools` was declared; a user message holding `tool_result` holds
 * nothing else ("Tool results mixed with other content"); `tool_use` only from the assistant and
 * `tool_result` only from the user; every assistant message with `tool_use` is followed at once by
 * a user message answering each of its ids, and every `tool_result` answers one of the message
 * before ("Tool result missing in request").
 */
export const parseRequest = (
  server: string,
  params: unknown,
  toolsDeclared: boolean
): Either.Either<Request, Invalid> => {
  const decoded = decodeParams(params)
  if (Either.isLeft(decoded)) {
    return invalid(`invalid sampling/createMessage params: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`)
  }
  const p = decoded.right
  if ((p.tools !== undefined || p.toolChoice !== undefined) && !toolsDeclared) {
    return invalid("this client did not declare sampling.tools: a request with tools or toolChoice is refused")
  }
  const messages = p.messages.map((m) => ({
    role: m.role,
    content: Array.isArray(m.content) ? m.content as ReadonlyArray<Block> : [m.content as Block]
  }))
  for (let i = 0; i < messages.length; i++) {
    const { content, role } = messages[i]!
    const results = content.filter((b) => b.type === "tool_result")
    const uses = content.filter((b) => b.type === "tool_use")
    if (results.length > 0 && results.length < content.length) return invalid("Tool results mixed with other content")
    if (results.length > 0 && role !== "user") return invalid("tool_result content must be in a user message")
    if (uses.length > 0 && role !== "assistant") return invalid("tool_use content must be in an assistant message")
    if (results.length > 0) {
      const previous = messages[i - 1]?.content ?? []
      const ids = new Set(previous.flatMap((b) => b.type === "tool_use" ? [b.id] : []))
      for (const result of results) {
        if (!ids.has((result as typeof ToolResultContent.Type).toolUseId)) {
          return invalid(
            `a tool_result (toolUseId ${
              JSON.stringify((result as typeof ToolResultContent.Type).toolUseId)
            }) answers no tool_use of the message before it`
          )
        }
      }
    }
    if (uses.length > 0) {
      const next = messages[i + 1]?.content ?? []
      const answered = new Set(next.flatMap((b) => b.type === "tool_result" ? [b.toolUseId] : []))
      if (uses.some((u) => !answered.has((u as typeof ToolUseContent.Type).id))) {
        return invalid("Tool result missing in request")
      }
    }
  }
  return Either.right({
    server,
    messages,
    systemPrompt: p.systemPrompt,
    maxTokens: p.maxTokens,
    temperature: p.temperature,
    stopSequences: p.stopSequences,
    modelPreferences: p.modelPreferences,
    includeContext: p.includeContext,
    tools: p.tools ?? [],
    toolChoice: p.toolChoice?.mode ?? "auto"
  })
}

/**
 * The wire `CreateMessageResult` of an answer: one block as an object (the only form a server
 * that offered no tools reads), several as a list.
 */
export const encodeResult = (result: Result): Record<string, unknown> => ({
  role: "assistant",
  content: result.content.length === 1 ? result.content[0] : result.content,
  model: result.model,
  ...(result.stopReason === undefined ? {} : { stopReason: result.stopReason })
})
