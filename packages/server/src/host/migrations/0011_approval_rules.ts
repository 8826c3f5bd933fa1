/**
 * Migration 0011_approval_rules: the approval rules, `approval_rules` (inbox/ApprovalRules.ts):
 * one row per tool pattern — an exact tool name (`mcp__gcal__delete_event`, `delete_mcp`), a
 * literal prefix ending in `*` (`mcp__gcal__*`), or `*` — and its decision, `allow`, `ask` or
 * `deny`. The most specific pattern matching a call decides (docs/inbox.md, *Approvals*).
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE approval_rules (
    pattern    TEXT PRIMARY KEY NOT NULL,
    decision   TEXT NOT NULL CHECK (decision IN ('allow', 'ask', 'deny')),
    created_at TEXT NOT NULL
  )`
})
