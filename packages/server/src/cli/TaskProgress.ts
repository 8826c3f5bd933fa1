/**
 * The task status display, now part of the call progress display (Progress.ts): kept for
 * importers of the old module.
 *
 * @since 0.1.0
 */
import * as Progress from "./Progress.js"

/** The line for one status report. */
export const line = Progress.taskLine

/** A progress display on a stream (`report` for task statuses). */
export const make = (stream: Progress.Out) => {
  const display = Progress.make(stream)
  return { report: display.onTaskStatus, progress: display.onProgress, done: display.done }
}
