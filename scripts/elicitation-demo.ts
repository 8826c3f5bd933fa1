/**
 * The elicitation demo MCP server (stdio): tools that ask the user mid-call.
 *
 * - `ask_secret {label?}`: asks for a secret — URL mode (a one-time page on 127.0.0.1) when the
 *   client declared `elicitation.url`, else the seed's form convention (one masked field named
 *   `secret`; a documented deviation from the 2025-11-25 spec). The answer is never echoed: only
 *   its length and a fingerprint (HMAC-SHA-256 under a key made fresh for each process, so equal
 *   secrets have equal fingerprints within one run and the fingerprint is useless outside it).
 * - `confirm {question?}`: a form-mode yes/no confirmation.
 * - `unlock_vault`: both in one call — the secret, then "unlock with it?".
 *
 * Nothing this process writes (stderr included) contains an answered value.
 *
 * Run: `node --import tsx scripts/elicitation-demo.ts` (`--help`).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { createHmac, randomBytes } from "node:crypto"
import { z } from "zod"
import {
  askSecret,
  clientModes,
  confirm,
  elicitationTimeoutMs,
  ElicitationUnsupported,
  type SecretAnswer,
  TIMEOUT_ENV
} from "./lib/url-elicitation.js"

const VERSION = "1.0.0"

const HELP = `Usage: node --import tsx scripts/elicitation-demo.ts [--help]

A stdio MCP server whose tools ask the user for input during the call (MCP elicitation):
  ask_secret    {label?}      asks for a secret; answers only its length and a fingerprint
  confirm       {question?}   asks a yes/no question
  unlock_vault  {}            asks for a secret, then for a confirmation

Secrets are asked in URL mode (a one-time page this process serves on 127.0.0.1) when the client
supports it, else with a form whose single field is named 'secret' (a deviation from the MCP
2025-11-25 spec, which forbids sensitive data in form mode).

Environment:
  ${TIMEOUT_ENV}  seconds to wait for the user (default 600)
`

const argv = process.argv.slice(2)
if (argv.includes("--help") || argv.includes("-h")) {
  process.stdout.write(HELP)
  process.exit(0)
}
if (argv.length > 0) {
  process.stderr.write(`elicitation-demo: unknown argument ${JSON.stringify(argv[0])}; try --help\n`)
  process.exit(2)
}
try {
  elicitationTimeoutMs()
} catch (error) {
  process.stderr.write(`elicitation-demo: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(2)
}

/** Never pass an answered value here. */
const log = (line: string) => process.stderr.write(`elicitation-demo: ${line}\n`)

const text = (value: string, isError = false): CallToolResult =>
  isError ? { content: [{ type: "text", text: value }], isError: true } : { content: [{ type: "text", text: value }] }

const fingerprintKey = randomBytes(32)
const fingerprint = (secret: string): string =>
  createHmac("sha256", fingerprintKey).update(secret, "utf8").digest("hex").slice(0, 12)

/** What we may say about a secret: its length and fingerprint. */
const describeSecret = (secret: string): string =>
  `${[...secret].length} characters, fingerprint ${fingerprint(secret)}`

const server = new McpServer({ name: "elicitation-demo", version: VERSION }, { capabilities: { tools: {} } })

const modeOf = () => (clientModes(server).url ? "url" : "form")

const notAnswered = (tool: string, answer: Exclude<SecretAnswer, { action: "accept" }>): CallToolResult => {
  const why = answer.reason === "timeout"
    ? `no answer within the time limit (${TIMEOUT_ENV})`
    : answer.reason === "aborted"
    ? "the call was cancelled"
    : answer.action === "decline"
    ? "you declined"
    : "you cancelled"
  log(`${tool}: ${answer.action}${answer.reason !== undefined ? ` (${answer.reason})` : ""}`)
  return text(`${tool}: no secret (${why})`)
}

const unsupported = (tool: string, error: unknown): CallToolResult => {
  if (error instanceof ElicitationUnsupported) {
    log(`${tool}: ${error.message}`)
    return text(`Error: ${error.message}; connect with a client that supports elicitation`, true)
  }
  const message = error instanceof Error ? error.message : String(error)
  log(`${tool}: the elicitation failed: ${message}`)
  return text(`Error: the elicitation failed: ${message}`, true)
}

server.registerTool(
  "ask_secret",
  {
    title: "Ask for a secret",
    description: "Asks the user for a secret (never shown back: only its length and a fingerprint). "
      + "Uses a one-time local web page when the client supports URL elicitation, else a masked form field.",
    inputSchema: { label: z.string().min(1).max(100).optional().describe("What the secret is for (shown to the user)") }
  },
  async ({ label }, extra) => {
    const what = label ?? "the demo vault"
    const mode = modeOf()
    log(`ask_secret: asking in ${mode} mode`)
    try {
      const answer = await askSecret(server, {
        title: `Secret for ${what}`,
        message: `The elicitation demo asks for a secret for ${what}. It will only tell its length and a fingerprint.`,
        field: "secret",
        signal: extra.signal,
        relatedRequestId: extra.requestId
      })
      if (answer.action !== "accept") return notAnswered("ask_secret", answer)
      log(`ask_secret: accept (${[...answer.value].length} characters)`)
      return text(
        `ask_secret: got a secret of ${describeSecret(answer.value)} (asked ${
          mode === "url" ? "on a one-time page" : "in a form"
        })`
      )
    } catch (error) {
      return unsupported("ask_secret", error)
    }
  }
)

server.registerTool(
  "confirm",
  {
    title: "Ask a yes/no question",
    description: "Asks the user a yes/no question and reports the answer (yes, no, or cancelled).",
    inputSchema: { question: z.string().min(1).max(500).optional().describe("The question (default: \"Proceed?\")") }
  },
  async ({ question }, extra) => {
    try {
      const answer = await confirm(server, question ?? "Proceed?", extra.signal, { relatedRequestId: extra.requestId })
      log(`confirm: ${answer}`)
      return text(`confirm: ${answer === "cancel" ? "cancelled" : answer}`)
    } catch (error) {
      return unsupported("confirm", error)
    }
  }
)

server.registerTool(
  "unlock_vault",
  {
    title: "Unlock the demo vault",
    description: "Asks for the vault's secret, then asks to confirm unlocking with it: two elicitations in one call."
  },
  async (extra) => {
    const mode = modeOf()
    log(`unlock_vault: asking in ${mode} mode`)
    try {
      const answer = await askSecret(server, {
        title: "Vault secret",
        message: "Enter the secret of the demo vault.",
        field: "secret",
        signal: extra.signal,
        relatedRequestId: extra.requestId
      })
      if (answer.action !== "accept") return notAnswered("unlock_vault", answer)
      const described = describeSecret(answer.value)
      const go = await confirm(server, `Unlock the demo vault with the secret of ${described}?`, extra.signal, {
        relatedRequestId: extra.requestId
      })
      log(`unlock_vault: secret accepted, confirmation ${go}`)
      if (go === "yes") return text(`unlock_vault: unlocked with a secret of ${described}`)
      return text(`unlock_vault: left locked (${go === "no" ? "you said no" : "cancelled"})`)
    } catch (error) {
      return unsupported("unlock_vault", error)
    }
  }
)

await server.connect(new StdioServerTransport())
log(`${VERSION} ready`)
// Exit when the client closes our stdin (an open one-time page would otherwise keep us alive).
process.stdin.on("end", () => process.exit(0))
