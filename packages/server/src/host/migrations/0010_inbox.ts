/**
 * Migration 0010_inbox: the inbox's outcome log, `inbox_items` (inbox/InboxLog.ts): one row per
 * item that ended — its kind, where it came from, when it was posted, its deadline, when and how it
 * ended. Never an answer, an elicited value or an approval's arguments (those stay in
 * `chat_llm_tools`): the row says only that an item was answered and how.
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE inbox_items (
    id          TEXT PRIMARY KEY NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('approval', 'elicitation', 'notification')),
    session_id  TEXT,
    server      TEXT,
    tool        TEXT,
    call_id     TEXT,
    created_at  TEXT NOT NULL,
    deadline    TEXT,
    resolved_at TEXT NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('approved', 'denied', 'accepted', 'declined', 'cancelled',
                                                 'expired', 'withdrawn', 'dismissed'))
  )`
  yield* sql`CREATE INDEX inbox_items_session ON inbox_items (session_id)`
})
