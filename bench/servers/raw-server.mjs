// A raw JSON-lines MCP server with no SDK: the cheapest possible peer, so a benchmark against it
// measures the client's own cost. Tools: echo, big (a ~100 KB text result), and 5,000 more
// served 100 per page by tools/list.
import * as readline from "node:readline"

const TOOL_COUNT = 5000
const PAGE = 100
const big = "x".repeat(100 * 1024)
const schema = { type: "object", properties: { message: { type: "string" } } }
const tools = [
  { name: "echo", description: "Echoes its message", inputSchema: schema },
  { name: "big", description: "Returns ~100 KB of text", inputSchema: { type: "object" } }
]
for (let i = 0; i < TOOL_COUNT - 2; i++) {
  tools.push({ name: `tool_${i}`, description: `Filler tool number ${i}`, inputSchema: schema })
}

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
    case "tools/list": {
      const start = m.params?.cursor ? Number(m.params.cursor) : 0
      const page = tools.slice(start, start + PAGE)
      const next = start + PAGE < tools.length ? String(start + PAGE) : undefined
      return send({ jsonrpc: "2.0", id: m.id, result: next ? { tools: page, nextCursor: next } : { tools: page } })
    }
    case "tools/call": {
      const text = m.params.name === "big" ? big : String(m.params.arguments?.message ?? "")
      return send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text }] } })
    }
    case "ping":
      return send({ jsonrpc: "2.0", id: m.id, result: {} })
    default:
      return send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "method not found" } })
  }
})
rl.on("close", () => process.exit(0))
