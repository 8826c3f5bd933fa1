/**
 * Migration 0009_mcp_grants: the tool groups (MCP server names or `config`) an agent activated
 * (agent/Grants.ts). A root agent's grants are its session's, `session_mcp_grants`; a sub-agent's
 * are its stack frame's, `stack_mcp_grants`, deleted when the frame ends. A grant names a group,
 * not a server row: a disabled or deleted server's grant is kept (and offers nothing).
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE session_mcp_grants (
    session    TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    PRIMARY KEY (session, name)
  )`
  yield* sql`CREATE TABLE stack_mcp_grants (
    stack      TEXT NOT NULL,
    session    TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    PRIMARY KEY (stack, name)
  )`
  yield* sql`CREATE INDEX stack_mcp_grants_session ON stack_mcp_grants (session)`
})
