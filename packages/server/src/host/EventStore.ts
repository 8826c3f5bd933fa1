/**
 * Push events (DESIGN §2: every notification outside `notifications/`, e.g. `event/new_email`)
 * from every server, kept in `mcp_events` until the TIC agent processes them.
 *
 * `EventRepo` is the table; `EventRecorder` is the path into it: a bounded queue (a server that
 * bursts faster than the disk waits — backpressure, nothing dropped) drained by one fiber in
 * batched, transactional inserts. A burst of 10,000 events yields 10,000 rows, in order.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { JsonRpc, McpEvents } from "@skald/mcp"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type { CorruptRow } from "./HostError.js"
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

/** The `mcp_events` table. */
export interface Service {
  /** Inserts the events in one transaction, in order. */
  readonly insertAll: (events: ReadonlyArray<NewEvent>) => Effect.Effect<void, SqlError>
  /** Events in id order: all, or only the pending ones; at most `limit` (default: no limit). */
  readonly list: (
    options?: { readonly pending?: boolean; readonly limit?: number }
  ) => Effect.Effect<ReadonlyArray<StoredEvent>, SqlError | CorruptRow>
  /** Marks events processed (now); returns how many were pending. */
  readonly markProcessed: (ids: ReadonlyArray<number>) => Effect.Effect<number, SqlError>
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
        ),
      list: (options = {}) => {
        const where = options.pending === true ? sql`WHERE status = 'pending'` : sql``
        const limit = options.limit === undefined ? sql`` : sql`LIMIT ${options.limit}`
        return SqlSchema.findAll({
          Request: Schema.Void,
          Result: Row,
          execute: () => sql`SELECT * FROM mcp_events ${where} ORDER BY id ${limit}`
        })(undefined).pipe(
          Effect.catchTag("ParseError", Rows.corrupt("mcp_events")),
          Effect.map((rows) => rows.map(fromRow))
        )
      },
      markProcessed: (ids) =>
        ids.length === 0 ? Effect.succeed(0) : Effect.flatMap(nowIso, (at) =>
          sql<{ id: number }>`UPDATE mcp_events
          SET status = 'processed', processed_at = ${at}
          WHERE status = 'pending' AND ${sql.in("id", ids)} RETURNING id`.pipe(Effect.map((rows) => rows.length)))
    }
  })
)

/** How many events may wait for the writer before servers are made to wait. */
export const QUEUE_CAPACITY = 10_000

/** The recorder: a `McpEvents.Sink` for the connections, persisting every event. */
export class EventRecorder extends Effect.Service<EventRecorder>()("@skald/server/EventRecorder", {
  scoped: Effect.gen(function*() {
    const repo = yield* EventRepo
    const queue = yield* Queue.bounded<NewEvent>(QUEUE_CAPACITY)
    // A failed insert is retried (the database may be busy with another process), never dropped.
    const insert = (batch: ReadonlyArray<NewEvent>) =>
      repo.insertAll(batch).pipe(
        Effect.tapError((error) =>
          Effect.logWarning(`could not store ${batch.length} MCP events, retrying: ${error.message}`)
        ),
        Effect.retry(Schedule.exponential("100 millis").pipe(Schedule.either(Schedule.spaced("5 seconds")))),
        Effect.orDie
      )
    yield* Effect.forkScoped(
      // A batch once taken is stored even if the host is stopping (uninterruptible insert).
      Effect.forever(
        Effect.flatMap(Queue.takeBetween(queue, 1, 1000), (batch) => Effect.uninterruptible(insert(Array.from(batch))))
      )
    )
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(queue), (rest) => insert(Array.from(rest))).pipe(Effect.ignore)
    )

    const sink: McpEvents.Sink = {
      offer: (server: string, event: JsonRpc.Notification) =>
        Effect.flatMap(
          nowIso,
          (receivedAt) => Queue.offer(queue, { server, method: event.method, params: event.params, receivedAt })
        ).pipe(Effect.asVoid)
    }
    return { sink } as const
  })
}) {}
