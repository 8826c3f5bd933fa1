// The same tools as raw-server.mjs, served by the official SDK's low-level Server (the SDK's
// McpServer does not paginate tools/list).
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"

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

const server = new Server({ name: "sdk-bench", version: "1.0.0" }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, async (request) => {
  const start = request.params?.cursor ? Number(request.params.cursor) : 0
  const page = tools.slice(start, start + PAGE)
  const next = start + PAGE < tools.length ? String(start + PAGE) : undefined
  return next ? { tools: page, nextCursor: next } : { tools: page }
})
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const text = request.params.name === "big" ? big : String(request.params.arguments?.message ?? "")
  return { content: [{ type: "text", text }] }
})
await server.connect(new StdioServerTransport())
