// A raw MCP server over HTTP with no SDK (node:http, JSON answers, one session): the cheapest HTTP
// peer, so a benchmark against it measures the client's own cost. Prints its URL, then serves.
import * as Http from "node:http"
import { callText, listPage } from "./tools.mjs"

const session = "bench-session"
const answer = (m) => {
  switch (m.method) {
    case "initialize":
      return {
        protocolVersion: m.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "raw-http-bench", version: "1.0.0" }
      }
    case "tools/list":
      return listPage(m.params?.cursor)
    case "tools/call":
      return { content: [{ type: "text", text: callText(m.params.name, m.params.arguments) }] }
    default:
      return {}
  }
}
const server = Http.createServer((req, res) => {
  if (req.method === "DELETE") return res.writeHead(200).end()
  if (req.method !== "POST") return res.writeHead(405).end()
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    const m = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    if (m.id === undefined) return res.writeHead(202, { "mcp-session-id": session }).end()
    const body = JSON.stringify({ jsonrpc: "2.0", id: m.id, result: answer(m) })
    res.writeHead(200, { "content-type": "application/json", "mcp-session-id": session }).end(body)
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => console.log(`http://127.0.0.1:${server.address().port}/mcp`))
