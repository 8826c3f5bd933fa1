/**
 * What a tool call shows on stderr while it runs: the server's `notifications/progress` reports
 * and, for a task, each status it is polled to. One live line on a terminal (redrawn in place;
 * with `NO_COLOR` set, without ANSI escapes), a plain line per change otherwise. `skald call` and
 * `skald mcp call` both use it through `showing`.
 *
 * @since 0.1.0
 */
import type { McpClient } from "@skald/mcp"
import * as Effect from "effect/Effect"

const seconds = (millis: number) => `${(millis / 1000).toFixed(1)} s`

/** The line for one task status report. */
export const taskLine = (p: McpClient.TaskProgress): string =>
  `task ${p.taskId}: ${p.status}${p.statusMessage !== undefined ? ` — ${p.statusMessage}` : ""} ` +
  `(${seconds(p.elapsedMillis)})`

/** The line for one progress report: `progress 2/5 (40%) — step 2 (1.2 s)`. */
export const progressLine = (p: McpClient.Progress): string => {
  const amount = p.total === undefined ? `${p.progress}` : `${p.progress}/${p.total}`
  const share = p.total !== undefined && p.total > 0 ? ` (${Math.floor((p.progress / p.total) * 100)}%)` : ""
  const message = p.message !== undefined && p.message.length > 0 ? ` — ${p.message}` : ""
  return `progress ${amount}${share}${message} (${seconds(p.elapsedMillis)})`
}

/** Where the lines go: a stream and whether it is a terminal. */
export interface Out {
  readonly isTTY?: boolean | undefined
  readonly write: (text: string) => unknown
}

/** The per-call options that feed a display. */
export interface Reporting {
  readonly onTaskStatus: (p: McpClient.TaskProgress) => Effect.Effect<void>
  readonly onProgress: (p: McpClient.Progress) => Effect.Effect<void>
}

/** A progress display on a stream. */
export interface Display extends Reporting {
  /** Ends the live line, if any. */
  readonly done: Effect.Effect<void>
}

/** True when `NO_COLOR` asks for no escapes (set and not empty: no-color.org). */
const noColor = (env: NodeJS.ProcessEnv): boolean => env.NO_COLOR !== undefined && env.NO_COLOR !== ""

export const make = (out: Out, env: NodeJS.ProcessEnv = process.env): Display => {
  const live = out.isTTY === true
  const ansi = live && !noColor(env)
  let lastKey = ""
  let shownLength = 0
  let shown = false
  const show = (text: string, key: string) =>
    Effect.sync(() => {
      if (live) {
        if (ansi) out.write(`\r\x1b[K${text}`)
        else out.write(`\r${text}${" ".repeat(Math.max(0, shownLength - text.length))}`)
        shownLength = text.length
        shown = true
        return
      }
      // Plain lines: one per change (a repeated report adds nothing).
      if (key !== lastKey) {
        lastKey = key
        out.write(`${text}\n`)
      }
    })
  return {
    onTaskStatus: (p) => show(taskLine(p), `task\u0000${p.status}\u0000${p.statusMessage ?? ""}`),
    onProgress: (p) => show(progressLine(p), `progress\u0000${p.progress}\u0000${p.total}\u0000${p.message ?? ""}`),
    done: Effect.sync(() => {
      if (shown) out.write("\n")
      shown = false
    })
  }
}

/**
 * Runs a call with a display on `out`: `use` gets the options that feed it (spread them into the
 * call's `RequestOptions`); the live line is ended when the call ends, before anything is printed.
 */
export const showing = <A, E, R>(
  out: Out,
  use: (reporting: Reporting) => Effect.Effect<A, E, R>,
  env: NodeJS.ProcessEnv = process.env
): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const display = make(out, env)
    return use({ onTaskStatus: display.onTaskStatus, onProgress: display.onProgress }).pipe(
      Effect.ensuring(display.done)
    )
  })
