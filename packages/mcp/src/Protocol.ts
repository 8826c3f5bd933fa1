/**
 * Protocol constants shared by every transport, so they can never drift apart.
 *
 * @since 0.1.0
 */

/** The MCP revision Skald targets and advertises in `initialize`. */
export const PROTOCOL_VERSION = "2025-11-25"

/** Older revisions a server may answer with; the connection is used with a warning. */
export const COMPATIBLE_VERSIONS: ReadonlyArray<string> = ["2025-06-18", "2025-03-26"]

/** Every revision Skald speaks, newest first. */
export const SUPPORTED_VERSIONS: ReadonlyArray<string> = [PROTOCOL_VERSION, ...COMPATIBLE_VERSIONS]

/** The most `tools/list` pages followed before the cursor is dropped. */
export const MAX_TOOL_PAGES = 50

/** The default `tools/call` timeout (the seed's `CALL_TIMEOUT_SECS`). */
export const DEFAULT_CALL_TIMEOUT_MILLIS = 120_000

/** The default start (spawn + initialize) timeout (the seed's `SERVER_START_TIMEOUT_SECS`). */
export const DEFAULT_START_TIMEOUT_MILLIS = 120_000

/** The default limit on one incoming message (a line on stdio, a body on HTTP). */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024

/** The client's name and version in `initialize`. */
export const CLIENT_INFO = { name: "skald", version: "0.1.0" } as const
