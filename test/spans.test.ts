import { assert, describe, it } from "@effect/vitest"
import { McpClient, StdioTransport } from "@skald/mcp"
import { Effect, Layer, Tracer } from "effect"
import * as Path from "node:path"
import { fixture } from "./fixtures/fixtures.js"

const root = Path.resolve(import.meta.dirname, "..")
const Everything = McpClient.layer().pipe(
  Layer.provide(StdioTransport.layer({
    server: "everything",
    command: process.execPath,
    args: [Path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"]
  }))
)
const Trace = McpClient.layer().pipe(Layer.provide(StdioTransport.layer({ server: "trace", ...fixture("trace") })))

const MARKER = "marker-7f3a9c-do-not-trace"

/** A tracer that records every span it makes (Effect's own spans, which an installed tracer gets). */
const recordingTracer = Effect.map(Effect.tracer, (native) => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span: (...args) => {
      const span = native.span(...args)
      spans.push(span)
      return span
    },
    context: native.context
  })
  return { spans, tracer }
})

const attrs = (span: Tracer.Span) => Object.fromEntries(span.attributes)

describe("spans", () => {
  it.live("initialize, tools/list and tools/call: named and attributed per the MCP conventions, never arguments or results", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recordingTracer
      yield* Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const { result } = yield* client.callTool("echo", { message: MARKER })
        assert.strictEqual(result._tag === "Text" && result.text, `Echo: ${MARKER}`)
      }).pipe(Effect.provide(Everything), Effect.withTracer(tracer))

      const byName = (name: string) => {
        const found = spans.find((s) => s.name === name)
        assert.isDefined(found, `${name} among ${spans.map((s) => s.name).join(", ")}`)
        return found!
      }
      assert.deepInclude(attrs(byName("initialize")), {
        "skald.mcp.server": "everything",
        "mcp.method.name": "initialize"
      })
      assert.deepInclude(attrs(byName("tools/list")), {
        "skald.mcp.server": "everything",
        "mcp.method.name": "tools/list"
      })
      const call = byName("tools/call echo")
      assert.strictEqual(call.kind, "client")
      assert.deepInclude(attrs(call), {
        "skald.mcp.server": "everything",
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool"
      })
      assert.match(String(attrs(call)["jsonrpc.request.id"]), /^\d+$/)
      for (const span of spans) {
        for (const [key, value] of span.attributes) {
          assert.notInclude(JSON.stringify(value) ?? "", MARKER, `span ${span.name} attribute ${key}`)
        }
      }
    }))

  it.live("over stdio the request carries its span's context in params._meta.traceparent; none without a tracer", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recordingTracer
      const seen = (client: McpClient.Service) =>
        Effect.map(
          client.callTool("trace_context", {}),
          ({ result }) => JSON.parse(result._tag === "Text" ? result.text : "{}") as { meta: string | null }
        )
      const traced = yield* Effect.flatMap(McpClient.McpClient, seen).pipe(
        Effect.withSpan("turn"),
        Effect.provide(Trace),
        Effect.withTracer(tracer)
      )
      const call = spans.find((s) => s.name === "tools/call trace_context")!
      assert.strictEqual(traced.meta, `00-${call.traceId}-${call.spanId}-01`)
      const turn = spans.find((s) => s.name === "turn")!
      assert.strictEqual(call.parent._tag === "Some" && call.parent.value.spanId, turn.spanId)
      const untraced = yield* Effect.flatMap(McpClient.McpClient, seen).pipe(Effect.provide(Trace))
      assert.strictEqual(untraced.meta, null)
    }))

  it.live("a failed request's span has error.type: the JSON-RPC code, or tool_error for an isError result", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recordingTracer
      const Echo = McpClient.layer().pipe(Layer.provide(StdioTransport.layer({ server: "echo", ...fixture("echo") })))
      yield* Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        yield* client.callTool("fail", {})
        yield* Effect.flip(client.request("no/such/method", {}))
      }).pipe(Effect.provide(Echo), Effect.withTracer(tracer))
      assert.strictEqual(attrs(spans.find((s) => s.name === "tools/call fail")!)["error.type"], "tool_error")
      assert.deepInclude(attrs(spans.find((s) => s.name === "no/such/method")!), {
        "error.type": "-32601",
        "rpc.response.status_code": "-32601"
      })
    }))
})
