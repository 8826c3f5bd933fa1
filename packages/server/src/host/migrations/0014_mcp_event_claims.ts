/**
 * Migration 0014_mcp_event_claims: the TIC agent's claims on pending events (EventRepo.ts
 * `claim`): which turn holds an event (`claim_token`) and until when (`claim_until`, epoch ms,
 * renewed while the turn runs). A claim whose time has passed — its host died — is free to take
 * again. `status` keeps its CHECK (`pending`/`processed`): a claimed event is still pending.
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE mcp_events ADD COLUMN claim_token TEXT`
  yield* sql`ALTER TABLE mcp_events ADD COLUMN claim_until INTEGER`
})
