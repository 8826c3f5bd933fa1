/**
 * Migration 0017_guest_process_groups: the process groups of the stdio servers a guest manager
 * started (a one-off command's: `skald agent run`, `skald tic run`, …), with the guest's own pid
 * and start time. A guest killed outright (SIGKILL) runs no finalizer; the next manager to start
 * (host or guest) stops the groups whose guest is gone (host/McpManager.ts, host/Orphans.ts), as a
 * host does with a killed host's servers (`mcp_server_status`).
 *
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE guest_process_groups (
    pgid INTEGER NOT NULL,
    start_time INTEGER NOT NULL,
    name TEXT NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_start_time INTEGER NOT NULL,
    PRIMARY KEY (pgid, start_time)
  )`
})
