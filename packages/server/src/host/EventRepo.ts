/**
 * The repository of push events (DESIGN §2: every notification outside `notifications/`, e.g.
 * `event/new_email`), the `mcp_events` table: rows in and out, read through a schema. They stay
 * there until the TIC agent processes them (tic/Tic.ts), which takes them with a *claim*: a lease
 * on pending events held by one turn, renewed while it runs, expiring when its host dies
 * (migration 0014). What writes them is `EventRecorder.ts`.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Clock from "effect/Clock"
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

/** What `claim` takes. */
export interface ClaimRequest {
  /** The claim's own token (one per turn). */
  readonly token: string
  /** How many events at most. */
  readonly limit: number
  /** How long the claim holds unless renewed (ms). */
  readonly leaseMillis: number
  /**
   * Of the (at most `limit`) oldest free pending events, how many to keep — a prefix (e.g. those
   * that fit a token budget); the rest stay free. Default: all.
   */
  readonly cut?: ((events: ReadonlyArray<StoredEvent>) => number) | undefined
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
  /**
   * Claims the oldest pending events no live claim holds (never claimed, released, or whose lease
   * ran out), in one transaction that writes first — so two claimers, in this process or another,
   * never get the same event while a claim lives. Returns them in id order (empty: none free).
   */
  readonly claim: (request: ClaimRequest) => Effect.Effect<ReadonlyArray<StoredEvent>, DatabaseError | CorruptRow>
  /** Extends the claim's lease to now + `leaseMillis`; returns how many pending events it still holds. */
  readonly renew: (token: string, leaseMillis: number) => Effect.Effect<number, DatabaseError>
  /** Marks the events the claim still holds processed (now) and ends it; returns their ids. */
  readonly complete: (token: string) => Effect.Effect<ReadonlyArray<number>, DatabaseError>
  /** Ends the claim without processing: its events are free again at once. */
  readonly release: (token: string) => Effect.Effect<void, DatabaseError>
  /** How many events are pending (claimed or not). */
  readonly pendingCount: Effect.Effect<number, DatabaseError>
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
          ),
      claim: (request) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const until = now + request.leaseMillis
          // Written first: the transaction holds SQLite's write lock from its first statement, so
          // no other connection claims between what this one reads and what it writes.
          const taken = yield* sql`UPDATE mcp_events SET claim_token = ${request.token}, claim_until = ${until}
            WHERE id IN (SELECT id FROM mcp_events
              WHERE status = 'pending' AND (claim_token IS NULL OR claim_until <= ${now})
              ORDER BY id LIMIT ${request.limit})
            RETURNING *`
          const events = (yield* Schema.decodeUnknown(Schema.Array(Row))(taken).pipe(
            Effect.catchTag("ParseError", Rows.corrupt("mcp_events"))
          )).map(fromRow).sort((a, b) => a.id - b.id)
          const kept = request.cut === undefined
            ? events.length
            : Math.max(0, Math.min(events.length, request.cut(events)))
          const rest = events.slice(kept).map((e) => e.id)
          if (rest.length > 0) {
            yield* sql`UPDATE mcp_events SET claim_token = NULL, claim_until = NULL
              WHERE claim_token = ${request.token} AND ${sql.in("id", rest)}`
          }
          return events.slice(0, kept)
        }).pipe(sql.withTransaction, Rows.storage("claim pending MCP events")),
      renew: (token, leaseMillis) =>
        Effect.flatMap(
          Clock.currentTimeMillis,
          (now) =>
            sql<{ id: number }>`UPDATE mcp_events SET claim_until = ${now + leaseMillis}
            WHERE claim_token = ${token} AND status = 'pending' RETURNING id`
        ).pipe(
          Effect.map((rows) => rows.length),
          Rows.storage("renew a claim on MCP events")
        ),
      complete: (token) =>
        Effect.flatMap(nowIso, (at) =>
          sql<{ id: number }>`UPDATE mcp_events
            SET status = 'processed', processed_at = ${at}, claim_token = NULL, claim_until = NULL
            WHERE claim_token = ${token} AND status = 'pending' RETURNING id`).pipe(
            Effect.map((rows) => rows.map((r) => r.id).sort((a, b) => a - b)),
            Rows.storage("mark claimed MCP events processed")
          ),
      release: (token) =>
        sql`UPDATE mcp_events SET claim_token = NULL, claim_until = NULL
          WHERE claim_token = ${token} AND status = 'pending'`.pipe(
          Effect.asVoid,
          Rows.storage("release a claim on MCP events")
        ),
      pendingCount: sql<{ n: number }>`SELECT COUNT(*) AS n FROM mcp_events WHERE status = 'pending'`.pipe(
        Effect.map((rows) => rows[0]?.n ?? 0),
        Rows.storage("count the pending MCP events")
      )
    }
  })
)
