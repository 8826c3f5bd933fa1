/**
 * SSH MCP server (stdio): works on remote hosts over SSH — aliases, exec with sudo, SFTP text
 * tools, upload/download, sysinfo, systemd. Built on the official SDK's server API and ssh2
 * (pure JS). `node --import tsx scripts/ssh-server.ts --help` lists its settings; docs/servers.md
 * ("SSH server") describes the tools, their output formats and the security model.
 *
 * The parts live in scripts/ssh/: config, aliases, knownHosts, secrets (RAM cache + elicitation),
 * connect (auth and host keys), pool, exec (sudo), sftp, fsTools, transfer, diagnostics, tools.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { elicitationTimeoutMs } from "./lib/url-elicitation.js"
import { AliasStore } from "./ssh/aliases.js"
import { ConfigError, HELP, loadConfig } from "./ssh/config.js"
import { Log } from "./ssh/log.js"
import { Pool } from "./ssh/pool.js"
import { Secrets } from "./ssh/secrets.js"
import { register } from "./ssh/tools.js"

const args = process.argv.slice(2)
if (args.includes("--help") || args.includes("-h")) {
  process.stdout.write(HELP)
  process.exit(0)
}
if (args.length > 0) {
  process.stderr.write(`ssh-server: unknown argument ${JSON.stringify(args[0])} (try --help)\n`)
  process.exit(2)
}

let config
try {
  config = loadConfig()
  elicitationTimeoutMs()
} catch (error) {
  process.stderr.write(
    `ssh-server: ${error instanceof ConfigError || error instanceof Error ? error.message : String(error)}\n`
  )
  process.exit(2)
}

const log = new Log()
const server = new McpServer(
  { name: "skald-ssh", version: "1.0.0" },
  {
    capabilities: { tools: {}, logging: {} },
    instructions: "Work on remote hosts over SSH. Start with list_aliases; add a host with add_alias (never pass a " +
      "password: secrets are asked for by elicitation when needed). File tools run as the login user; use exec with " +
      "sudo=true (and tee/install) for privileged changes."
  }
)
const secrets = Secrets.forServer(
  server,
  { login: config.loginSecretTtlMs, sudo: config.sudoSecretTtlMs },
  log,
  config.keyPassphrase === undefined ? [] : [config.keyPassphrase]
)
log.setRedactor((text) => secrets.redact(text))
const pool = new Pool(config, secrets, log)
register(server, { config, aliases: new AliasStore(config.aliasesFile, log), pool, secrets, log })

let closing = false
const shutdown = (why: string) => {
  if (closing) return
  closing = true
  pool.closeAll(why)
  // Let the SSH disconnects go out, then leave even if a socket lingers.
  setTimeout(() => process.exit(0), 200).unref()
}
process.stdin.on("end", () => shutdown("the client closed stdin"))
process.on("SIGTERM", () => shutdown("SIGTERM"))
process.on("SIGINT", () => shutdown("SIGINT"))

const transport = new StdioServerTransport()
transport.onclose = () => shutdown("the transport closed")
await server.connect(transport)
log.attach(server)
log.info(
  `ready: aliases in ${config.aliasesFile}, known hosts in ${config.knownHostsFile}, pool TTL ${
    config.poolTtlMs / 1000
  } s`
)
