/**
 * A registered MCP server as the host stores it, and how it is doing.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { HttpServerConfig, StdioServerConfig } from "./ServerConfig.js"
import { ServerName } from "./ServerName.js"

/** A decoded config (stdio or http), as carried inside an entry. */
export const Config = Schema.Union(StdioServerConfig, HttpServerConfig)

/**
 * One row of the server registry. Env values and the api key are stored as given: `${VAR}`
 * references to secrets, or plain values — never a resolved secret.
 */
export class McpServerEntry extends Schema.Class<McpServerEntry>("@skald/domain/McpServerEntry")({
  name: ServerName,
  config: Config,
  description: Schema.optionalWith(Schema.String, { exact: true }),
  friendlyName: Schema.optionalWith(Schema.String, { exact: true }),
  enabled: Schema.Boolean
}) {}

/**
 * Where a server stands:
 * - `starting` — being connected (or restarted after a crash);
 * - `connected` — initialized, its tools are callable;
 * - `failed` — it could not start, or it died (the error says why and whether a restart is due);
 * - `disabled` — registered but switched off;
 * - `host-not-running` — enabled, but no `skald serve` is running to connect it.
 */
export const ServerState = Schema.Literal("starting", "connected", "failed", "disabled", "host-not-running")
export type ServerState = typeof ServerState.Type

/**
 * What a failed server's error was, beyond its message: its `_tag` and its plain fields (strings
 * redacted of the server's secrets, numbers, booleans), so that whoever shows the status can add
 * its own advice for that kind of error (the command line's hints).
 */
export const ErrorCause = Schema.Struct(
  { _tag: Schema.String },
  Schema.Record({ key: Schema.String, value: Schema.Union(Schema.String, Schema.Number, Schema.Boolean) })
)
export type ErrorCause = typeof ErrorCause.Type

/** A line of `skald mcp list`. */
export class ServerSummary extends Schema.Class<ServerSummary>("@skald/domain/ServerSummary")({
  name: ServerName,
  friendlyName: Schema.optionalWith(Schema.String, { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  transport: Schema.Literal("stdio", "http"),
  enabled: Schema.Boolean,
  state: ServerState,
  error: Schema.optionalWith(Schema.String, { exact: true }),
  /** The kind of error `error` is, with its fields. */
  errorCause: Schema.optionalWith(ErrorCause, { exact: true }),
  toolCount: Schema.optionalWith(Schema.Number, { exact: true }),
  pid: Schema.optionalWith(Schema.Number, { exact: true }),
  /** When the server entered this state (ISO-8601). */
  since: Schema.optionalWith(Schema.String, { exact: true }),
  /** When a failed server is tried again (ISO-8601). */
  nextRetryAt: Schema.optionalWith(Schema.String, { exact: true })
}) {}
