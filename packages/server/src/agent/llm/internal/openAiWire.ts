/**
 * The OpenAI chat-completions wire format, as plain functions and one small mutable accumulator:
 * a `Prompt` and tools to a request body, SSE chunks to `Response` stream parts, an error body to
 * the provider's own message, a `Retry-After` header to a delay.
 *
 * Kept free of Effect so the streaming path stays lean (one `JSON.parse` per event, one part per
 * delta) and the pieces can be tested as pure functions.
 *
 * @internal
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as DateTime from "effect/DateTime"
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Option from "effect/Option"
import type * as GenerationConfig from "../GenerationConfig.js"

/** A chunk's `created` (seconds since the epoch) as an ISO timestamp; nothing when it is not a valid time. */
const createdAt = (created: unknown): { readonly timestamp?: string } =>
  typeof created === "number"
    ? Option.match(DateTime.make(created * 1000), {
      onNone: () => ({}),
      onSome: (at) => ({ timestamp: DateTime.formatIso(at) })
    })
    : {}

// -----------------------------------------------------------------------------
// Request
// -----------------------------------------------------------------------------

/** A chat-completions message as sent. */
export type WireMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string | ReadonlyArray<WireUserContent> }
  | {
    readonly role: "assistant"
    readonly content: string | null
    readonly tool_calls?: ReadonlyArray<WireToolCall>
  }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

/** A part of a user message with an image. */
export type WireUserContent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly image_url: { readonly url: string } }

/** An assistant's tool call as sent back to the server. */
export interface WireToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

/** A tool as sent: its parameters are the tool's JSON Schema, untouched, and never `strict`. */
export interface WireTool {
  readonly type: "function"
  readonly function: { readonly name: string; readonly description?: string; readonly parameters: unknown }
}

/** A prompt part this provider cannot send (a non-image file). */
export class UnsupportedPart {
  constructor(readonly description: string) {}
}

const fileUrl = (part: Prompt.FilePart): string => {
  const data = part.data
  if (data instanceof URL) return data.href
  if (typeof data === "string") {
    return /^(data|https?):/.test(data) ? data : `data:${part.mediaType};base64,${data}`
  }
  return `data:${part.mediaType};base64,${Encoding.encodeBase64(data)}`
}

const userMessage = (message: Prompt.UserMessage): WireMessage | UnsupportedPart => {
  let text = ""
  let hasFile = false
  for (const part of message.content) {
    if (part.type === "text") text = text === "" ? part.text : `${text}\n${part.text}`
    else hasFile = true
  }
  // Text only (the common case, and the only form some servers accept): one string.
  if (!hasFile) return { role: "user", content: text }
  const content: Array<WireUserContent> = []
  for (const part of message.content) {
    if (part.type === "text") {
      content.push({ type: "text", text: part.text })
    } else if (part.mediaType.startsWith("image/")) {
      content.push({ type: "image_url", image_url: { url: fileUrl(part) } })
    } else {
      return new UnsupportedPart(
        `An OpenAI-compatible model accepts images only; the prompt has a ${part.mediaType} file` +
          (part.fileName === undefined ? "" : ` (${part.fileName})`) + ": send it as text or as an image."
      )
    }
  }
  return { role: "user", content }
}

const assistantMessage = (message: Prompt.AssistantMessage): WireMessage => {
  let text = ""
  const toolCalls: Array<WireToolCall> = []
  for (const part of message.content) {
    if (part.type === "text") text += part.text
    else if (part.type === "tool-call" && part.providerExecuted !== true) {
      toolCalls.push({
        id: part.id,
        type: "function",
        function: { name: part.name, arguments: JSON.stringify(part.params ?? {}) }
      })
    }
    // reasoning, files and provider-executed results are not sent back
  }
  return toolCalls.length === 0
    ? { role: "assistant", content: text }
    : { role: "assistant", content: text === "" ? null : text, tool_calls: toolCalls }
}

/** A tool result as the text of a `tool` message: a string as is, anything else as JSON. */
export const toolResultContent = (result: unknown): string =>
  typeof result === "string" ? result : JSON.stringify(result ?? null)

/** The wire messages of one prompt message (a `tool` message gives one per result). */
export const messageWire = (message: Prompt.Message): ReadonlyArray<WireMessage> | UnsupportedPart => {
  switch (message.role) {
    case "system":
      return [{ role: "system", content: message.content }]
    case "user": {
      const user = userMessage(message)
      return user instanceof UnsupportedPart ? user : [user]
    }
    case "assistant":
      return [assistantMessage(message)]
    case "tool":
      return message.content.map((part) => ({
        role: "tool",
        tool_call_id: part.id,
        content: toolResultContent(part.result)
      }))
  }
}

/** The `tools` of a request: each tool's JSON Schema as `parameters`, passed through untouched. */
export const tools = (list: ReadonlyArray<Tool.Any>): Array<WireTool> =>
  list.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters: Tool.getJsonSchema(tool as any)
    }
  }))

/** The `tool_choice` of a request (`undefined` = leave it out: the server's default, `auto`). */
export const toolChoice = (choice: LanguageModel.ProviderOptions["toolChoice"]): unknown => {
  if (choice === "auto") return undefined
  if (choice === "none" || choice === "required") return choice
  if ("tool" in choice) return { type: "function", function: { name: choice.tool } }
  return choice.mode === "required" ? "required" : undefined
}

/** The body but its `messages` and `tools`. */
const bodyHead = (
  model: string,
  options: LanguageModel.ProviderOptions,
  responseFormatSchema: unknown,
  config: GenerationConfig.Config
): Record<string, unknown> => {
  const body: Record<string, unknown> = {
    model,
    stream: true,
    stream_options: { include_usage: true }
  }
  if (config.maxTokens !== undefined) body.max_tokens = config.maxTokens
  if (config.temperature !== undefined) body.temperature = config.temperature
  if (config.stopSequences !== undefined && config.stopSequences.length > 0) body.stop = config.stopSequences
  if (options.tools.length > 0) {
    const choice = toolChoice(options.toolChoice)
    if (choice !== undefined) body.tool_choice = choice
  }
  if (options.responseFormat.type === "json") {
    body.response_format = {
      type: "json_schema",
      json_schema: { name: options.responseFormat.objectName, schema: responseFormatSchema }
    }
  }
  return body
}

/** Each message's wire messages as JSON, comma-joined, kept while the message lives. */
const messageJsonCache = new WeakMap<Prompt.Message, string>()
/** A tool list's `tools` as JSON, kept while the list lives (the loop offers one list while its tools stay). */
const toolsJsonCache = new WeakMap<ReadonlyArray<Tool.Any>, string>()

/**
 * The JSON body of a streaming chat-completions request, as text. The turn loop sends the same message values every round (its history is appended to)
 * and the same tool list while its tools stay, so each message and each tool list is made into
 * JSON once: a round encodes only its new messages, however long the history (a long session's
 * tool results are up to the result cap each).
 */
export const requestJson = (
  model: string,
  options: LanguageModel.ProviderOptions,
  responseFormatSchema: unknown,
  config: GenerationConfig.Config = {}
): string | UnsupportedPart => {
  const parts: Array<string> = []
  for (const message of options.prompt.content) {
    let json = messageJsonCache.get(message)
    if (json === undefined) {
      const wire = messageWire(message)
      if (wire instanceof UnsupportedPart) return wire
      json = wire.map((m) => JSON.stringify(m)).join(",")
      messageJsonCache.set(message, json)
    }
    if (json !== "") parts.push(json)
  }
  // The head is an object with keys (`{"model":…}`): the messages go before its first key, the tools after its last.
  const head = JSON.stringify(bodyHead(model, options, responseFormatSchema, config))
  const front = `{"messages":[${parts.join(",")}],${head.slice(1)}`
  if (options.tools.length === 0) return front
  let toolsJson = toolsJsonCache.get(options.tools)
  if (toolsJson === undefined) {
    toolsJson = JSON.stringify(tools(options.tools))
    toolsJsonCache.set(options.tools, toolsJson)
  }
  return `${front.slice(0, -1)},"tools":${toolsJson}}`
}

// -----------------------------------------------------------------------------
// Errors
// -----------------------------------------------------------------------------

const maxMessage = 1000

const clip = (text: string): string => text.length > maxMessage ? `${text.slice(0, maxMessage)}…` : text

const messageOf = (value: unknown): string | undefined => {
  if (typeof value === "string") return value === "" ? undefined : value
  if (typeof value !== "object" || value === null) return undefined
  const record = value as Record<string, unknown>
  const message = typeof record.message === "string" ? record.message : undefined
  if (message === undefined) return messageOf(record.error) ?? messageOf(record.detail)
  const code = typeof record.code === "string" || typeof record.code === "number"
    ? record.code
    : typeof record.type === "string"
    ? record.type
    : undefined
  return code === undefined ? message : `${message} (${code})`
}

/**
 * The provider's own message in an error value: OpenAI's `{"error":{"message","code"}}`, Ollama's
 * `{"error":"…"}`, vLLM/FastAPI's `{"detail":…}`, a top-level `message`.
 */
export const providerMessage = (value: unknown): string | undefined => {
  const message = messageOf(value)
  return message === undefined ? undefined : clip(message)
}

/** The provider's message in an error body (JSON or plain text). */
export const bodyMessage = (body: string): string | undefined => {
  const parsed = parseJson(body)
  if (Either.isRight(parsed)) {
    const message = providerMessage(parsed.right)
    if (message !== undefined) return message
  }
  const trimmed = body.trim()
  return trimmed === "" ? undefined : clip(trimmed)
}

/** `JSON.parse`, as an `Either`. */
export const parseJson = (text: string): Either.Either<unknown, unknown> => Either.try(() => JSON.parse(text))

/** The delay a server asks for (shared with the Anthropic provider). */
export { retryAfterMillis } from "./retryAfter.js"

// -----------------------------------------------------------------------------
// Stream
// -----------------------------------------------------------------------------

interface PendingCall {
  id: string | undefined
  name: string
  args: string
}

/** Usage as the server reports it. */
interface WireUsage {
  readonly prompt_tokens?: number | null
  readonly completion_tokens?: number | null
  readonly total_tokens?: number | null
  readonly completion_tokens_details?: { readonly reasoning_tokens?: number | null } | null
  readonly prompt_tokens_details?: { readonly cached_tokens?: number | null } | null
}

/** Why the accumulator stopped: the server's own error event, or an event that is not JSON. */
export type StreamFailure =
  | { readonly _tag: "ProviderError"; readonly message: string }
  | { readonly _tag: "NotJson"; readonly data: string }
  | { readonly _tag: "BadArguments"; readonly name: string; readonly args: string }

const finishReason = (reason: string | null | undefined, hasCalls: boolean): Response.FinishReason => {
  switch (reason) {
    case "stop":
      // Some servers (Ollama among them) finish a tool-calling turn with "stop".
      return hasCalls ? "tool-calls" : "stop"
    case "length":
      return "length"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case "content_filter":
      return "content-filter"
    case null:
    case undefined:
      return hasCalls ? "tool-calls" : "unknown"
    default:
      return "other"
  }
}

const isCompleteJson = (text: string): boolean => text !== "" && Either.isRight(parseJson(text))

const numberOr = (value: number | null | undefined): number | undefined => typeof value === "number" ? value : undefined

/**
 * Folds chat-completions SSE chunks into `Response` stream parts, tolerating the known quirks of
 * OpenAI-compatible servers:
 *
 * - tool-call `index` always 0, or missing: a delta with a new `id`, or one that names a tool
 *   while the call at its index already has a name and complete JSON arguments, starts a new call;
 * - the first delta of a call without `id`: an id is synthesized at the end (`missingIds`);
 * - the whole arguments in one delta;
 * - `choices: null` (or `[]`) on the usage chunk, usage on the last choice chunk instead;
 * - a mid-stream `{"error": …}` event: `feed` returns it as a `StreamFailure`.
 *
 * Text and reasoning are streamed as they come (one part per delta); tool calls are emitted whole
 * by `finish`, with `finish` last.
 */
export class StreamAccumulator {
  private textId: string | undefined = undefined
  private reasoningId: string | undefined = undefined
  private blocks = 0
  private readonly calls: Array<PendingCall> = []
  private readonly bySlot = new Map<number, PendingCall>()
  private reason: string | null | undefined = undefined
  private usage: WireUsage | undefined = undefined
  private sawMetadata = false
  /** Set once the server sent an error event or an unreadable one: the stream stops there. */
  failure: StreamFailure | undefined = undefined

  /** Feeds one SSE event's `data` (not `[DONE]`), pushing the parts it yields to `out`. */
  feed(data: string, out: Array<Response.StreamPartEncoded>): void {
    if (this.failure !== undefined) return
    const parsed = parseJson(data)
    if (Either.isLeft(parsed) || typeof parsed.right !== "object" || parsed.right === null) {
      this.failure = { _tag: "NotJson", data: clip(data) }
      return
    }
    const chunk = parsed.right as Record<string, any>
    if (chunk.error !== undefined && chunk.error !== null) {
      this.failure = {
        _tag: "ProviderError",
        message: providerMessage(chunk.error) ?? clip(JSON.stringify(chunk.error))
      }
      return
    }
    if (!this.sawMetadata && typeof chunk.id === "string") {
      this.sawMetadata = true
      out.push({
        type: "response-metadata",
        id: chunk.id,
        ...(typeof chunk.model === "string" ? { modelId: chunk.model } : {}),
        ...createdAt(chunk.created)
      })
    }
    if (chunk.usage !== undefined && chunk.usage !== null) this.usage = chunk.usage
    const choices = chunk.choices
    if (!Array.isArray(choices)) return
    for (let i = 0; i < choices.length; i++) {
      const choice = choices[i]
      // `n` is never asked for: only the first choice counts.
      if (choice === null || typeof choice !== "object" || (choice.index !== undefined && choice.index !== 0)) continue
      if (choice.finish_reason !== undefined && choice.finish_reason !== null) this.reason = choice.finish_reason
      // `message`: a server that ignored `stream: true` and answered one chat.completion object
      const delta = choice.delta ?? choice.message
      if (delta === null || typeof delta !== "object") continue
      const reasoning = typeof delta.reasoning_content === "string"
        ? delta.reasoning_content
        : typeof delta.reasoning === "string"
        ? delta.reasoning
        : undefined
      if (reasoning !== undefined && reasoning !== "") {
        if (this.reasoningId === undefined) {
          this.reasoningId = `reasoning-${this.blocks++}`
          out.push({ type: "reasoning-start", id: this.reasoningId })
        }
        out.push({ type: "reasoning-delta", id: this.reasoningId, delta: reasoning })
      }
      const content = delta.content
      if (typeof content === "string" && content !== "") {
        if (this.reasoningId !== undefined) {
          out.push({ type: "reasoning-end", id: this.reasoningId })
          this.reasoningId = undefined
        }
        if (this.textId === undefined) {
          this.textId = `text-${this.blocks++}`
          out.push({ type: "text-start", id: this.textId })
        }
        out.push({ type: "text-delta", id: this.textId, delta: content })
      }
      const toolCalls = delta.tool_calls
      if (Array.isArray(toolCalls)) {
        for (let j = 0; j < toolCalls.length; j++) this.toolCallDelta(toolCalls[j])
      }
    }
  }

  private toolCallDelta(delta: any): void {
    if (delta === null || typeof delta !== "object") return
    const slot = typeof delta.index === "number" ? delta.index : 0
    const id = typeof delta.id === "string" && delta.id !== "" ? delta.id : undefined
    const fn = delta.function !== null && typeof delta.function === "object" ? delta.function : undefined
    const name = typeof fn?.name === "string" ? fn.name : undefined
    const args = typeof fn?.arguments === "string"
      ? fn.arguments
      : fn?.arguments !== undefined && fn?.arguments !== null
      ? JSON.stringify(fn.arguments) // a server that sends the arguments as an object
      : undefined
    let call = this.bySlot.get(slot)
    const startsNew = call === undefined ||
      (id !== undefined && id !== call.id && (call.id !== undefined || isCompleteJson(call.args))) ||
      (id === undefined && name !== undefined && name !== "" && call.name !== "" && isCompleteJson(call.args))
    if (startsNew || call === undefined) {
      call = { id, name: name ?? "", args: args ?? "" }
      this.calls.push(call)
      this.bySlot.set(slot, call)
      return
    }
    if (call.id === undefined && id !== undefined) call.id = id
    if (name !== undefined && call.name === "") call.name = name
    if (args !== undefined) call.args += args
  }

  /** How many tool calls came without an id (`finish` takes that many synthesized ids). */
  get missingIds(): number {
    let n = 0
    for (const call of this.calls) if (call.id === undefined) n++
    return n
  }

  /**
   * Closes the open text and reasoning, pushes the tool calls (ids the server did not send are
   * taken from `ids`, in order) and the `finish` part.
   */
  finish(out: Array<Response.StreamPartEncoded>, ids: ReadonlyArray<string>): void {
    if (this.reasoningId !== undefined) out.push({ type: "reasoning-end", id: this.reasoningId })
    if (this.textId !== undefined) out.push({ type: "text-end", id: this.textId })
    this.reasoningId = this.textId = undefined
    let next = 0
    for (const call of this.calls) {
      if (call.name === "") continue // a fragment that never named its tool
      const parsed = call.args.trim() === "" ? Either.right({}) : parseJson(call.args)
      if (Either.isLeft(parsed)) {
        this.failure = { _tag: "BadArguments", name: call.name, args: clip(call.args) }
        return
      }
      out.push({
        type: "tool-call",
        id: call.id ?? ids[next++] ?? `call_${next}`,
        name: call.name,
        params: parsed.right
      })
    }
    const usage = this.usage
    const inputTokens = numberOr(usage?.prompt_tokens)
    const outputTokens = numberOr(usage?.completion_tokens)
    const reasoningTokens = numberOr(usage?.completion_tokens_details?.reasoning_tokens)
    const cachedInputTokens = numberOr(usage?.prompt_tokens_details?.cached_tokens)
    out.push({
      type: "finish",
      reason: finishReason(this.reason, this.calls.some((call) => call.name !== "")),
      usage: {
        inputTokens,
        outputTokens,
        totalTokens: numberOr(usage?.total_tokens) ??
          (inputTokens !== undefined && outputTokens !== undefined ? inputTokens + outputTokens : undefined),
        ...(reasoningTokens === undefined ? {} : { reasoningTokens }),
        ...(cachedInputTokens === undefined ? {} : { cachedInputTokens })
      }
    })
  }
}

/** Folds stream parts into the non-streaming parts `generateText` returns. */
export const collect = (parts: Iterable<Response.StreamPartEncoded>): Array<Response.PartEncoded> => {
  const out: Array<Response.PartEncoded> = []
  const open = new Map<string, { type: "text" | "reasoning"; text: string }>()
  for (const part of parts) {
    switch (part.type) {
      case "text-start":
      case "reasoning-start":
        open.set(part.id, { type: part.type === "text-start" ? "text" : "reasoning", text: "" })
        break
      case "text-delta":
      case "reasoning-delta": {
        const block = open.get(part.id)
        if (block !== undefined) block.text += part.delta
        break
      }
      case "text-end":
      case "reasoning-end": {
        const block = open.get(part.id)
        if (block !== undefined) out.push({ type: block.type, text: block.text })
        open.delete(part.id)
        break
      }
      case "tool-call":
      case "response-metadata":
      case "finish":
        out.push(part)
        break
      default:
        break
    }
  }
  return out
}
