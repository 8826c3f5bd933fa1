/**
 * A session's history between the model's messages (`@effect/ai`'s `Prompt`) and the stored rows
 * (agent/ChatStore.ts), both ways, pure. The turn loop builds the messages it sends with the
 * constructors here and persists them with `rowOf`; `replay` rebuilds the same messages from the
 * rows, so what the next turn sends is exactly what was sent live (History.test.ts checks it).
 *
 * An assistant message's tool calls and their results are one set of rows (`chat_llm_tools`): replay
 * gives every call exactly one result, right after its message, in the calls' order — so a stored
 * history is always one the providers accept, whatever stopped the turn. A call still `running` in
 * the rows (the process died mid-call) replays as a failed result saying so.
 *
 * @since 0.1.0
 */
import * as Prompt from "@effect/ai/Prompt"
import type { TurnEvent } from "@skald/domain"
import { ToolResult } from "@skald/domain"

/** A stored call's status: `running` until it ends. */
export type CallStatus = "running" | TurnEvent.ToolStatus

/** One tool call of an assistant message, with its outcome. */
export interface CallRow {
  readonly callId: string
  readonly name: string
  /** The arguments, a JSON object. */
  readonly arguments: unknown
  readonly status: CallStatus
  /** What the model reads (`toWire`); absent while running. */
  readonly result: string | undefined
  readonly resultType: ToolResult.ResultKind
}

/** One stored message; only an assistant message has calls. */
export interface MessageRow {
  readonly role: "system" | "user" | "assistant" | "tool"
  readonly text: string
  readonly calls: ReadonlyArray<CallRow>
}

/** The result the model reads for a call the user stopped. */
export const CANCELLED_RESULT = "The tool call was cancelled by the user before it finished."

/** The result the model reads for a call the host never saw end (it stopped mid-call). */
export const INTERRUPTED_RESULT = "The tool call was interrupted (the host stopped) before it finished."

/**
 * The start of the result the model reads for a call the tool answered with `isError: true`
 * (every provider sees it; Anthropic also gets `is_error`, from the part's `isFailure`).
 */
export const TOOL_ERROR_PREFIX = "The tool reported an error:\n"

/** The system message. */
export const system = (text: string): Prompt.SystemMessage => Prompt.systemMessage({ content: text })

/** The user's message. */
export const user = (text: string): Prompt.UserMessage => Prompt.userMessage({ content: [Prompt.textPart({ text })] })

/** A tool call as the model made it. */
export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly params: unknown
}

/**
 * The assistant's message of one round: its text (omitted when empty) and its tool calls, in order;
 * `undefined` when the round produced neither (providers refuse an empty message).
 */
export const assistant = (text: string, calls: ReadonlyArray<ToolCall>): Prompt.AssistantMessage | undefined => {
  const content: Array<Prompt.AssistantMessagePart> = []
  if (text.length > 0) content.push(Prompt.textPart({ text }))
  for (const call of calls) {
    content.push(Prompt.toolCallPart({ id: call.id, name: call.name, params: call.params, providerExecuted: false }))
  }
  return content.length === 0 ? undefined : Prompt.assistantMessage({ content })
}

/** What the model reads for one call: the text, or the JSON value for a `json` result; failed unless `done`. */
export const resultPart = (call: CallRow): Prompt.ToolResultPart => {
  const result = call.result ?? (call.status === "running" ? INTERRUPTED_RESULT : CANCELLED_RESULT)
  return Prompt.toolResultPart({
    id: call.callId,
    name: call.name,
    isFailure: call.status !== "done",
    result: call.resultType === "json" && call.result !== undefined ? JSON.parse(result) : result,
    providerExecuted: false
  })
}

/** The tool message answering every call of an assistant message, in the calls' order. */
export const toolResults = (calls: ReadonlyArray<CallRow>): Prompt.ToolMessage =>
  Prompt.toolMessage({ content: calls.map(resultPart) })

/** The messages one row stands for: none, one, or an assistant message and its tool results. */
export const messagesOf = (row: MessageRow): ReadonlyArray<Prompt.Message> => {
  switch (row.role) {
    case "system":
      return [system(row.text)]
    case "user":
      return [user(row.text)]
    case "tool":
      // Tool results are replayed from their calls' rows, after the assistant message.
      return []
    case "assistant": {
      const message = assistant(row.text, row.calls.map((c) => ({ id: c.callId, name: c.name, params: c.arguments })))
      if (message === undefined) return []
      return row.calls.length === 0 ? [message] : [message, toolResults(row.calls)]
    }
  }
}

/**
 * The message with its tool calls' and results' names given by `rename` (the names the provider
 * accepts, ToolNames.ts); the loop keeps the MCP names and renames each time it asks.
 */
export const withToolNames = (message: Prompt.Message, rename: (name: string) => string): Prompt.Message => {
  if (message.role === "assistant") {
    if (!message.content.some((p) => p.type === "tool-call" && rename(p.name) !== p.name)) return message
    return Prompt.assistantMessage({
      content: message.content.map((p) =>
        p.type === "tool-call"
          ? Prompt.toolCallPart({
            id: p.id,
            name: rename(p.name),
            params: p.params,
            providerExecuted: p.providerExecuted
          })
          : p
      )
    })
  }
  if (message.role === "tool") {
    if (!message.content.some((p) => rename(p.name) !== p.name)) return message
    return Prompt.toolMessage({
      content: message.content.map((p) =>
        Prompt.toolResultPart({
          id: p.id,
          name: rename(p.name),
          isFailure: p.isFailure,
          result: p.result,
          providerExecuted: p.providerExecuted
        })
      )
    })
  }
  return message
}

/** The provider messages of a stored history, in order. */
export const replay = (rows: ReadonlyArray<MessageRow>): Array<Prompt.Message> => rows.flatMap(messagesOf)

/**
 * The row of an assistant message as the loop persists it: its text parts joined, its calls
 * `running` (their outcomes are recorded as they end). Reasoning and file parts are not kept.
 */
export const rowOf = (message: Prompt.AssistantMessage): MessageRow => {
  let text = ""
  const calls: Array<CallRow> = []
  for (const part of message.content) {
    if (part.type === "text") text += part.text
    else if (part.type === "tool-call") {
      calls.push({
        callId: part.id,
        name: part.name,
        arguments: part.params,
        status: "running",
        result: undefined,
        resultType: "string"
      })
    }
  }
  return { role: "assistant", text, calls }
}

/**
 * The stored form of a result: `toWire` and `kind`, cut to `cap` UTF-8 bytes with a note saying so
 * (a cut JSON result is no longer JSON: it becomes `string`).
 */
export const capResult = (
  result: ToolResult.ToolResult,
  cap: number
): { readonly result: string; readonly resultType: ToolResult.ResultKind; readonly truncated: boolean } => {
  const wire = ToolResult.toWire(result)
  const bytes = Buffer.byteLength(wire, "utf8")
  if (bytes <= cap) return { result: wire, resultType: ToolResult.kind(result), truncated: false }
  // Cut on a character boundary: decoding a cut buffer drops a partial last character.
  const cut = Buffer.from(wire, "utf8").subarray(0, cap).toString("utf8").replace(/\uFFFD$/, "")
  const note = `\n\n[truncated: the result was ${bytes} bytes; only the first ${cap} are shown]`
  return { result: cut + note, resultType: "string", truncated: true }
}

/** The `/api/mcp-media/…` links (bare or absolute) in a result's markdown. */
export const mediaUrls = (text: string): Array<string> =>
  [...text.matchAll(/\]\(((?:https?:\/\/[^\s)]*)?\/api\/mcp-media\/[^\s)]+)\)/g)].map((m) => m[1]!)

/**
 * Why a history is not one the providers accept, or undefined when it is: every assistant tool call
 * is answered by exactly one result, in the next message (a tool message), in the calls' order; a
 * tool message follows an assistant message with calls; no message is empty.
 */
export const problemOf = (messages: ReadonlyArray<Prompt.Message>): string | undefined => {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!
    if (message.role !== "system" && message.content.length === 0) return `message ${i} is empty`
    const previous = messages[i - 1]
    if (message.role === "tool") {
      if (previous?.role !== "assistant" || !previous.content.some((p) => p.type === "tool-call")) {
        return `tool message ${i} does not follow an assistant message with tool calls`
      }
      continue
    }
    if (message.role !== "assistant") continue
    const calls = message.content.flatMap((p) => (p.type === "tool-call" ? [p.id] : []))
    if (calls.length === 0) continue
    const next = messages[i + 1]
    if (next?.role !== "tool") return `the tool calls of message ${i} have no tool message after them`
    const answered = next.content.map((p) => p.id)
    if (answered.length !== calls.length || answered.some((id, k) => id !== calls[k])) {
      return `message ${i + 1} answers ${JSON.stringify(answered)}, not the calls ${JSON.stringify(calls)}`
    }
  }
  return undefined
}
