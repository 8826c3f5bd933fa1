/**
 * Migration 0007_settings: The home's settings, `settings` (SettingsRepo.ts): one row per key, e.g.
 * the model settings `llm.provider`, `llm.base_url`, `llm.model`, `llm.api_key` (a `${NAME}`
 * reference, never a secret's value).
 * Shipped: never change what it does (add the next one).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE settings (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`
})
