/**
 * The server registry, `mcp_servers`: the one source of truth for configuration. The interface
 * speaks domain entries; `layer` is its SQL implementation (plain SQL an other engine accepts).
 *
 * @since 0.1.0
 */
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlClient from "@effect/sql/SqlClient"
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { nowIso } from "./Time.js"

/** The registry. */
export interface Service {
  /** Every entry, by name. */
  readonly list: Effect.Effect<ReadonlyArray<McpServerEntry.McpServerEntry>, SqlError>
  readonly get: (name: ServerName.ServerName) => Effect.Effect<Option.Option<McpServerEntry.McpServerEntry>, SqlError>
  /** Inserts or replaces the entry of that name (keeping its creation time). */
  readonly upsert: (entry: McpServerEntry.McpServerEntry) => Effect.Effect<void, SqlError>
  /** Deletes the entry; false when there was none. */
  readonly remove: (name: ServerName.ServerName) => Effect.Effect<boolean, SqlError>
  /** Sets `enabled`; false when there is no such entry. */
  readonly setEnabled: (name: ServerName.ServerName, enabled: boolean) => Effect.Effect<boolean, SqlError>
}

/** The server registry. */
export class McpServerRepo extends Context.Tag("@skald/server/McpServerRepo")<McpServerRepo, Service>() {}

interface Row {
  readonly name: string
  readonly transport: string
  readonly command: string | null
  readonly args: string
  readonly env: string
  readonly url: string | null
  readonly api_key: string | null
  readonly description: string | null
  readonly friendly_name: string | null
  readonly enabled: number
}

const decodeConfig = Schema.decodeUnknownSync(ServerConfig.ServerConfig)

const fromRow = (row: Row): McpServerEntry.McpServerEntry =>
  McpServerEntry.McpServerEntry.make({
    name: ServerName.make(row.name),
    config: decodeConfig(
      row.transport === "stdio"
        ? { transport: "stdio", command: row.command, args: JSON.parse(row.args), env: JSON.parse(row.env) }
        : row.api_key === null
        ? { transport: "http", url: row.url }
        : { transport: "http", url: row.url, apiKey: row.api_key }
    ),
    ...(row.description === null ? {} : { description: row.description }),
    ...(row.friendly_name === null ? {} : { friendlyName: row.friendly_name }),
    enabled: row.enabled === 1
  })

/** The SQL implementation. */
export const layer: Layer.Layer<McpServerRepo, never, SqlClient.SqlClient> = Layer.effect(
  McpServerRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`name, transport, command, args, env, url, api_key, description, friendly_name, enabled`
    return {
      list: sql<Row>`SELECT ${columns} FROM mcp_servers ORDER BY name`.pipe(Effect.map((rows) => rows.map(fromRow))),
      get: (name) =>
        sql<Row>`SELECT ${columns} FROM mcp_servers WHERE name = ${name}`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), fromRow))
        ),
      upsert: (entry) => Effect.flatMap(nowIso, (at) => {
        const c = entry.config
        const stdio = c._tag === "stdio"
        return sql`INSERT INTO mcp_servers
          (name, transport, command, args, env, url, api_key, description, friendly_name, enabled, created_at, updated_at)
          VALUES (${entry.name}, ${c._tag}, ${stdio ? c.command : null}, ${JSON.stringify(stdio ? c.args : [])},
            ${JSON.stringify(stdio ? c.env : {})}, ${stdio ? null : c.url}, ${stdio ? null : c.apiKey ?? null},
            ${entry.description ?? null}, ${entry.friendlyName ?? null}, ${entry.enabled ? 1 : 0}, ${at}, ${at})
          ON CONFLICT (name) DO UPDATE SET
            transport = excluded.transport, command = excluded.command, args = excluded.args, env = excluded.env,
            url = excluded.url, api_key = excluded.api_key, description = excluded.description,
            friendly_name = excluded.friendly_name, enabled = excluded.enabled, updated_at = excluded.updated_at`
          .pipe(Effect.asVoid)
      }),
      remove: (name) =>
        sql<{ name: string }>`DELETE FROM mcp_servers WHERE name = ${name} RETURNING name`.pipe(
          Effect.map((rows) => rows.length > 0)
        ),
      setEnabled: (name, enabled) =>
        Effect.flatMap(nowIso, (at) =>
          sql<{ name: string }>`UPDATE mcp_servers SET enabled = ${enabled ? 1 : 0}, updated_at = ${at}
          WHERE name = ${name} RETURNING name`.pipe(Effect.map((rows) => rows.length > 0)))
    }
  })
)
