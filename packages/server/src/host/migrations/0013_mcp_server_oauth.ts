/**
 * Migration 0013_mcp_server_oauth: an HTTP server's OAuth client settings, `oauth` (JSON:
 * `ServerConfig.HttpOAuthConfig` — client id, the client secret as a `${NAME}` reference, scope,
 * grant; never a secret's value). Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE mcp_servers ADD COLUMN oauth TEXT`
})
