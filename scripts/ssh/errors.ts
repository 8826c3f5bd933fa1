/**
 * A failure the user can act on: its message is the tool result (with `isError: true`). Messages
 * never contain a secret — build them from names, paths and hosts only.
 */
export class ToolError extends Error {
  override readonly name = "ToolError"
}

/** The message of anything thrown, for a result or a log line. */
export const messageOf = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error)
