/**
 * The Chat page's model: a session's transcript as turns (the user's message, then the
 * assistant's text and tool calls in order, then how it ended), built the same way from a turn's
 * live events (`Agent.Send`/`Attach`) and from the stored `History`, so a replay renders as the
 * live turn did. Pure functions; the page holds the state.
 */
import type { AgentRpcs, TurnEvent } from "@skald/domain"

/** A tool call as the page shows it. */
export interface Call {
  readonly _tag: "Call"
  readonly callId: string
  readonly name: string
  readonly arguments: unknown
  readonly status: "running" | "done" | "error" | "cancelled" | "denied"
  readonly result?: string
  readonly resultType?: "string" | "json"
  readonly mediaUrls: ReadonlyArray<string>
  readonly truncated?: boolean
  /** Epoch ms it started / ended (live only: the history keeps no times of calls). */
  readonly startedAt?: number
  readonly endedAt?: number
}

/** A run of the assistant's text. */
export interface Text {
  readonly _tag: "Text"
  readonly text: string
}

/** How a turn ended. */
export type End =
  | {
    readonly _tag: "Done"
    readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
    readonly rounds?: number
    readonly note?: string
  }
  | { readonly _tag: "Failed"; readonly message: string }
  | { readonly _tag: "Stopped" }

export interface Turn {
  readonly message: string
  readonly parts: ReadonlyArray<Text | Call>
  readonly end?: End
}

/** Appends text to the last part when it is text, else as a new part. */
const appendText = (parts: ReadonlyArray<Text | Call>, text: string): ReadonlyArray<Text | Call> => {
  if (text === "") return parts
  const last = parts[parts.length - 1]
  return last?._tag === "Text"
    ? [...parts.slice(0, -1), { _tag: "Text", text: last.text + text }]
    : [...parts, { _tag: "Text", text }]
}

/** One live event folded into the turn it belongs to; `now` is the page's clock (for durations). */
export const step = (turn: Turn, event: TurnEvent.TurnEvent, now: number): Turn => {
  switch (event._tag) {
    case "TurnStarted":
      return { message: event.message, parts: [] }
    case "TextDelta":
      return { ...turn, parts: appendText(turn.parts, event.text) }
    case "ToolStarted":
      return {
        ...turn,
        parts: [...turn.parts, {
          _tag: "Call",
          callId: event.callId,
          name: event.name,
          arguments: event.arguments,
          status: "running",
          mediaUrls: [],
          startedAt: now
        }]
      }
    case "ToolDone":
      return {
        ...turn,
        parts: turn.parts.map((p) =>
          p._tag === "Call" && p.callId === event.callId
            ? {
              ...p,
              status: event.status,
              result: event.result,
              resultType: event.resultType,
              mediaUrls: event.mediaUrls,
              truncated: event.truncated,
              endedAt: now
            }
            : p
        )
      }
    case "TurnDone":
      return {
        ...turn,
        end: {
          _tag: "Done",
          usage: { inputTokens: event.usage.inputTokens, outputTokens: event.usage.outputTokens },
          rounds: event.rounds,
          ...(event.note === undefined ? {} : { note: event.note })
        }
      }
    case "TurnFailed":
      return { ...turn, end: { _tag: "Failed", message: event.message } }
    case "TurnStopped":
      return { ...turn, end: { _tag: "Stopped" } }
  }
}

/** An empty turn (before its `TurnStarted`), showing the message being sent. */
export const pending = (message: string): Turn => ({ message, parts: [] })

/**
 * The stored messages as turns: each user message starts one; the assistant's messages add their
 * text and their calls (in order). The last turn has no end when `running` (it is attached live).
 */
export const fromHistory = (
  messages: ReadonlyArray<AgentRpcs.StoredMessage>,
  running: boolean
): Array<Turn> => {
  const turns: Array<{ message: string; parts: ReadonlyArray<Text | Call>; end?: End }> = []
  for (const m of messages) {
    if (m.role === "user") {
      turns.push({ message: m.text, parts: [] })
      continue
    }
    const turn = turns[turns.length - 1]
    if (turn === undefined || m.role === "system") continue
    turn.parts = appendText(turn.parts, m.text)
    for (const c of m.calls) {
      turn.parts = [...turn.parts, {
        _tag: "Call",
        callId: c.callId,
        name: c.name,
        arguments: c.arguments,
        status: c.status,
        ...(c.result === undefined ? {} : { result: c.result }),
        resultType: c.resultType,
        mediaUrls: c.mediaUrls
      }]
    }
  }
  turns.forEach((t, i) => {
    if (!running || i < turns.length - 1) t.end = { _tag: "Done" }
  })
  return turns
}

/** A result as shown: JSON pretty-printed when it is JSON (and parses), else the text. */
export const prettyResult = (result: string, resultType: "string" | "json" | undefined): string => {
  if (resultType !== "json") return result
  try {
    return JSON.stringify(JSON.parse(result), null, 2)
  } catch {
    return result
  }
}

/** What a media link is, by its file's extension (the media store names files by type). */
export const mediaKind = (url: string): "image" | "audio" | "video" | "file" => {
  const ext = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(url)?.[1]?.toLowerCase() ?? ""
  if (["png", "jpg", "jpeg", "gif", "webp", "svg", "avif", "bmp"].includes(ext)) return "image"
  if (["wav", "mp3", "ogg", "oga", "flac", "m4a", "aac", "opus", "weba"].includes(ext)) return "audio"
  if (["mp4", "webm", "ogv", "mov"].includes(ext)) return "video"
  return "file"
}
