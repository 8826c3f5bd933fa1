/**
 * What the repositories share at their boundary. Rows are read through schemas (`SqlSchema` + a
 * `Schema.Struct` per table): a row that does not match is a `CorruptRow` naming the table, the row
 * and the columns — never the values (a row may hold secrets). A statement that fails (`SqlError`)
 * is a `DatabaseError` saying what was being done: no `SqlError` leaves a repository.
 *
 * @since 0.1.0
 */
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Stream from "effect/Stream"
import { CorruptRow, DatabaseError } from "./HostError.js"

/** The columns (the first name in each issue's path) and the row index (a leading number) of a `ParseError`. */
const issues = (error: ParseResult.ParseError) => {
  const all = ParseResult.ArrayFormatter.formatErrorSync(error)
  const columns = [...new Set(all.map((i) => String(i.path.find((p) => typeof p === "string") ?? "?")))]
  const index = all.map((i) => i.path[0]).find((p): p is number => typeof p === "number")
  return { columns, index }
}

/**
 * Turns a `ParseError` of `table`'s rows into a `CorruptRow`. `key`: the row's key, or a function
 * from the failing row's index (in a list) to its key (looked up only on this error path).
 */
export const corrupt = <R = never>(
  table: string,
  key?: string | ((index: number) => Effect.Effect<string | undefined, never, R>)
) =>
(error: ParseResult.ParseError): Effect.Effect<never, CorruptRow, R> => {
  const { columns, index } = issues(error)
  const keyOf: Effect.Effect<string | undefined, never, R> = typeof key === "function"
    ? index === undefined ? Effect.succeed(undefined) : key(index)
    : Effect.succeed(key)
  return Effect.flatMap(keyOf, (k) => new CorruptRow({ table, columns, ...(k === undefined ? {} : { key: k }) }))
}

/** What SQLite said, and its result code: from the driver's error a `SqlError` wraps as its cause. */
const sqliteCause = (error: SqlError): { readonly reason: string; readonly code?: string } => {
  const cause = error.cause
  if (typeof cause === "object" && cause !== null) {
    const code = (cause as { code?: unknown }).code
    const message = (cause as { message?: unknown }).message
    const reason = typeof message === "string" && message.length > 0 ? message : error.message
    return typeof code === "string" ? { reason, code } : { reason }
  }
  return { reason: error.message.length > 0 ? error.message : "the statement failed" }
}

/** The `DatabaseError` of a failed statement while doing `operation` ("read the server registry"). */
export const databaseError = (operation: string) => (error: SqlError): DatabaseError =>
  new DatabaseError({ operation, ...sqliteCause(error) })

/** Turns the `SqlError` of `effect` into a `DatabaseError` of `operation`: the repositories' boundary. */
export const storage = (operation: string) =>
<A, E, R>(
  effect: Effect.Effect<A, E | SqlError, R>
): Effect.Effect<A, Exclude<E, SqlError> | DatabaseError, R> =>
  Effect.catchIf(
    effect,
    (e): e is SqlError => isSqlError(e),
    (e) => Effect.fail(databaseError(operation)(e))
  ) as Effect.Effect<A, Exclude<E, SqlError> | DatabaseError, R>

/** The same for a stream. */
export const storageStream = (operation: string) =>
<A, E, R>(
  stream: Stream.Stream<A, E | SqlError, R>
): Stream.Stream<A, Exclude<E, SqlError> | DatabaseError, R> =>
  Stream.catchAll(
    stream,
    (e) => Stream.fail(isSqlError(e) ? databaseError(operation)(e) : e)
  ) as Stream.Stream<A, Exclude<E, SqlError> | DatabaseError, R>

const isSqlError = (e: unknown): e is SqlError => e instanceof SqlError
