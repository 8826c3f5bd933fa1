/**
 * The repository of push events (DESIGN §2: every notification outside `notifications/`, e.g.
 * `event/new_email`), the `mcp_events` table: rows in and out, read through a schema. They stay
 * there until the TIC agent processes them. What writes them is `EventRecorder.ts`.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { CorruptRow, DatabaseError } from "./HostError.js"
import * as Rows from "./Rows.js"
import { nowIso } from "./Time.js"

/** An event to store. */
export interface NewEvent {
  readonly server: string
  readonly method: string
  readonly params: unknown
  readonly receivedAt: string
}

/** A stored event. */
export interface StoredEvent extends NewEvent {
  readonly id: number
  readonly status: "pending" | "processed"
  readonly processedAt: string | undefined
}

/**
 * The `mcp_events` table. A row that cannot be read is a `CorruptRow`, a statement that fails a
 * `DatabaseError` (HostError.ts).
 */
export interface Service {
  /** Inserts the events in one transaction, in order. */
  readonly insertAll: (events: ReadonlyArray<NewEvent>) => Effect.Effect<void, DatabaseError>
  /** Events in id order: all, or only the pending ones; at most `limit` (default: no limit). */
  readonly list: (
    options?: { readonly pending?: boolean; readonly limit?: number }
  ) => Effect.Effect<ReadonlyArray<StoredEvent>, DatabaseError | CorruptRow>
  /** Marks events processed (now); returns how many were pending. */
  readonly markProcessed: (ids: ReadonlyArray<number>) => Effect.Effect<number, DatabaseError>
}

/** The `mcp_events` table. */
export class EventRepo extends Context.Tag("@skald/server/EventRepo")<EventRepo, Service>() {}

/** A `mcp_events` row (`params` is a JSON column). */
const Row = Schema.Struct({
  id: Schema.Number,
  server: Schema.String,
  method: Schema.String,
  params: Schema.NullOr(Schema.parseJson()),
  received_at: Schema.String,
  status: Schema.Literal("pending", "processed"),
  processed_at: Schema.NullOr(Schema.String)
})

const fromRow = (r: typeof Row.Type): StoredEvent => ({
  id: r.id,
  server: r.server,
  method: r.method,
  params: r.params === null ? undefined : r.params,
  receivedAt: r.received_at,
  status: r.status,
  processedAt: r.processed_at ?? undefined
})

/** The SQL implementation. */
export const layer: Layer.Layer<EventRepo, never, SqlClient.SqlClient> = Layer.effect(
  EventRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return {
      insertAll: (events) =>
        events.length === 0 ? Effect.void : sql.withTransaction(
          Effect.forEach(events, (e) =>
            sql`INSERT INTO mcp_events (server, method, params, received_at, status)
              VALUES (${e.server}, ${e.method}, ${e.params === undefined ? null : JSON.stringify(e.params)},
                ${e.receivedAt}, 'pending')`, { discard: true })
        ).pipe(Rows.storage(`store ${events.length} MCP events`)),
      list: (options = {}) => {
        const where = options.pending === true ? sql`WHERE status = 'pending'` : sql``
        const limit = options.limit === undefined ? sql`` : sql`LIMIT ${options.limit}`
        return SqlSchema.findAll({
          Request: Schema.Void,
          Result: Row,
          execute: () => sql`SELECT * FROM mcp_events ${where} ORDER BY id ${limit}`
        })(undefined).pipe(
          Effect.catchTag("ParseError", Rows.corrupt("mcp_events")),
          Effect.map((rows) => rows.map(fromRow)),
          Rows.storage("read the MCP events")
        )
      },
      markProcessed: (ids) =>
        ids.length === 0 ? Effect.succeed(0) : Effect.flatMap(nowIso, (at) =>
          sql<{ id: number }>`UPDATE mcp_events
          SET status = 'processed', processed_at = ${at}
          WHERE status = 'pending' AND ${sql.in("id", ids)} RETURNING id`.pipe(Effect.map((rows) => rows.length))).pipe(
            Rows.storage("mark MCP events processed")
          )
    }
  })
)
