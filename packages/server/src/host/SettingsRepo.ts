/**
 * The home's settings, `settings`: string values by key (ModelSettings.ts keeps the model's under
 * `llm.`). Never a secret's value: secrets go to the secret store and a setting holds `${NAME}`.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { CorruptRow } from "./HostError.js"
import * as Rows from "./Rows.js"
import { nowIso } from "./Time.js"

/** The settings. A row that cannot be read is a `CorruptRow` (HostError.ts), not a defect. */
export interface Service {
  /** The settings whose key starts with `prefix`, by key. */
  readonly list: (prefix: string) => Effect.Effect<ReadonlyMap<string, string>, SqlError | CorruptRow>
  /** Sets some keys and removes others (a `undefined` value), in one transaction. */
  readonly update: (changes: ReadonlyMap<string, string | undefined>) => Effect.Effect<void, SqlError>
}

/** The settings table. */
export class SettingsRepo extends Context.Tag("@skald/server/SettingsRepo")<SettingsRepo, Service>() {}

/** A `settings` row. */
const Row = Schema.Struct({ key: Schema.String, value: Schema.String })

/** The SQL implementation. */
export const layer: Layer.Layer<SettingsRepo, never, SqlClient.SqlClient> = Layer.effect(
  SettingsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const byPrefix = SqlSchema.findAll({
      Request: Schema.String,
      Result: Row,
      // `substr` rather than LIKE: a prefix holding `_` or `%` means itself.
      execute: (prefix) =>
        sql`SELECT key, value FROM settings WHERE substr(key, 1, ${prefix.length}) = ${prefix} ORDER BY key`
    })
    return {
      list: (prefix) =>
        byPrefix(prefix).pipe(
          Effect.catchTag("ParseError", Rows.corrupt("settings")),
          Effect.map((rows) => new Map(rows.map((r) => [r.key, r.value] as const)))
        ),
      update: (changes) =>
        Effect.flatMap(nowIso, (at) =>
          sql.withTransaction(Effect.forEach(changes, ([key, value]) =>
            value === undefined
              ? sql`DELETE FROM settings WHERE key = ${key}`
              : sql`INSERT INTO settings (key, value, updated_at) VALUES (${key}, ${value}, ${at})
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, {
            discard: true
          })))
    }
  })
)
