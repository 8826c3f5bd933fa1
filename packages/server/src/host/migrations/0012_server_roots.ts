/**
 * Migration 0012_server_roots: the folders a registered server is offered as MCP roots
 * (`ServerConfig.roots`, `skald mcp add --root`), a JSON array of absolute paths; `[]`: none.
 * (0010 and 0011 are the inbox's and the approvals'.)
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE mcp_servers ADD COLUMN roots TEXT NOT NULL DEFAULT '[]'`
})
