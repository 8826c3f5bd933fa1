/** The official SDK client (`@modelcontextprotocol/sdk`) over its stdio transport. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { type Driver, isHttp, report, runWorkload, serverCommand, startHttpServer } from "./workload.js"

const connect = async (): Promise<Driver> => {
  const kind = process.argv[2] ?? "raw"
  const http = isHttp(kind) ? await startHttpServer(kind) : undefined
  // The HTTP transport is loaded only for the HTTP runs (as the Skald harness loads its HTTP client).
  const transport = http !== undefined
    ? new (await import("@modelcontextprotocol/sdk/client/streamableHttp.js")).StreamableHTTPClientTransport(
      new URL(http.url)
    )
    : new StdioClientTransport({ ...serverCommand(kind), stderr: "inherit" })
  const client = new Client({ name: "sdk-bench", version: "1.0.0" })
  await client.connect(transport)
  return {
    call: async (name, args) => {
      const result = await client.callTool({ name, arguments: args })
      return (result.content as Array<{ text: string }>)[0]!.text
    },
    listAll: async () => {
      let count = 0
      let cursor: string | undefined
      do {
        const result = await client.listTools(cursor === undefined ? {} : { cursor })
        count += result.tools.length
        cursor = result.nextCursor
      } while (cursor !== undefined)
      return count
    },
    close: async () => {
      await client.close()
      http?.stop()
    }
  }
}

report(await runWorkload(connect))
