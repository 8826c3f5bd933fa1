/**
 * The inbox's outcome log, `inbox_items` (migration 0010): one row per item that ended, written
 * once, when it ends. A row holds the item's kind, origin, times and outcome — never an answer,
 * an elicited value, a message or an approval's arguments.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { InboxItem } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { DatabaseError } from "../host/HostError.js"
import * as Rows from "../host/Rows.js"
import { isoOf } from "../host/Time.js"

/** One ended item, as stored. */
export const Row = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literal("approval", "elicitation", "notification"),
  session_id: Schema.NullOr(Schema.String),
  server: Schema.NullOr(Schema.String),
  tool: Schema.NullOr(Schema.String),
  call_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  deadline: Schema.NullOr(Schema.String),
  resolved_at: Schema.String,
  outcome: InboxItem.Outcome
})
export type Row = typeof Row.Type

const kindOf = (item: InboxItem.InboxItem): Row["kind"] =>
  item._tag === "Approval" ? "approval" : item._tag === "Elicitation" ? "elicitation" : "notification"

/** The row of `item` ended with `outcome` at `resolvedAt` (epoch ms). */
export const rowOf = (item: InboxItem.InboxItem, outcome: InboxItem.Outcome, resolvedAt: number): Row => ({
  id: item.id,
  kind: kindOf(item),
  session_id: item.origin.sessionId ?? null,
  server: item.origin.server ?? null,
  tool: item.origin.tool ?? null,
  call_id: item.origin.callId ?? null,
  created_at: isoOf(item.createdAt),
  deadline: item.deadline === undefined ? null : isoOf(item.deadline),
  resolved_at: isoOf(resolvedAt),
  outcome
})

/** The outcome log over SQL. */
export class InboxLog extends Effect.Service<InboxLog>()("@skald/server/InboxLog", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const findAll = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Row,
      execute: () => sql`SELECT * FROM inbox_items ORDER BY created_at, id`
    })
    return {
      /** Writes the row of an ended item. */
      record: (row: Row): Effect.Effect<void, DatabaseError> =>
        sql`INSERT INTO inbox_items ${sql.insert(row)}`.pipe(Effect.asVoid, Rows.storage("record an inbox outcome")),
      /** Every ended item, oldest first. */
      list: findAll(undefined).pipe(
        Effect.catchTag("ParseError", Rows.corrupt("inbox_items")),
        Rows.storage("read the inbox outcome log")
      )
    } as const
  })
}) {}
