/**
 * `skald tools -- CMD` done with the official SDK client, as a user would write it: connect over
 * stdio, list the tools (following `nextCursor`), print one line per tool, close. The yardstick of
 * the command-line section of the bench (bench/cli.ts).
 *
 *     node build/root/bench/clients/sdk-tools.js CMD [ARGS…]
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"

const [command, ...args] = process.argv.slice(2)
if (command === undefined) throw new Error("usage: sdk-tools CMD [ARGS…]")
const client = new Client({ name: "sdk-tools", version: "1.0.0" })
await client.connect(new StdioClientTransport({ command, args }))
let cursor: string | undefined
do {
  const page = await client.listTools(cursor === undefined ? {} : { cursor })
  for (const tool of page.tools) {
    const summary = tool.description?.split("\n").find((l) => l.trim().length > 0)?.trim()
    console.log([tool.name, tool.title, summary].filter((s) => s !== undefined && s.length > 0).join("  "))
  }
  cursor = page.nextCursor
} while (cursor !== undefined)
await client.close()
