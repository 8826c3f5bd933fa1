/**
 * Migration 0005_status_process: A status's process group, start time and next retry; `host_requests` (StatusRepo.ts).
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // A stdio server's process group and its leader's start time (/proc/<pid>/stat field 22, in
  // clock ticks since boot): what lets the next host find the group a killed host left behind.
  yield* sql`ALTER TABLE mcp_server_status ADD COLUMN pgid INTEGER`
  yield* sql`ALTER TABLE mcp_server_status ADD COLUMN start_time INTEGER`
  // When a failed server is tried again (ISO-8601).
  yield* sql`ALTER TABLE mcp_server_status ADD COLUMN next_retry_at TEXT`
  // What other processes ask of the running host: restart a server, retry after a secret changed.
  yield* sql`CREATE TABLE host_requests (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    kind         TEXT NOT NULL CHECK (kind IN ('restart', 'secret')),
    name         TEXT NOT NULL,
    requested_at TEXT NOT NULL
  )`
})
