// A raw JSON-lines MCP server with no SDK: the cheapest possible peer, so a benchmark against it
// measures the client's own cost. Tools: see tools.mjs.
import * as readline from "node:readline"
import { callText, listPage } from "./tools.mjs"

let out = []
let scheduled = false
const flush = () => {
  scheduled = false
  process.stdout.write(out.join(""))
  out = []
}
const send = (message) => {
  out.push(JSON.stringify(message) + "\n")
  if (!scheduled) {
    scheduled = true
    setImmediate(flush)
  }
}

const rl = readline.createInterface({ input: process.stdin })
rl.on("line", (line) => {
  if (line.length === 0) return
  const m = JSON.parse(line)
  if (m.id === undefined) return
  switch (m.method) {
    case "initialize":
      return send({
        jsonrpc: "2.0",
        id: m.id,
        result: {
          protocolVersion: m.params.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: "raw-bench", version: "1.0.0" }
        }
      })
    case "tools/list":
      return send({ jsonrpc: "2.0", id: m.id, result: listPage(m.params?.cursor) })
    case "tools/call":
      return send({
        jsonrpc: "2.0",
        id: m.id,
        result: { content: [{ type: "text", text: callText(m.params.name, m.params.arguments) }] }
      })
    case "ping":
      return send({ jsonrpc: "2.0", id: m.id, result: {} })
    default:
      return send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "method not found" } })
  }
})
rl.on("close", () => process.exit(0))
