/**
 * The names MCP tools carry when the model sees them: `mcp__<server>__<tool>`.
 *
 * @since 0.1.0
 */
import * as Option from "effect/Option"
import * as ServerName from "./ServerName.js"

/** The prefix of every MCP tool name shown to the model. */
export const prefix = "mcp__"

/** The separator between the server and the tool. */
export const separator = "__"

/** A server and one of its tools. */
export interface QualifiedToolName {
  readonly server: ServerName.ServerName
  readonly tool: string
}

/** `mcp__<server>__<tool>`. */
export const format = (server: ServerName.ServerName, tool: string): string => `${prefix}${server}${separator}${tool}`

/**
 * Splits `mcp__<server>__<tool>` back into its parts; `None` for any name that is not one.
 * Total: a valid server name never contains `__` nor ends with `_`, so the first `__` after the
 * prefix is the separator and the tool keeps everything after it.
 */
export const parse = (name: string): Option.Option<QualifiedToolName> => {
  if (!name.startsWith(prefix)) return Option.none()
  const rest = name.slice(prefix.length)
  const at = rest.indexOf(separator)
  if (at <= 0) return Option.none()
  const server = rest.slice(0, at)
  const tool = rest.slice(at + separator.length)
  if (tool.length === 0 || !ServerName.isValid(server)) return Option.none()
  return Option.some({ server: server as ServerName.ServerName, tool })
}
