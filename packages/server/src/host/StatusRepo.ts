/**
 * What the running host says about its servers (`mcp_server_status`) and that it is alive
 * (`host_heartbeat`). Written only by `skald serve`'s manager; read by anyone (`skald mcp list`).
 * And what other processes ask of the running host (`host_requests`: restart a server, retry the
 * servers that use a secret that changed), written by anyone, taken by the manager. And the process
 * groups a guest manager started (`guest_process_groups`), for the next manager to stop when
 * their guest was killed.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { McpServerEntry } from "@skald/domain"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { CorruptRow, DatabaseError } from "./HostError.js"
import * as Rows from "./Rows.js"

/** The states the host records (`disabled` included; "host not running" is derived, never stored). */
export type RecordedState = "starting" | "connected" | "failed" | "disabled"

/** One server's recorded status. */
export interface Status {
  readonly name: string
  readonly state: RecordedState
  readonly error?: string | undefined
  /** The kind of error `error` is, with its plain fields (redacted). */
  readonly errorCause?: McpServerEntry.ErrorCause | undefined
  readonly toolCount?: number | undefined
  readonly pid?: number | undefined
  /** A stdio server's process group id… */
  readonly pgid?: number | undefined
  /** …and its leader's start time, in clock ticks since boot (`/proc/<pid>/stat` field 22). */
  readonly startTime?: number | undefined
  /** When a failed server is tried again (ISO-8601). */
  readonly nextRetryAt?: string | undefined
  readonly since: string
}

/** What another process asks of the running host. */
export interface Request {
  readonly id: number
  /** `restart`: restart server `name`; `secret`: secret `name` changed, retry the failed servers using it. */
  readonly kind: "restart" | "secret"
  readonly name: string
}

/** A stdio server's process group started by a guest manager, and that guest. */
export interface GuestGroup {
  readonly name: string
  readonly pgid: number
  /** The group leader's start time (clock ticks since boot). */
  readonly startTime: number
  readonly ownerPid: number
  /** The guest's own start time: told apart from a later process given its pid. */
  readonly ownerStartTime: number
}

/** The host's heartbeat. */
export interface Heartbeat {
  readonly pid: number
  readonly startedAt: string
  readonly beatAt: string
}

/**
 * Status and heartbeat storage. A row that cannot be read is a `CorruptRow`, a statement that
 * fails a `DatabaseError` (HostError.ts).
 */
export interface Service {
  readonly set: (status: Status) => Effect.Effect<void, DatabaseError>
  readonly remove: (name: string) => Effect.Effect<void, DatabaseError>
  readonly all: Effect.Effect<ReadonlyArray<Status>, DatabaseError | CorruptRow>
  /** Forgets every status (a host starting or stopping). */
  readonly clear: Effect.Effect<void, DatabaseError>
  readonly beat: (heartbeat: Heartbeat) => Effect.Effect<void, DatabaseError>
  readonly heartbeat: Effect.Effect<Option.Option<Heartbeat>, DatabaseError | CorruptRow>
  /** Removes the heartbeat of this pid (a host stopping). */
  readonly stopBeating: (pid: number) => Effect.Effect<void, DatabaseError>
  /** Asks the running host for something (any process). */
  readonly request: (kind: Request["kind"], name: string, at: string) => Effect.Effect<void, DatabaseError>
  /** Takes (returns and deletes) the pending requests, oldest first. */
  readonly takeRequests: Effect.Effect<ReadonlyArray<Request>, DatabaseError | CorruptRow>
  /** Records a group a guest started. */
  readonly guestStarted: (group: GuestGroup) => Effect.Effect<void, DatabaseError>
  /** Forgets a group (its guest stopped it, or a manager stopped it for a guest that was gone). */
  readonly guestStopped: (pgid: number, startTime: number) => Effect.Effect<void, DatabaseError>
  /** Every recorded guest group. */
  readonly guestGroups: Effect.Effect<ReadonlyArray<GuestGroup>, DatabaseError | CorruptRow>
}

/** Status and heartbeat storage. */
export class StatusRepo extends Context.Tag("@skald/server/StatusRepo")<StatusRepo, Service>() {}

/** A `mcp_server_status` row. */
const StatusRow = Schema.Struct({
  name: Schema.String,
  status: Schema.Literal("starting", "connected", "failed", "disabled"),
  error: Schema.NullOr(Schema.String),
  error_cause: Schema.NullOr(Schema.parseJson(McpServerEntry.ErrorCause)),
  tool_count: Schema.NullOr(Schema.Number),
  pid: Schema.NullOr(Schema.Number),
  pgid: Schema.NullOr(Schema.Number),
  start_time: Schema.NullOr(Schema.Number),
  next_retry_at: Schema.NullOr(Schema.String),
  since: Schema.String
})

/** The `host_heartbeat` row. */
const HeartbeatRow = Schema.Struct({ pid: Schema.Number, started_at: Schema.String, beat_at: Schema.String })

/** A `host_requests` row. */
const RequestRow = Schema.Struct({ id: Schema.Number, kind: Schema.Literal("restart", "secret"), name: Schema.String })

/** A `guest_process_groups` row. */
const GuestRow = Schema.Struct({
  name: Schema.String,
  pgid: Schema.Number,
  start_time: Schema.Number,
  owner_pid: Schema.Number,
  owner_start_time: Schema.Number
})

/** The SQL implementation. */
export const layer: Layer.Layer<StatusRepo, never, SqlClient.SqlClient> = Layer.effect(
  StatusRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return {
      set: (s) =>
        sql`INSERT INTO mcp_server_status
          (name, status, error, error_cause, tool_count, pid, pgid, start_time, next_retry_at, since)
          VALUES (${s.name}, ${s.state}, ${s.error ?? null},
            ${s.errorCause === undefined ? null : JSON.stringify(s.errorCause)}, ${s.toolCount ?? null},
            ${s.pid ?? null}, ${s.pgid ?? null}, ${s.startTime ?? null}, ${s.nextRetryAt ?? null}, ${s.since})
          ON CONFLICT (name) DO UPDATE SET status = excluded.status, error = excluded.error,
            error_cause = excluded.error_cause,
            tool_count = excluded.tool_count, pid = excluded.pid, pgid = excluded.pgid,
            start_time = excluded.start_time, next_retry_at = excluded.next_retry_at, since = excluded.since`
          .pipe(Effect.asVoid, Rows.storage(`record the status of MCP server '${s.name}'`)),
      remove: (name) =>
        sql`DELETE FROM mcp_server_status WHERE name = ${name}`.pipe(
          Effect.asVoid,
          Rows.storage(`remove the status of MCP server '${name}'`)
        ),
      all: SqlSchema.findAll({
        Request: Schema.Void,
        Result: StatusRow,
        execute: () =>
          sql`SELECT name, status, error, error_cause, tool_count, pid, pgid, start_time, next_retry_at, since
            FROM mcp_server_status ORDER BY name`
      })(undefined).pipe(
        Effect.catchTag("ParseError", Rows.corrupt("mcp_server_status")),
        Effect.map((rows) =>
          rows.map((r): Status => ({
            name: r.name,
            state: r.status,
            since: r.since,
            ...(r.error === null ? {} : { error: r.error }),
            ...(r.error_cause === null ? {} : { errorCause: r.error_cause }),
            ...(r.tool_count === null ? {} : { toolCount: r.tool_count }),
            ...(r.pid === null ? {} : { pid: r.pid }),
            ...(r.pgid === null ? {} : { pgid: r.pgid }),
            ...(r.start_time === null ? {} : { startTime: r.start_time }),
            ...(r.next_retry_at === null ? {} : { nextRetryAt: r.next_retry_at })
          }))
        ),
        Rows.storage("read the servers' statuses")
      ),
      clear: sql`DELETE FROM mcp_server_status`.pipe(Effect.asVoid, Rows.storage("clear the servers' statuses")),
      beat: (h) =>
        sql`INSERT INTO host_heartbeat (id, pid, started_at, beat_at) VALUES (1, ${h.pid}, ${h.startedAt}, ${h.beatAt})
          ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, started_at = excluded.started_at, beat_at = excluded.beat_at`
          .pipe(Effect.asVoid, Rows.storage("record the host's heartbeat")),
      heartbeat: SqlSchema.findOne({
        Request: Schema.Void,
        Result: HeartbeatRow,
        execute: () => sql`SELECT pid, started_at, beat_at FROM host_heartbeat WHERE id = 1`
      })(undefined).pipe(
        Effect.catchTag("ParseError", Rows.corrupt("host_heartbeat", "1")),
        Effect.map(Option.map((r) => ({ pid: r.pid, startedAt: r.started_at, beatAt: r.beat_at }))),
        Rows.storage("read the host's heartbeat")
      ),
      stopBeating: (pid) =>
        sql`DELETE FROM host_heartbeat WHERE id = 1 AND pid = ${pid}`.pipe(
          Effect.asVoid,
          Rows.storage("remove the host's heartbeat")
        ),
      request: (kind, name, at) =>
        sql`INSERT INTO host_requests (kind, name, requested_at) VALUES (${kind}, ${name}, ${at})`.pipe(
          Effect.asVoid,
          Rows.storage(`ask the running host to ${kind === "restart" ? "restart" : "retry the users of"} '${name}'`)
        ),
      takeRequests: SqlSchema.findAll({
        Request: Schema.Void,
        Result: RequestRow,
        execute: () => sql`DELETE FROM host_requests RETURNING id, kind, name`
      })(undefined).pipe(
        Effect.catchTag("ParseError", Rows.corrupt("host_requests")),
        Effect.map((rows) => [...rows].sort((a, b) => a.id - b.id)),
        Rows.storage("take the requests to the running host")
      ),
      guestStarted: (g) =>
        sql`INSERT INTO guest_process_groups (pgid, start_time, name, owner_pid, owner_start_time)
          VALUES (${g.pgid}, ${g.startTime}, ${g.name}, ${g.ownerPid}, ${g.ownerStartTime})
          ON CONFLICT (pgid, start_time) DO UPDATE SET name = excluded.name, owner_pid = excluded.owner_pid,
            owner_start_time = excluded.owner_start_time`
          .pipe(Effect.asVoid, Rows.storage(`record the process group of MCP server '${g.name}'`)),
      guestStopped: (pgid, startTime) =>
        sql`DELETE FROM guest_process_groups WHERE pgid = ${pgid} AND start_time = ${startTime}`.pipe(
          Effect.asVoid,
          Rows.storage(`forget the process group ${pgid}`)
        ),
      guestGroups: SqlSchema.findAll({
        Request: Schema.Void,
        Result: GuestRow,
        execute: () =>
          sql`SELECT name, pgid, start_time, owner_pid, owner_start_time FROM guest_process_groups ORDER BY pgid`
      })(undefined).pipe(
        Effect.catchTag("ParseError", Rows.corrupt("guest_process_groups")),
        Effect.map((rows) =>
          rows.map((r): GuestGroup => ({
            name: r.name,
            pgid: r.pgid,
            startTime: r.start_time,
            ownerPid: r.owner_pid,
            ownerStartTime: r.owner_start_time
          }))
        ),
        Rows.storage("read the guests' process groups")
      )
    }
  })
)
