// The same tools as raw-server.mjs (tools.mjs), served by the official SDK's low-level Server (the SDK's
// McpServer does not paginate tools/list).
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { callText, listPage } from "./tools.mjs"

const server = new Server({ name: "sdk-bench", version: "1.0.0" }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, async (request) => listPage(request.params?.cursor))
server.setRequestHandler(CallToolRequestSchema, async (request) => ({
  content: [{ type: "text", text: callText(request.params.name, request.params.arguments) }]
}))
await server.connect(new StdioServerTransport())
