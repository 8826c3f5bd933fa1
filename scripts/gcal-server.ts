/**
 * The Google Calendar MCP server (stdio): seven tools over the Calendar API v3, OAuth tokens
 * from `<secrets dir>/google_creds.json` (written by scripts/gcal-oauth-setup.ts), and a poller
 * that pushes `event/new_calendar_event` for newly created events.
 *
 *   node --import tsx scripts/gcal-server.ts [--help]
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CalendarApi } from "./gcal/api.js"
import { ConfigError, loadConfig, log, SETUP_COMMAND } from "./gcal/config.js"
import { TokenProvider } from "./gcal/credentials.js"
import { Poller } from "./gcal/poller.js"
import { registerTools } from "./gcal/tools.js"

const HELP = `Usage: node --import tsx scripts/gcal-server.ts [--help]

The Google Calendar MCP server, over stdio. Tools: list_calendars, list_events, get_event,
create_event, update_event, delete_event, respond_to_event. New events are pushed to the
client as "event/new_calendar_event" notifications.

Credentials: <secrets dir>/google_creds.json, created by
  ${SETUP_COMMAND}

Environment:
  SKALD_SECRETS_DIR          the secrets folder (default: $SKALD_HOME/secrets, home defaulting to .)
  GCAL_POLL_SECONDS          seconds between polls for new events (default 300; 0 turns polling off)
  GCAL_POLL_CALENDARS        comma-separated calendar ids to watch (default primary)
  GCAL_POLL_OVERLAP_SECONDS  how far each poll looks back past the previous one (default 300)
  GCAL_HTTP_TIMEOUT_SECONDS  the longest wait for one Google request (default 30)
  GCAL_REFRESH_MARGIN_SECONDS refresh access tokens this long before they expire (default 60)
  GCAL_API_BASE              Calendar API root (default https://www.googleapis.com/calendar/v3)
  GCAL_TOKEN_URL             OAuth token endpoint (default https://oauth2.googleapis.com/token)

Register with Skald:
  skald mcp add gcal -- node --import tsx scripts/gcal-server.ts
`

const args = process.argv.slice(2)
if (args.includes("--help") || args.includes("-h")) {
  process.stdout.write(HELP)
  process.exit(0)
}
if (args.length > 0) {
  process.stderr.write(`gcal-server: unknown argument ${JSON.stringify(args[0])}\n\n${HELP}`)
  process.exit(2)
}

let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig()
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  process.stderr.write(`gcal-server: ${error.message}\n`)
  process.exit(2)
}

const tokens = new TokenProvider({
  credentialsFile: config.credentialsFile,
  tokenUrl: config.tokenUrl,
  httpTimeoutSeconds: config.httpTimeoutSeconds,
  refreshMarginSeconds: config.refreshMarginSeconds
})
const api = new CalendarApi({ apiBase: config.apiBase, tokens, httpTimeoutSeconds: config.httpTimeoutSeconds })

const server = new McpServer(
  { name: "gcal", title: "Google Calendar", version: "1.0.0" },
  {
    instructions:
      "Reads and writes the user's Google Calendar. Times are RFC 3339 (2025-01-31T09:00:00+01:00) or dates (2025-01-31) " +
      "for all-day events; calendar_id defaults to the primary calendar. New events arrive as event/new_calendar_event notifications."
  }
)
registerTools(server, api)

const transport = new StdioServerTransport()

const poller = config.pollSeconds > 0
  ? new Poller({
    api,
    calendars: config.pollCalendars,
    stateFile: config.pollStateFile,
    intervalSeconds: config.pollSeconds,
    overlapSeconds: config.pollOverlapSeconds,
    // A JSON-RPC notification outside `notifications/`: written straight to the transport,
    // which serialises it with the protocol's own messages on stdout.
    notify: (method, params) => transport.send({ jsonrpc: "2.0", method, params: { ...params } })
  })
  : undefined

// Polling starts once the client has finished initializing, so no event precedes the handshake.
server.server.oninitialized = () => poller?.start()

let closing = false
const shutdown = async (code: number): Promise<void> => {
  if (closing) return
  closing = true
  await poller?.stop()
  await server.close().catch(() => undefined)
  process.exit(code)
}
process.stdin.on("end", () => void shutdown(0))
process.on("SIGTERM", () => void shutdown(0))
process.on("SIGINT", () => void shutdown(130))

await server.connect(transport)
log(
  `ready; credentials ${config.credentialsFile}; ${
    poller !== undefined ? `polling ${config.pollCalendars.join(", ")} every ${config.pollSeconds} s` : "polling off"
  }`
)
