/**
 * Diagnostic lines: one line on stderr each, and the same as an MCP `notifications/message`
 * (logger "ssh") once a client is connected. Every line goes through the redactor, which masks
 * any secret held in RAM — a second fence: no line is ever built from a secret in the first place.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"

export type Level = "debug" | "info" | "warning" | "error"

export class Log {
  private server: McpServer | undefined
  private redactor: (text: string) => string = (text) => text

  attach(server: McpServer): void {
    this.server = server
  }

  setRedactor(redactor: (text: string) => string): void {
    this.redactor = redactor
  }

  debug(text: string): void {
    this.emit("debug", text)
  }
  info(text: string): void {
    this.emit("info", text)
  }
  warn(text: string): void {
    this.emit("warning", text)
  }
  error(text: string): void {
    this.emit("error", text)
  }

  private emit(level: Level, raw: string): void {
    const text = this.redactor(raw).replace(/[\r\n]+/g, " ")
    process.stderr.write(`ssh-mcp ${level}: ${text}\n`)
    const server = this.server
    if (server !== undefined && server.isConnected()) {
      server.sendLoggingMessage({ level, logger: "ssh", data: text }).catch(() => {})
    }
  }
}
