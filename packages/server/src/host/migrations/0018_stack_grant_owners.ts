/**
 * Migration 0018_stack_grant_owners: each stack frame's tool grants (`stack_mcp_grants`) name the
 * process running the frame, by pid and start time, so that a frame cut short by a killed process
 * (no finalizer ran) has its grants deleted by the next process that runs frames
 * (agent/Grants.ts). The rows already there have no owner: frames are never resumed, and none runs
 * across an upgrade, so they are such leftovers and are deleted here.
 *
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE stack_mcp_grants ADD COLUMN owner_pid INTEGER`
  yield* sql`ALTER TABLE stack_mcp_grants ADD COLUMN owner_start_time INTEGER`
  yield* sql`DELETE FROM stack_mcp_grants`
})
