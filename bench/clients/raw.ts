/**
 * A raw JSON-lines MCP client with no SDK: the physical limit. Batches the writes of one
 * event-loop turn, frames stdout by hand, keeps a Map of pending resolvers.
 */
import * as ChildProcess from "node:child_process"
import * as Http from "node:http"
import { type Driver, isHttp, report, runWorkload, serverCommand, startHttpServer } from "./workload.js"

/** Follows tools/list's cursor to the end; the number of tools. */
const countTools = async (request: (method: string, params: unknown) => Promise<any>) => {
  let count = 0
  let cursor: string | undefined
  do {
    const result = await request("tools/list", cursor === undefined ? {} : { cursor })
    count += result.tools.length
    cursor = result.nextCursor
  } while (cursor !== undefined)
  return count
}

/** A raw HTTP client: node:http with a keep-alive agent, JSON bodies, the session header. */
const connectHttp = async (): Promise<Driver> => {
  const server = await startHttpServer(process.argv[2]!)
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 256 })
  const url = new URL(server.url)
  let session: string | undefined
  let protocolVersion: string | undefined
  let nextId = 0
  const post = (message: Record<string, unknown>) =>
    new Promise<any>((resolve, reject) => {
      const body = JSON.stringify(message)
      const req = Http.request({
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "content-length": Buffer.byteLength(body),
          ...(session !== undefined ? { "mcp-session-id": session } : {}),
          ...(protocolVersion !== undefined ? { "mcp-protocol-version": protocolVersion } : {})
        }
      }, (res) => {
        const sid = res.headers["mcp-session-id"]
        if (typeof sid === "string") session = sid
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on(
          "end",
          () => resolve(chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString("utf8")))
        )
      })
      req.on("error", reject)
      req.end(body)
    })
  const request = async (method: string, params: unknown) => {
    const answer = await post({ jsonrpc: "2.0", id: nextId++, method, params })
    if (answer.error) throw new Error(answer.error.message)
    return answer.result
  }
  const init = await request("initialize", {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "raw-bench", version: "1.0.0" }
  })
  protocolVersion = init.protocolVersion
  await post({ jsonrpc: "2.0", method: "notifications/initialized" })
  return {
    call: async (name, args) => (await request("tools/call", { name, arguments: args })).content[0].text as string,
    listAll: () => countTools(request),
    close: async () => {
      agent.destroy()
      server.stop()
    }
  }
}

const connect = async (): Promise<Driver> => {
  if (isHttp(process.argv[2] ?? "")) return connectHttp()
  const { args, command } = serverCommand(process.argv[2] ?? "raw")
  const child = ChildProcess.spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] })
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: unknown) => void }>()
  let nextId = 0
  let buffered = ""
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (chunk: string) => {
    buffered += chunk
    let nl = buffered.indexOf("\n")
    while (nl !== -1) {
      const line = buffered.slice(0, nl)
      buffered = buffered.slice(nl + 1)
      if (line.length > 0) {
        const m = JSON.parse(line)
        const entry = pending.get(m.id)
        if (entry !== undefined) {
          pending.delete(m.id)
          if (m.error) entry.reject(new Error(m.error.message))
          else entry.resolve(m.result)
        }
      }
      nl = buffered.indexOf("\n")
    }
  })
  let out: Array<string> = []
  let scheduled = false
  const write = (message: unknown) => {
    out.push(JSON.stringify(message) + "\n")
    if (!scheduled) {
      scheduled = true
      setImmediate(() => {
        scheduled = false
        child.stdin.write(out.join(""))
        out = []
      })
    }
  }
  const request = (method: string, params: unknown) =>
    new Promise<any>((resolve, reject) => {
      const id = nextId++
      pending.set(id, { resolve, reject })
      write({ jsonrpc: "2.0", id, method, params })
    })
  await request("initialize", {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "raw-bench", version: "1.0.0" }
  })
  write({ jsonrpc: "2.0", method: "notifications/initialized" })
  return {
    call: async (name, args) => {
      const result = await request("tools/call", { name, arguments: args })
      return result.content[0].text as string
    },
    listAll: () => countTools(request),
    close: async () => {
      child.stdin.end()
      await new Promise((resolve) => child.once("exit", resolve))
    }
  }
}

report(await runWorkload(connect))
