/**
 * What the repositories share to read rows through schemas (`SqlSchema` + a `Schema.Struct` per
 * table): a row that does not match is a `CorruptRow` naming the table, the row and the columns —
 * never the values (a row may hold secrets).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import { CorruptRow } from "./HostError.js"

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
