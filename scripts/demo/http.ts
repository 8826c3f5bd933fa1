/**
 * Streamable HTTP for the demo server: node:http on 127.0.0.1, endpoint `/mcp`, one session (and
 * one fresh `McpServer`) per `initialize`, on the SDK's `StreamableHTTPServerTransport`.
 * Requests whose Host header is not our own loopback address are refused (DNS rebinding).
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { randomUUID } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface HttpOptions {
  /** 0: an ephemeral port. */
  readonly port: number
  readonly makeServer: () => McpServer
  /** A line for stderr. */
  readonly say: (line: string) => void
}

export interface RunningHttp {
  readonly url: string
  readonly close: () => Promise<void>
}

const jsonError = (res: http.ServerResponse, status: number, code: number, message: string) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }))
}

const readBody = (req: http.IncomingMessage, limit: number): Promise<string | undefined> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size <= limit) chunks.push(chunk)
    })
    req.on("end", () => resolve(size > limit ? undefined : Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const header = (req: http.IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name]
  return Array.isArray(value) ? value[0] : value
}

export const serveHttp = async (options: HttpOptions): Promise<RunningHttp> => {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServer }>()
  let port = options.port

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const host = header(req, "host") ?? ""
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) {
      return jsonError(res, 403, -32000, "Forbidden: unexpected Host header")
    }
    const url = new URL(req.url ?? "/", `http://127.0.0.1:${port}`)
    if (url.pathname !== "/mcp") return jsonError(res, 404, -32000, `Not found: ${url.pathname} (the endpoint is /mcp)`)
    const sessionId = header(req, "mcp-session-id")

    let body: unknown
    let isInitialize = false
    if (req.method === "POST") {
      const raw = await readBody(req, 16 * 1024 * 1024)
      if (raw === undefined) return jsonError(res, 413, -32600, "Request body too large")
      try {
        body = JSON.parse(raw)
      } catch {
        return jsonError(res, 400, -32700, "Parse error")
      }
      const messages = (Array.isArray(body) ? body : [body]) as Array<{ method?: unknown }>
      isInitialize = messages.some((m) => typeof m === "object" && m !== null && m.method === "initialize")
    }

    if (sessionId === undefined) {
      if (req.method !== "POST" || !isInitialize) {
        return jsonError(res, 400, -32000, "Bad Request: Mcp-Session-Id header is required")
      }
      const server = options.makeServer()
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, { transport, server })
        }
      })
      transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
      }
      await server.connect(transport)
      return transport.handleRequest(req, res, body)
    }
    const session = sessions.get(sessionId)
    if (session === undefined) return jsonError(res, 404, -32001, "Session not found")
    return session.transport.handleRequest(req, res, body)
  }

  const httpServer = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      options.say(`http: ${error instanceof Error ? error.message : String(error)}`)
      if (!res.headersSent) jsonError(res, 500, -32603, "Internal server error")
      else res.destroy()
    })
  })
  await new Promise<void>((resolve, reject) => {
    httpServer.once("error", reject)
    httpServer.listen(options.port, "127.0.0.1", () => {
      httpServer.off("error", reject)
      resolve()
    })
  })
  port = (httpServer.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      for (const { server } of [...sessions.values()]) await server.close().catch(() => {})
      sessions.clear()
      httpServer.closeAllConnections()
      await new Promise<void>((resolve) => httpServer.close(() => resolve()))
    }
  }
}
