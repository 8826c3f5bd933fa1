/**
 * Migration 0008_status_cause: the kind of a failed status's error, `error_cause` (StatusRepo.ts).
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // JSON: the error's `_tag` and its plain fields, redacted (McpServerEntry.ErrorCause).
  yield* sql`ALTER TABLE mcp_server_status ADD COLUMN error_cause TEXT`
})
