/**
 * The spans of an agent turn as the loop makes them today (docs/telemetry.md): one trace from the
 * turn down to the MCP request of each tool call, whose context reaches the server.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Tracer } from "effect"
import { fixtureEntry } from "./host-support.js"
import { events, startAgent } from "./support/agent.js"
import * as Scripted from "./support/scripted-model.js"

describe("agent spans", () => {
  it.scopedLive("a turn is one trace: invoke_agent is an ancestor of the tool call's tools/call span", () =>
    Effect.gen(function*() {
      const native = yield* Effect.tracer
      const spans: Array<Tracer.Span> = []
      const tracer = Tracer.make({
        span: (...args) => {
          const span = native.span(...args)
          spans.push(span)
          return span
        },
        context: native.context
      })
      const { agent } = yield* startAgent([fixtureEntry("trace", "trace")], [
        Scripted.calls([{ id: "c1", name: "mcp__trace__trace_context", params: {} }]),
        Scripted.answer("done")
      ])
      const all = yield* events(agent.run({ message: "what context?" })).pipe(Effect.withTracer(tracer))
      const done = all.find((e) => e._tag === "ToolDone")
      assert.isDefined(done)
      const turn = spans.find((s) => s.name === "invoke_agent main")!
      const call = spans.find((s) => s.name === "tools/call trace_context")
      assert.isDefined(call, spans.map((s) => s.name).join(", "))
      assert.strictEqual(call!.traceId, turn.traceId)
      const ancestors: Array<string> = []
      let at: Tracer.AnySpan | undefined = call
      while (at !== undefined && at._tag === "Span") {
        ancestors.push(at.name)
        at = at.parent._tag === "Some" ? at.parent.value : undefined
      }
      assert.include(ancestors, "invoke_agent main")
      // The server got the call span's context.
      const seen = JSON.parse((done as { result: string }).result) as { meta: string }
      assert.strictEqual(seen.meta, `00-${call!.traceId}-${call!.spanId}-01`)
    }))
})
