/**
 * Migration 0002_mcp_status: What the running host records: `mcp_server_status` and `host_heartbeat` (StatusRepo.ts).
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE mcp_server_status (
    name       TEXT PRIMARY KEY NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('starting', 'connected', 'failed', 'disabled')),
    error      TEXT,
    tool_count INTEGER,
    pid        INTEGER,
    since      TEXT NOT NULL
  )`
  yield* sql`CREATE TABLE host_heartbeat (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    pid        INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    beat_at    TEXT NOT NULL
  )`
})
