/**
 * Diagnostic lines of an MCP connection (stderr, `notifications/message`, lifecycle, client
 * warnings), delivered to an `McpLogSink` the embedding app may provide.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as LogLevel from "effect/LogLevel"

/** The MCP log levels (`notifications/message`). */
export const levels = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] as const
export type Level = (typeof levels)[number]

/** `stderr` for a raw child stderr line, `lifecycle` for start/stop, else an MCP level. */
export type Tag = "stderr" | "lifecycle" | Level

/** One diagnostic line of one server. Never carries tool arguments, results or secrets. */
export interface McpLogLine {
  readonly server: string
  readonly tag: Tag
  readonly text: string
}

/** Where log lines go. */
export interface Sink {
  readonly emit: (line: McpLogLine) => Effect.Effect<void>
}

const effectLevel = (tag: Tag): LogLevel.LogLevel => {
  switch (tag) {
    case "stderr":
    case "debug":
      return LogLevel.Debug
    case "lifecycle":
    case "info":
    case "notice":
      return LogLevel.Info
    case "warning":
      return LogLevel.Warning
    default:
      return LogLevel.Error
  }
}

/** The default sink: Effect's logger (stderr lines at Debug, so never on the console by default). */
export const loggerSink: Sink = {
  emit: (line) =>
    Effect.logWithLevel(effectLevel(line.tag), line.text).pipe(
      Effect.annotateLogs({ "mcp.server": line.server, "mcp.log": line.tag })
    )
}

/** The sink every transport and client of this fiber writes to; defaults to `loggerSink`. */
export class McpLogSink extends Context.Reference<McpLogSink>()("@skald/mcp/McpLogSink", {
  defaultValue: (): Sink => loggerSink
}) {}

/** Emits a line to the current sink. */
export const emit = (server: string, tag: Tag, text: string): Effect.Effect<void> =>
  Effect.flatMap(McpLogSink, (sink) => sink.emit({ server, tag, text }))

/** True when `u` is an MCP log level. */
export const isLevel = (u: unknown): u is Level =>
  typeof u === "string" && (levels as ReadonlyArray<string>).includes(u)
