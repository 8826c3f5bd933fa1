/**
 * Migration 0003_mcp_events: Push events, `mcp_events` (EventRepo.ts).
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE mcp_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    server       TEXT NOT NULL,
    method       TEXT NOT NULL,
    params       TEXT,
    received_at  TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'processed')),
    processed_at TEXT
  )`
  yield* sql`CREATE INDEX mcp_events_pending ON mcp_events (status, id)`
})
