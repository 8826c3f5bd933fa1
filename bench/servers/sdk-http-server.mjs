// The same tools over the official SDK's StreamableHTTPServerTransport (stateful, JSON answers).
// Prints its URL, then serves.
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { randomUUID } from "node:crypto"
import * as Http from "node:http"
import { callText, listPage } from "./tools.mjs"

const transports = new Map()
const newServer = () => {
  const server = new Server({ name: "sdk-http-bench", version: "1.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async (request) => listPage(request.params?.cursor))
  server.setRequestHandler(CallToolRequestSchema, async (request) => ({
    content: [{ type: "text", text: callText(request.params.name, request.params.arguments) }]
  }))
  return server
}
const http = Http.createServer(async (req, res) => {
  const chunks = []
  for await (const c of req) chunks.push(c)
  const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined
  const id = req.headers["mcp-session-id"]
  let transport = typeof id === "string" ? transports.get(id) : undefined
  if (transport === undefined) {
    if (req.method !== "POST" || body?.method !== "initialize") return res.writeHead(404).end()
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (sid) => transports.set(sid, transport)
    })
    await newServer().connect(transport)
  }
  await transport.handleRequest(req, res, body)
})
http.keepAliveTimeout = 60_000
http.listen(0, "127.0.0.1", () => console.log(`http://127.0.0.1:${http.address().port}/mcp`))
