/**
 * The Skald demo MCP server: an offline tour of every feature the host supports — text,
 * structured and media results, progress, tasks and cancellation, form / confirmation / URL
 * elicitation, `event/*` push events and logging. Built on the official SDK's server API.
 *
 *   node --import tsx scripts/demo-server.ts [--tick-seconds N]                 (stdio)
 *   node --import tsx scripts/demo-server.ts --http [--port N] [--tick-seconds N]
 *
 * See `--help` and docs/servers.md.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import * as fs from "node:fs"
import { parseArgs } from "node:util"
import { serveHttp } from "./demo/http.js"
import { type DemoOptions, makeDemoServer, type Recorder, SERVER_NAME, SERVER_VERSION, TOOLS } from "./demo/server.js"

const DEFAULT_PORT = 8788

const usage = () =>
  `Usage: node --import tsx scripts/demo-server.ts [options]

The Skald demo MCP server: every MCP feature Skald supports, offline (no network, no files).
Speaks MCP over stdio by default; with --http over Streamable HTTP on 127.0.0.1.

Options:
  --http                 serve Streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio
                         (the URL is printed on stderr once listening)
  --port N               the HTTP port with --http (default ${DEFAULT_PORT}; 0 picks a free one)
  --tick-seconds N       send an event/demo_tick notification every N seconds (fractions from
                         0.05 allowed; default 0 = off)
  -h, --help             print this help and exit

Environment:
  DEMO_TICK_SECONDS      the same as --tick-seconds (the flag wins)
  DEMO_PORT              the same as --port (the flag wins)
  DEMO_RECORD_FILE       append one JSON line per notable event (tool calls, cancellations, the
                         shape of elicitation answers — never a typed value) to this file
  DEMO_EXPECTED_API_KEY  set_api_key records only whether the key it got equals this (for tests)
  MCP_ELICITATION_TIMEOUT  seconds set_api_key waits for the user (default 600)

Tools:
${TOOLS.map((t) => `  ${t.name.padEnd(16)} ${t.summary}`).join("\n")}

Resources: demo://notes/readme.md. Events: event/demo_tick {seq, at, uptimeSeconds}.
`

const say = (line: string) => process.stderr.write(`${SERVER_NAME}: ${line}\n`)

/** Exits 2 with a usage error. */
const usageError = (message: string): never => {
  process.stderr.write(`${SERVER_NAME}: ${message}\nRun with --help for usage.\n`)
  process.exit(2)
}

const parsed = (() => {
  try {
    return parseArgs({
      args: process.argv.slice(2),
      options: {
        help: { type: "boolean", short: "h" },
        http: { type: "boolean" },
        port: { type: "string" },
        "tick-seconds": { type: "string" }
      },
      strict: true,
      allowPositionals: false
    }).values
  } catch (error) {
    return usageError(error instanceof Error ? error.message : String(error))
  }
})()

if (parsed.help === true) {
  process.stdout.write(usage())
  process.exit(0)
}

const numberSetting = (name: string, raw: string | undefined, check: (n: number) => boolean, expected: string) => {
  if (raw === undefined || raw.trim() === "") return undefined
  const value = Number(raw)
  if (!Number.isFinite(value) || !check(value)) usageError(`${name} must be ${expected}, got ${JSON.stringify(raw)}`)
  return value
}

const tickSeconds = numberSetting(
  parsed["tick-seconds"] !== undefined ? "--tick-seconds" : "DEMO_TICK_SECONDS",
  parsed["tick-seconds"] ?? process.env.DEMO_TICK_SECONDS,
  (n) => n === 0 || (n >= 0.05 && n <= 86400),
  "0 (off) or a number of seconds from 0.05 to 86400"
) ?? 0
const port = numberSetting(
  parsed.port !== undefined ? "--port" : "DEMO_PORT",
  parsed.port ?? process.env.DEMO_PORT,
  (n) => Number.isInteger(n) && n >= 0 && n <= 65535,
  "a port number (0-65535)"
) ?? DEFAULT_PORT

const recordFile = process.env.DEMO_RECORD_FILE
const record: Recorder | undefined = recordFile === undefined || recordFile === ""
  ? undefined
  : (entry) => {
    try {
      fs.appendFileSync(recordFile, JSON.stringify({ ...entry, t: Date.now() }) + "\n")
    } catch {
      // A record file is a testing aid; failing to write it must not break a call.
    }
  }

const options: DemoOptions = {
  tickSeconds,
  record,
  expectedApiKey: process.env.DEMO_EXPECTED_API_KEY
}

const banner = (transport: string) =>
  `version ${SERVER_VERSION}, an offline demo, over ${transport}; ${TOOLS.length} tools: ` +
  `${TOOLS.map((t) => t.name).join(", ")}; ticks ${tickSeconds > 0 ? `every ${tickSeconds} s` : "off"}`

if (parsed.http === true) {
  const running = await serveHttp({ port, makeServer: () => makeDemoServer(options), say }).catch((error: unknown) => {
    say(`could not listen on 127.0.0.1:${port}: ${error instanceof Error ? error.message : String(error)}`)
    return process.exit(1)
  })
  say(banner("Streamable HTTP"))
  say(`listening on ${running.url}`)
  const stop = () => {
    void running.close().finally(() => process.exit(0))
  }
  process.once("SIGINT", stop)
  process.once("SIGTERM", stop)
} else {
  const server = makeDemoServer(options)
  say(banner("stdio"))
  await server.connect(new StdioServerTransport())
  // The SDK's stdio transport does not exit when stdin closes; a well-behaved server does.
  const stop = () => {
    void server.close().finally(() => process.exit(0))
  }
  process.stdin.once("end", stop)
  process.once("SIGTERM", stop)
  process.once("SIGINT", stop)
}
