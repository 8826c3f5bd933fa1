/**
 * Skald's Promise face (`@skald/mcp/promise`), run by the same Promise harness as the SDK and raw
 * clients: the engine as a plain TypeScript app meets it.
 */
import { connect as connectSkald } from "@skald/mcp/promise"
import { config, type Driver, isHttp, report, runWorkload, serverCommand, startHttpServer } from "./workload.js"

const connect = async (): Promise<Driver> => {
  const kind = process.argv[2] ?? "raw"
  const http = isHttp(kind) ? await startHttpServer(kind) : undefined
  const client = await connectSkald(
    http !== undefined ? { url: http.url } : { ...serverCommand(kind, true), writeBatch: config.writeBatch }
  )
  return {
    call: async (name, args) => {
      const { result } = await client.callTool(name, args)
      return result._tag === "Text" ? result.text : ""
    },
    listAll: async () => (await client.listTools()).length,
    close: async () => {
      await client.close()
      http?.stop()
    }
  }
}

report(await runWorkload(connect))
