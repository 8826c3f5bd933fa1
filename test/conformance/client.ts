/**
 * The conformance client: what the official MCP conformance suite runs for each client scenario,
 * as `node build/root/test/conformance/client.js <server-url>` with MCP_CONFORMANCE_SCENARIO set.
 * It is Skald's HTTP client doing what each scenario asks; it exits non-zero on any failure.
 */
import { Elicitation, HttpTransport, McpClient } from "@skald/mcp"
import { Effect, Logger, LogLevel } from "effect"

const url = process.argv.at(-1) ?? ""
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ""

// Accept every elicitation with no content: the client fills in the form's defaults (SEP-1034).
const acceptWithDefaults: Elicitation.Handler = { url: true, elicit: () => Effect.succeed({ action: "accept" }) }

const program = Effect.gen(function*() {
  const client = yield* HttpTransport.client({ server: "conformance", url }, { callTimeout: "20 seconds" })
  const tools = yield* client.tools
  const call = (name: string, args: McpClient.JsonObject = {}) =>
    client.callTool(name, args).pipe(Effect.tap((o) => Effect.logInfo(`${name}: ${o.result._tag}`)))
  switch (scenario) {
    case "initialize":
      return
    case "tools_call":
      return yield* call("add_numbers", { a: 2, b: 3 })
    case "elicitation-sep1034-client-defaults":
      return yield* call("test_client_elicitation_defaults")
    default:
      // sse-retry and anything new: call every tool with no arguments.
      for (const tool of tools) yield* call(tool.name)
  }
})

program.pipe(
  Effect.scoped,
  Effect.provideService(Elicitation.ElicitationHandler, acceptWithDefaults),
  Logger.withMinimumLogLevel(LogLevel.Info),
  Effect.runPromise
).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`conformance client (${scenario}): ${error}\n`)
    process.exit(1)
  }
)
