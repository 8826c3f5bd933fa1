/**
 * The server registry, `mcp_servers`: the one source of truth for configuration. The interface
 * speaks domain entries; `layer` is its SQL implementation (plain SQL an other engine accepts).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { ParseError } from "effect/ParseResult"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { CorruptRow, DatabaseError } from "./HostError.js"
import * as Rows from "./Rows.js"
import { nowIso } from "./Time.js"

/**
 * The registry. A row that cannot be read is a `CorruptRow`, a statement that fails a
 * `DatabaseError` (HostError.ts): never a defect, never the SQL layer's own error.
 */
export interface Service {
  /** Every entry, by name. */
  readonly list: Effect.Effect<ReadonlyArray<McpServerEntry.McpServerEntry>, DatabaseError | CorruptRow>
  readonly get: (
    name: ServerName.ServerName
  ) => Effect.Effect<Option.Option<McpServerEntry.McpServerEntry>, DatabaseError | CorruptRow>
  /** Inserts or replaces the entry of that name (keeping its creation time). */
  readonly upsert: (entry: McpServerEntry.McpServerEntry) => Effect.Effect<void, DatabaseError>
  /** Deletes the entry; false when there was none. */
  readonly remove: (name: ServerName.ServerName) => Effect.Effect<boolean, DatabaseError>
  /** Sets `enabled`; false when there is no such entry. */
  readonly setEnabled: (name: ServerName.ServerName, enabled: boolean) => Effect.Effect<boolean, DatabaseError>
  /** When each entry was last written (`upsert`, `setEnabled`): `updated_at` by name. */
  readonly stamps: Effect.Effect<ReadonlyMap<string, string>, DatabaseError | CorruptRow>
  /**
   * Other processes' writes: notes where the database stands now and returns a stream that ticks
   * each time another connection has committed since (to any table: the registry, `host_requests`),
   * checked every `every`. A failed check fails the stream; retried, it goes on from where it stood.
   */
  readonly changes: (every: Duration.DurationInput) => Effect.Effect<Stream.Stream<void, DatabaseError>, DatabaseError>
}

/** The server registry. */
export class McpServerRepo extends Context.Tag("@skald/server/McpServerRepo")<McpServerRepo, Service>() {}

/** A `mcp_servers` row (`args`, `env` and `roots` are JSON columns). */
const Row = Schema.Struct({
  name: Schema.String,
  transport: Schema.Literal("stdio", "http"),
  command: Schema.NullOr(Schema.String),
  args: Schema.parseJson(),
  env: Schema.parseJson(),
  url: Schema.NullOr(Schema.String),
  api_key: Schema.NullOr(Schema.String),
  /** JSON (ServerConfig.HttpOAuthConfig), http only. */
  oauth: Schema.NullOr(Schema.parseJson()),
  description: Schema.NullOr(Schema.String),
  friendly_name: Schema.NullOr(Schema.String),
  enabled: Schema.Literal(0, 1),
  roots: Schema.parseJson()
})
type Row = typeof Row.Type

const StampRow = Schema.Struct({ name: Schema.String, updated_at: Schema.String })

const decodeStdio = Schema.decodeUnknown(ServerConfig.StdioServerConfig)
const decodeHttp = Schema.decodeUnknown(ServerConfig.HttpServerConfig)

const fromRow = (row: Row): Effect.Effect<McpServerEntry.McpServerEntry, CorruptRow> => {
  // `[]` (the column's default) is no roots: the config then has none.
  const roots = Array.isArray(row.roots) && row.roots.length === 0 ? {} : { roots: row.roots }
  return (row.transport === "stdio"
    ? decodeStdio({ _tag: "stdio", command: row.command, args: row.args, env: row.env, ...roots })
    : decodeHttp({
      _tag: "http",
      url: row.url,
      ...(row.api_key === null ? {} : { apiKey: row.api_key }),
      ...roots,
      ...(row.oauth === null ? {} : { oauth: row.oauth })
    }) as Effect.Effect<
      ServerConfig.ServerConfig,
      ParseError
    >).pipe(
      Effect.catchTag("ParseError", Rows.corrupt("mcp_servers", row.name)),
      Effect.map((config) =>
        McpServerEntry.McpServerEntry.make({
          name: ServerName.make(row.name),
          config,
          ...(row.description === null ? {} : { description: row.description }),
          ...(row.friendly_name === null ? {} : { friendlyName: row.friendly_name }),
          enabled: row.enabled === 1
        })
      )
    )
}

/** The SQL implementation. */
export const layer: Layer.Layer<McpServerRepo, never, SqlClient.SqlClient> = Layer.effect(
  McpServerRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns =
      sql`name, transport, command, args, env, url, api_key, oauth, description, friendly_name, enabled, roots`
    const all = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Row,
      execute: () => sql`SELECT ${columns} FROM mcp_servers ORDER BY name`
    })
    const one = SqlSchema.findOne({
      Request: Schema.String,
      Result: Row,
      execute: (name) => sql`SELECT ${columns} FROM mcp_servers WHERE name = ${name}`
    })
    const stampRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: StampRow,
      execute: () => sql`SELECT name, updated_at FROM mcp_servers ORDER BY name`
    })
    // The one SQLite-specific query: `data_version` changes when another connection commits
    // (this layer's connection is the process's only one). Another engine brings its own (LISTEN/NOTIFY).
    const dataVersion = sql<{ data_version: number }>`PRAGMA data_version`.pipe(
      Effect.map((rows) => rows[0]?.data_version ?? 0)
    )
    /** The name of the `index`th row (in name order): looked up only to name a corrupt row. */
    const nameAt = (index: number) =>
      sql<{ name: string }>`SELECT name FROM mcp_servers ORDER BY name LIMIT 1 OFFSET ${index}`.pipe(
        Effect.map((rows) => rows[0]?.name),
        Effect.orElseSucceed(() => undefined)
      )
    return {
      list: all(undefined).pipe(
        Effect.catchTag("ParseError", Rows.corrupt("mcp_servers", nameAt)),
        Effect.flatMap(Effect.forEach(fromRow)),
        Rows.storage("read the server registry")
      ),
      get: (name) =>
        one(name).pipe(
          Effect.catchTag("ParseError", Rows.corrupt("mcp_servers", name)),
          Effect.flatMap(Option.match({
            onNone: () => Effect.succeedNone,
            onSome: (row) => Effect.asSome(fromRow(row))
          })),
          Rows.storage(`read the registration of MCP server '${name}'`)
        ),
      upsert: (entry) =>
        Effect.flatMap(nowIso, (at) => {
          const c = entry.config
          const stdio = c._tag === "stdio"
          return sql`INSERT INTO mcp_servers
          (name, transport, command, args, env, url, api_key, oauth, description, friendly_name, enabled, roots,
            created_at, updated_at)
          VALUES (${entry.name}, ${c._tag}, ${stdio ? c.command : null}, ${JSON.stringify(stdio ? c.args : [])},
            ${JSON.stringify(stdio ? c.env : {})}, ${stdio ? null : c.url}, ${stdio ? null : c.apiKey ?? null},
            ${stdio || c.oauth === undefined ? null : JSON.stringify(c.oauth)},
            ${entry.description ?? null}, ${entry.friendlyName ?? null}, ${entry.enabled ? 1 : 0},
            ${JSON.stringify(c.roots ?? [])}, ${at}, ${at})
          ON CONFLICT (name) DO UPDATE SET
            transport = excluded.transport, command = excluded.command, args = excluded.args, env = excluded.env,
            url = excluded.url, api_key = excluded.api_key, oauth = excluded.oauth, description = excluded.description,
            friendly_name = excluded.friendly_name, enabled = excluded.enabled, roots = excluded.roots,
            updated_at = excluded.updated_at`
            .pipe(Effect.asVoid)
        }).pipe(Rows.storage(`store the registration of MCP server '${entry.name}'`)),
      remove: (name) =>
        sql<{ name: string }>`DELETE FROM mcp_servers WHERE name = ${name} RETURNING name`.pipe(
          Effect.map((rows) => rows.length > 0),
          Rows.storage(`remove the registration of MCP server '${name}'`)
        ),
      setEnabled: (name, enabled) =>
        Effect.flatMap(
          nowIso,
          (at) =>
            sql<{ name: string }>`UPDATE mcp_servers SET enabled = ${enabled ? 1 : 0}, updated_at = ${at}
          WHERE name = ${name} RETURNING name`.pipe(Effect.map((rows) => rows.length > 0))
        ).pipe(Rows.storage(`${enabled ? "enable" : "disable"} MCP server '${name}'`)),
      stamps: stampRows(undefined).pipe(
        Effect.catchTag("ParseError", Rows.corrupt("mcp_servers", nameAt)),
        Effect.map((rows) => new Map(rows.map((r) => [r.name, r.updated_at]))),
        Rows.storage("read the server registry")
      ),
      changes: (every) =>
        Effect.map(dataVersion, (initial) => {
          let seen = initial
          const changed = Effect.map(dataVersion, (version) => {
            const moved = version !== seen
            seen = version
            return moved
          })
          return Stream.repeatEffectWithSchedule(changed, Schedule.spaced(every)).pipe(
            Stream.filter((moved) => moved),
            Stream.map((): void => undefined),
            Rows.storageStream("check the database for changes")
          )
        }).pipe(Rows.storage("check the database for changes"))
    }
  })
)
