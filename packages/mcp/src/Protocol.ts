/**
 * Protocol constants shared by every transport, so they can never drift apart.
 *
 * @since 0.1.0
 */

/** The MCP revision Skald targets and advertises in `initialize`. */
export const PROTOCOL_VERSION = "2025-11-25"

/**
 * Older revisions a server may answer with; the connection is used with a warning. The same list
 * the official SDK client accepts: much of the registry still answers 2024-11-05.
 */
export const COMPATIBLE_VERSIONS: ReadonlyArray<string> = ["2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"]

/** Every revision Skald speaks, newest first. */
export const SUPPORTED_VERSIONS: ReadonlyArray<string> = [PROTOCOL_VERSION, ...COMPATIBLE_VERSIONS]

/**
 * What a negotiated revision has that the engine would otherwise assume (docs/mcp-client.md has
 * the table). A revision lacks everything introduced after it; the client simply does not expect
 * it.
 */
export interface Features {
  /** Task-augmented `tools/call` (`task` in the params, `tasks/*`; 2025-11-25). */
  readonly tasks: boolean
  /** `structuredContent` and a tool's `outputSchema` (2025-06-18). */
  readonly structuredContent: boolean
  /** The `MCP-Protocol-Version` header on every HTTP request after initialize (2025-06-18). */
  readonly versionHeader: boolean
}

const since = (version: string, introduced: string): boolean => version >= introduced

/** The features of a supported revision (revisions are dates, so they compare as strings). */
export const features = (version: string): Features => ({
  tasks: since(version, "2025-11-25"),
  structuredContent: since(version, "2025-06-18"),
  versionHeader: since(version, "2025-06-18")
})

/** The most `tools/list` pages followed before the cursor is dropped. */
export const MAX_TOOL_PAGES = 50

/** The default `tools/call` timeout (the seed's `CALL_TIMEOUT_SECS`). */
export const DEFAULT_CALL_TIMEOUT_MILLIS = 120_000

/**
 * The default longest total time of a `tools/call` whose progress keeps restarting its timeout
 * (1 h, as the longest task wait).
 */
export const DEFAULT_MAX_TOTAL_TIMEOUT_MILLIS = 60 * 60 * 1000

/** The default start (spawn + initialize) timeout (the seed's `SERVER_START_TIMEOUT_SECS`). */
export const DEFAULT_START_TIMEOUT_MILLIS = 120_000

/**
 * How long a client that declares roots waits after `notifications/initialized` for the server's
 * first `roots/list` before it releases its first request (McpClient's `rootsWait`).
 */
export const DEFAULT_ROOTS_WAIT_MILLIS = 1_000

/** The default limit on one incoming message (a line on stdio, a body on HTTP). */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024

/** The client's name and version in `initialize`. */
export const CLIENT_INFO = { name: "skald", version: "0.1.0" } as const
