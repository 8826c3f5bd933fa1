/**
 * Migration 0016_chat_session_parent: a sub-agent's chat session (agent/tools/DispatchAgent.ts)
 * records the session that dispatched it in `chat_sessions.parent` (NULL for a session a person
 * started). Sessions are listed without their sub-sessions, a session is shown with them, and it
 * is deleted with them (agent/ChatStore.ts). Sessions from before this migration have no parent.
 *
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE chat_sessions ADD COLUMN parent TEXT`
  yield* sql`CREATE INDEX chat_sessions_parent ON chat_sessions (parent)`
})
