/**
 * What `skald call` shows on stderr while a task is polled: one live line on a terminal, a plain
 * line per change of status or message otherwise.
 *
 * @since 0.1.0
 */
import type { McpClient } from "@skald/mcp"
import * as Effect from "effect/Effect"

/** The line for one status report. */
export const line = (p: McpClient.TaskProgress): string =>
  `task ${p.taskId}: ${p.status}${p.statusMessage !== undefined ? ` — ${p.statusMessage}` : ""} ` +
  `(${(p.elapsedMillis / 1000).toFixed(1)} s)`

/** A progress display on a stream. */
export const make = (stream: NodeJS.WriteStream) => {
  const live = stream.isTTY === true
  let last = ""
  let shown = false
  return {
    report: (p: McpClient.TaskProgress) =>
      Effect.sync(() => {
        const text = line(p)
        if (live) {
          stream.write(`\r\x1b[K${text}`)
          shown = true
          return
        }
        const key = `${p.status}\u0000${p.statusMessage ?? ""}`
        if (key !== last) {
          last = key
          stream.write(`${text}\n`)
        }
      }),
    /** Ends the live line, if any. */
    done: Effect.sync(() => {
      if (live && shown) stream.write("\n")
    })
  }
}
