/**
 * The Messages API wire format for the turn loop's raw parts (StreamParts.ts), as plain functions
 * and one small accumulator: a `Prompt` and tools to a request body, the client's stream events
 * (`AnthropicClient.createMessageStream`) to `Response` stream parts. `@effect/ai-anthropic` does
 * the same behind `LanguageModel` (which decodes every part with a schema built per request); this
 * is the subset the loop sends and reads: text, images, tool calls and results, thinking, usage.
 *
 * @internal
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"

/** A content block of a request message. */
export type WireBlock =
  | { readonly type: "text"; readonly text: string }
  | {
    readonly type: "image"
    readonly source:
      | { readonly type: "url"; readonly url: string }
      | { readonly type: "base64"; readonly media_type: string; readonly data: string }
  }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown }
  | { readonly type: "tool_result"; readonly tool_use_id: string; readonly content: string; readonly is_error: boolean }

/** A request message. */
export interface WireMessage {
  readonly role: "user" | "assistant"
  readonly content: Array<WireBlock>
}

/** A prompt part the Messages API cannot take here (a file that is not an image). */
export class UnsupportedPart {
  constructor(readonly description: string) {}
}

const imageSource = (part: Prompt.FilePart) => {
  if (part.data instanceof URL) return { type: "url", url: part.data.href } as const
  const data = typeof part.data === "string" ? part.data : Encoding.encodeBase64(part.data)
  return { type: "base64", media_type: part.mediaType === "image/*" ? "image/jpeg" : part.mediaType, data } as const
}

/**
 * The `system` blocks and `messages` of a prompt: consecutive user and tool messages are one user
 * message, consecutive assistant messages one assistant message (the API alternates roles), as
 * `@effect/ai-anthropic` sends them; a tool result is its JSON (`is_error` from `isFailure`).
 */
export const messages = (
  prompt: Prompt.Prompt
):
  | { readonly system: Array<{ type: "text"; text: string }>; readonly messages: Array<WireMessage> }
  | UnsupportedPart =>
{
  const system: Array<{ type: "text"; text: string }> = []
  const out: Array<WireMessage> = []
  const into = (role: "user" | "assistant"): Array<WireBlock> => {
    const last = out[out.length - 1]
    if (last !== undefined && last.role === role) return last.content
    const message: WireMessage = { role, content: [] }
    out.push(message)
    return message.content
  }
  for (const message of prompt.content) {
    switch (message.role) {
      case "system":
        system.push({ type: "text", text: message.content })
        break
      case "user": {
        const content = into("user")
        for (const part of message.content) {
          if (part.type === "text") content.push({ type: "text", text: part.text })
          else if (part.mediaType.startsWith("image/")) content.push({ type: "image", source: imageSource(part) })
          else {
            return new UnsupportedPart(
              `The Anthropic provider sends images only to the turn loop's model; the prompt has a ${part.mediaType} file` +
                (part.fileName === undefined ? "" : ` (${part.fileName})`) + ": send it as text or as an image."
            )
          }
        }
        break
      }
      case "tool": {
        const content = into("user")
        for (const part of message.content) {
          content.push({
            type: "tool_result",
            tool_use_id: part.id,
            content: JSON.stringify(part.result),
            is_error: part.isFailure
          })
        }
        break
      }
      case "assistant": {
        const content = into("assistant")
        for (const part of message.content) {
          if (part.type === "text") content.push({ type: "text", text: part.text })
          else if (part.type === "tool-call" && part.providerExecuted !== true) {
            content.push({ type: "tool_use", id: part.id, name: part.name, input: part.params ?? {} })
          }
          // reasoning without its signature, files and provider-executed results are not sent back
        }
        break
      }
    }
  }
  // The API refuses an assistant message ending in whitespace as the last message.
  const last = out[out.length - 1]
  const lastBlock = last?.role === "assistant" ? last.content[last.content.length - 1] : undefined
  if (lastBlock?.type === "text") {
    last!.content[last!.content.length - 1] = { type: "text", text: lastBlock.text.trim() }
  }
  return { system, messages: out }
}

/** The request's `tools` and `tool_choice` (none when there is no tool). */
export const tools = (options: Pick<LanguageModel.ProviderOptions, "tools">) =>
  options.tools.length === 0 ? {} : {
    tools: options.tools.map((tool) => ({
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      input_schema: Tool.getJsonSchema(tool as any)
    })),
    tool_choice: { type: "auto" }
  }

/** Why the fold stopped: the server's error event, or a tool call whose input is not JSON. */
export type StreamFailure =
  | { readonly _tag: "ProviderError"; readonly error: unknown }
  | { readonly _tag: "BadArguments"; readonly name: string; readonly args: string }

const finishReason = (reason: string | null | undefined): Response.FinishReason => {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
    case "pause_turn":
      return "stop"
    case "max_tokens":
      return "length"
    case "tool_use":
      return "tool-calls"
    case "refusal":
      return "content-filter"
    default:
      return "unknown"
  }
}

type Block =
  | { readonly type: "text"; readonly id: string }
  | { readonly type: "reasoning"; readonly id: string }
  | { readonly type: "tool-call"; readonly id: string; readonly name: string; input: string }
  | { readonly type: "other" }

/** A stream event as the client decodes it (only the fields read here). */
export interface Event {
  readonly type: string
  readonly [key: string]: any
}

/** Folds the client's stream events into parts (a tool call whole at its block's end; `finish` last). */
export class StreamAccumulator {
  private readonly blocks = new Map<number, Block>()
  private inputTokens: number | undefined = undefined
  private outputTokens: number | undefined = undefined
  private cachedInputTokens: number | undefined = undefined
  private reason: string | null | undefined = undefined
  failure: StreamFailure | undefined = undefined

  feed(event: Event, out: Array<Response.StreamPartEncoded>): void {
    if (this.failure !== undefined) return
    switch (event.type) {
      case "message_start": {
        const usage = event.message?.usage
        this.inputTokens = usage?.input_tokens ?? undefined
        this.cachedInputTokens = usage?.cache_read_input_tokens ?? undefined
        out.push({
          type: "response-metadata",
          ...(typeof event.message?.id === "string" ? { id: event.message.id } : {}),
          ...(typeof event.message?.model === "string" ? { modelId: event.message.model } : {})
        })
        break
      }
      case "content_block_start": {
        const block = event.content_block
        const id = `${block?.type}-${event.index}`
        switch (block?.type) {
          case "text":
            this.blocks.set(event.index, { type: "text", id })
            out.push({ type: "text-start", id })
            if (typeof block.text === "string" && block.text !== "") {
              out.push({ type: "text-delta", id, delta: block.text })
            }
            break
          case "thinking":
          case "redacted_thinking":
            this.blocks.set(event.index, { type: "reasoning", id })
            out.push({ type: "reasoning-start", id })
            break
          case "tool_use": {
            // An input given whole at the start (not the API's habit) is kept unless deltas follow.
            const start = block.input !== undefined && Object.keys(block.input ?? {}).length > 0
              ? JSON.stringify(block.input)
              : ""
            this.blocks.set(event.index, { type: "tool-call", id: block.id, name: block.name, input: start })
            break
          }
          default:
            this.blocks.set(event.index, { type: "other" })
        }
        break
      }
      case "content_block_delta": {
        const block = this.blocks.get(event.index)
        const delta = event.delta
        if (block === undefined) break
        if (block.type === "text" && delta?.type === "text_delta") {
          out.push({ type: "text-delta", id: block.id, delta: delta.text })
        } else if (block.type === "reasoning" && delta?.type === "thinking_delta") {
          out.push({ type: "reasoning-delta", id: block.id, delta: delta.thinking })
        } else if (block.type === "tool-call" && delta?.type === "input_json_delta") {
          block.input += delta.partial_json
        }
        break
      }
      case "content_block_stop": {
        const block = this.blocks.get(event.index)
        this.blocks.delete(event.index)
        if (block === undefined || block.type === "other") break
        if (block.type === "text") out.push({ type: "text-end", id: block.id })
        else if (block.type === "reasoning") out.push({ type: "reasoning-end", id: block.id })
        else {
          const input = block.input
          const params = input.trim() === "" ? Either.right({}) : Either.try(() => JSON.parse(input) as unknown)
          if (Either.isLeft(params)) {
            this.failure = { _tag: "BadArguments", name: block.name, args: input.slice(0, 1000) }
            return
          }
          out.push({ type: "tool-call", id: block.id, name: block.name, params: params.right })
        }
        break
      }
      case "message_delta": {
        if (typeof event.usage?.output_tokens === "number") this.outputTokens = event.usage.output_tokens
        if (event.delta?.stop_reason !== undefined && event.delta?.stop_reason !== null) {
          this.reason = event.delta.stop_reason
        }
        break
      }
      case "message_stop": {
        out.push({
          type: "finish",
          reason: finishReason(this.reason),
          usage: {
            inputTokens: this.inputTokens,
            outputTokens: this.outputTokens,
            totalTokens: (this.inputTokens ?? 0) + (this.outputTokens ?? 0),
            ...(this.cachedInputTokens === undefined ? {} : { cachedInputTokens: this.cachedInputTokens })
          }
        })
        break
      }
      case "error":
        this.failure = { _tag: "ProviderError", error: event.error }
        break
      default:
        break
    }
  }
}
