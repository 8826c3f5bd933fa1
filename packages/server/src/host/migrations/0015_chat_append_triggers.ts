/**
 * Migration 0015_chat_append_triggers: a chat message is appended with one statement
 * (agent/ChatStore.ts `append`). What followed each `INSERT INTO chat_messages` in a transaction
 * is now done by triggers, inside that statement (so it is still all or nothing):
 *
 * - `chat_messages_touch`: the session's `updated_at` becomes the message's `created_at`;
 * - `chat_messages_calls`: an assistant message's calls, given in the new column `new_calls` (a
 *   JSON array of `{ callId, name, arguments, result, resultType, status }`, `arguments` the JSON
 *   text as stored), become its `chat_llm_tools` rows in order (`position` = the index), started at
 *   the message's time and, unless `running`, finished then too; `new_calls` is then set back to
 *   NULL (it is only the statement's input, never read).
 *
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE chat_messages ADD COLUMN new_calls TEXT`
  yield* sql`CREATE TRIGGER chat_messages_touch AFTER INSERT ON chat_messages
  BEGIN
    UPDATE chat_sessions SET updated_at = NEW.created_at WHERE id = NEW.session;
  END`
  yield* sql`CREATE TRIGGER chat_messages_calls AFTER INSERT ON chat_messages
  WHEN NEW.new_calls IS NOT NULL
  BEGIN
    INSERT INTO chat_llm_tools
      (call_id, session, message, position, tool_name, arguments, result, result_type, status, started_at, finished_at)
    SELECT
      json_extract(c.value, '$.callId'), NEW.session, NEW.id, c.key, json_extract(c.value, '$.name'),
      json_extract(c.value, '$.arguments'), json_extract(c.value, '$.result'), json_extract(c.value, '$.resultType'),
      json_extract(c.value, '$.status'), NEW.created_at,
      CASE json_extract(c.value, '$.status') WHEN 'running' THEN NULL ELSE NEW.created_at END
    FROM json_each(NEW.new_calls) AS c
    ORDER BY c.key;
    UPDATE chat_messages SET new_calls = NULL WHERE id = NEW.id;
  END`
})
