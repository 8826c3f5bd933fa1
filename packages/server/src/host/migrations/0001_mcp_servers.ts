/**
 * Migration 0001_mcp_servers: The server registry, `mcp_servers` (McpServerRepo.ts).
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE mcp_servers (
    name          TEXT PRIMARY KEY NOT NULL,
    transport     TEXT NOT NULL CHECK (transport IN ('stdio', 'http')),
    command       TEXT,
    args          TEXT NOT NULL DEFAULT '[]',
    env           TEXT NOT NULL DEFAULT '{}',
    url           TEXT,
    api_key       TEXT,
    description   TEXT,
    friendly_name TEXT,
    enabled       INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    CHECK ((transport = 'stdio' AND command IS NOT NULL) OR (transport = 'http' AND url IS NOT NULL))
  )`
})
