/**
 * The one log capture of the tests (the engine's here, the root's through test/support.ts): an
 * `McpLogSink` that keeps every line, in order.
 */
import * as McpLog from "@skald/mcp/McpLog"
import * as Effect from "effect/Effect"

/** A sink that keeps every line (`lines`, live), a way to provide it, and the texts of one tag. */
export const makeLogCapture = () => {
  const lines: Array<McpLog.McpLogLine> = []
  const sink: McpLog.Sink = {
    emit: (line) =>
      Effect.sync(() => {
        lines.push(line)
      })
  }
  return {
    lines,
    sink,
    provide: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.provideService(self, McpLog.McpLogSink, sink),
    withTag: (tag: McpLog.Tag) => lines.filter((l) => l.tag === tag).map((l) => l.text)
  }
}
