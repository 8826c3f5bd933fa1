/**
 * Migration 0006_chat: The agent's sessions and their history: `chat_sessions`, `chat_messages`,
 * `chat_llm_tools` (agent/ChatStore.ts).
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE chat_sessions (
    id         TEXT PRIMARY KEY NOT NULL,
    agent      TEXT NOT NULL,
    title      TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`
  // One row per message, in `seq` order within its session. An assistant message's tool calls
  // (and their results) are its chat_llm_tools rows; replay rebuilds the tool message from them.
  yield* sql`CREATE TABLE chat_messages (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session      TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    text         TEXT NOT NULL DEFAULT '',
    tool_call_id TEXT,
    created_at   TEXT NOT NULL,
    UNIQUE (session, seq)
  )`
  yield* sql`CREATE TABLE chat_llm_tools (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id     TEXT NOT NULL,
    session     TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    message     INTEGER NOT NULL REFERENCES chat_messages (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    tool_name   TEXT NOT NULL,
    arguments   TEXT NOT NULL,
    result      TEXT,
    result_type TEXT NOT NULL DEFAULT 'string' CHECK (result_type IN ('string', 'json')),
    status      TEXT NOT NULL CHECK (status IN ('running', 'done', 'error', 'cancelled', 'denied')),
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    UNIQUE (message, position),
    UNIQUE (message, call_id)
  )`
  yield* sql`CREATE INDEX chat_llm_tools_session ON chat_llm_tools (session, status)`
})
