/**
 * Markers of one-time actions, `app_meta` (key → value): the first run's demo server
 * (FirstRun.ts) is the first. The interface speaks markers; `layer` is its SQL implementation.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { DatabaseError } from "./HostError.js"
import * as Rows from "./Rows.js"

/** The markers. */
export interface Service {
  /** The marker's value (when it was set, as the caller wrote it), if it is set. */
  readonly get: (key: string) => Effect.Effect<Option.Option<string>, DatabaseError>
  /**
   * Runs `action` unless the marker `key` is set, and sets it to `value`, in one transaction: the
   * action's database writes and the marker commit together or not at all. None when it was set.
   */
  readonly once: <A, E, R>(
    key: string,
    value: string,
    action: Effect.Effect<A, E, R>
  ) => Effect.Effect<Option.Option<A>, Exclude<E, SqlError> | DatabaseError, R>
}

/** The `app_meta` markers. */
export class AppMetaRepo extends Context.Tag("@skald/server/AppMetaRepo")<AppMetaRepo, Service>() {}

/** The SQL implementation. */
export const layer: Layer.Layer<AppMetaRepo, never, SqlClient.SqlClient> = Layer.effect(
  AppMetaRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ value: Schema.String }),
      execute: (key) => sql`SELECT value FROM app_meta WHERE key = ${key}`
    })
    const get = (key: string) =>
      find(key).pipe(
        Effect.map(Option.map((row) => row.value)),
        // The column is TEXT NOT NULL: a row that does not decode counts as a set marker.
        Effect.catchTag("ParseError", () => Effect.succeed(Option.some(""))),
        Rows.storage(`read the marker ${key}`)
      )
    return AppMetaRepo.of({
      get,
      once: (key, value, action) =>
        sql.withTransaction(Effect.gen(function*() {
          if (Option.isSome(yield* get(key))) return Option.none()
          yield* sql`INSERT INTO app_meta (key, value) VALUES (${key}, ${value})`
          return Option.some(yield* action)
        })).pipe(Rows.storage(`run the one-time action ${key}`))
    })
  })
)
