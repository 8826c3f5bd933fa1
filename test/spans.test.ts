import { assert, describe, it } from "@effect/vitest"
import { McpClient, StdioTransport } from "@skald/mcp"
import { Effect, Layer, Tracer } from "effect"
import * as Path from "node:path"

const root = Path.resolve(import.meta.dirname, "..")
const Everything = McpClient.layer().pipe(
  Layer.provide(StdioTransport.layer({
    server: "everything",
    command: process.execPath,
    args: [Path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"]
  }))
)

const MARKER = "marker-7f3a9c-do-not-trace"

describe("spans", () => {
  it.live("initialize, tools/list and tools/call carry server and method, never arguments or results", () =>
    Effect.gen(function*() {
      const native = yield* Effect.tracer
      const spans: Array<Tracer.Span> = []
      const recording = Tracer.make({
        span: (...args) => {
          const span = native.span(...args)
          spans.push(span)
          return span
        },
        context: native.context
      })
      yield* Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const { result } = yield* client.callTool("echo", { message: MARKER })
        assert.strictEqual(result._tag === "Text" && result.text, `Echo: ${MARKER}`)
      }).pipe(Effect.provide(Everything), Effect.withTracer(recording))

      const byName = (name: string) => spans.filter((s) => s.name === name)
      const attrs = (span: Tracer.Span) => Object.fromEntries(span.attributes)
      assert.deepInclude(attrs(byName("McpClient.initialize")[0]!), {
        "mcp.server": "everything",
        "mcp.method": "initialize"
      })
      assert.deepInclude(attrs(byName("McpClient.listTools")[0]!), {
        "mcp.server": "everything",
        "mcp.method": "tools/list"
      })
      assert.deepInclude(attrs(byName("McpClient.callTool")[0]!), {
        "mcp.server": "everything",
        "mcp.method": "tools/call",
        "mcp.tool": "echo"
      })
      for (const span of spans) {
        for (const [key, value] of span.attributes) {
          assert.notInclude(JSON.stringify(value) ?? "", MARKER, `span ${span.name} attribute ${key}`)
        }
      }
    }))
})
