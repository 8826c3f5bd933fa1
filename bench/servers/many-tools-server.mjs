/**
 * An SDK stdio server for the agent-tokens bench: BENCH_TOOLS tools (default 30), each with a
 * realistic definition (a sentence of description, three described parameters, one required).
 * BENCH_SERVER_NAME names its tools (`<name>_action_<i>`).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { z } from "zod"

const name = process.env.BENCH_SERVER_NAME ?? "bench"
const count = Number(process.env.BENCH_TOOLS ?? 30)
const server = new McpServer({ name, version: "1.0.0" }, { instructions: `Tools of the ${name} service.` })
for (let i = 0; i < count; i++) {
  server.registerTool(`${name}_action_${i}`, {
    description: `Performs action ${i} of the ${name} service on the given item and returns the updated item as JSON.`,
    inputSchema: {
      id: z.string().describe("The identifier of the item to act on"),
      limit: z.number().int().optional().describe("The maximum number of results to return"),
      query: z.string().optional().describe("A free-text filter applied before the action")
    }
  }, async ({ id }) => ({ content: [{ type: "text", text: `${name} ${i} ${id}` }] }))
}
await server.connect(new StdioServerTransport())
