import { McpClient, McpLog, StdioTransport } from "@skald/mcp"
import { Effect, Layer, Stream } from "effect"

// A connection is a scoped layer: the process lives exactly as long as the layer.
const Everything = McpClient.layer({ callTimeout: "30 seconds" }).pipe(
  Layer.provide(
    StdioTransport.layer({
      server: "everything",
      command: "node",
      args: ["node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]
    })
  )
)

// Diagnostics (stderr lines, server log messages, warnings) go to a sink of your choosing.
const collected: Array<McpLog.McpLogLine> = []
const CollectLogs = Layer.succeed(McpLog.McpLogSink, {
  emit: (line) => Effect.sync(() => void collected.push(line))
})

export const program = Effect.gen(function*() {
  const client = yield* McpClient.McpClient
  const tools = yield* client.tools
  const echo = yield* client.callTool("echo", { message: "hello" })
  const weather = yield* client.callTool("get-structured-content", { location: "New York" })
  // A call cut short — by interruption, a closing scope or its timeout — is cancelled on the server.
  const slow = yield* client.callTool("trigger-long-running-operation", { duration: 30, steps: 3 }, {
    timeout: "200 millis"
  }).pipe(Effect.either)
  // Push events (non-protocol notifications) arrive on a stream.
  const events = yield* client.events.pipe(Stream.take(0), Stream.runCollect)
  return { tools: tools.map((t) => t.name), echo: echo.result, weather: weather.result, slow, events, collected }
}).pipe(Effect.provide(Everything), Effect.provide(CollectLogs))

// In an app: Effect.runPromise(program) or NodeRuntime.runMain(program).
