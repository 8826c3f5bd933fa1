/**
 * The approval rules (docs/inbox.md, *Approvals*): `approval_rules` rows, each a tool pattern and
 * a decision, `allow`, `ask` or `deny`, and the pure rule that picks the one deciding a call.
 *
 * A pattern is an exact tool name (`mcp__gcal__delete_event`, `delete_mcp`), a literal prefix
 * followed by one `*` at the end (`mcp__gcal__*`), or `*` alone (the empty prefix). Of the rules
 * matching a tool, the **most specific** decides: an exact name beats every glob; among globs, the
 * longest literal prefix wins, so `*` (prefix length 0) is the last resort. Two different patterns
 * can never tie (equal prefixes mean the same pattern, and a pattern is the table's key). When no
 * rule matches, the tool's annotations decide: `delete_mcp` and `register_mcp` ask whatever their
 * hints; `readOnlyHint: true` allows; anything else asks. Annotations are the server's hints
 * (untrusted): a rule always overrides them.
 *
 * @since 0.1.0
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as SqlSchema from "@effect/sql/SqlSchema"
import Sqlite from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { CorruptRow, DatabaseError } from "../host/HostError.js"
import * as Rows from "../host/Rows.js"
import { nowIso } from "../host/Time.js"

/** What a rule (or the default) says about a call. */
export const Decision = Schema.Literal("allow", "ask", "deny")
export type Decision = typeof Decision.Type

/** The built-in tools that ask when no rule matches, whatever their annotations. */
export const ALWAYS_ASK: ReadonlySet<string> = new Set(["delete_mcp", "register_mcp"])

const PATTERN = /^(?:\*|[^\s*]+\*?)$/

/** A rule's pattern: an exact tool name, `prefix*`, or `*` (no whitespace; `*` only at the end). */
export const Pattern = Schema.String.pipe(
  Schema.filter((s) => PATTERN.test(s), {
    message: () =>
      "a pattern is an exact tool name (mcp__server__tool, delete_mcp), a prefix ending in * (mcp__server__*), " +
      "or * alone; no spaces, and * only at the end"
  })
)

/** An `approval_rules` row. */
export class Rule extends Schema.Class<Rule>("@skald/server/ApprovalRule")({
  pattern: Schema.String,
  decision: Decision,
  createdAt: Schema.String
}) {}

const Row = Schema.Struct({ pattern: Schema.String, decision: Decision, created_at: Schema.String })

/** The pattern cannot be a rule's. */
export class InvalidApprovalPattern extends Schema.TaggedError<InvalidApprovalPattern>(
  "@skald/server/InvalidApprovalPattern"
)("InvalidApprovalPattern", { pattern: Schema.String }) {
  override get message(): string {
    return `${JSON.stringify(this.pattern)} is not an approval rule pattern: use an exact tool name ` +
      "(mcp__server__tool, delete_mcp), a prefix ending in * (mcp__server__*), or * alone; " +
      "no spaces, and * only at the end"
  }
}

/** Whether `pattern` matches the tool `name`. */
export const matches = (pattern: string, name: string): boolean =>
  pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : pattern === name

/**
 * How specific a pattern is: an exact name ranks above every glob (`Infinity`); a glob ranks by
 * its literal prefix's length (`*` is 0).
 */
export const specificity = (pattern: string): number => pattern.endsWith("*") ? pattern.length - 1 : Infinity

/** The tool a call names, as the gate sees it. */
export interface Subject {
  /** The qualified name (`mcp__<server>__<tool>`) or a built-in's. */
  readonly name: string
  /** The tool's MCP annotations (hints), if it has any. */
  readonly annotations?: { readonly readOnlyHint?: boolean | undefined } | undefined
}

/** What decides a call, and why (the reason is shown to the person asked). */
export interface Verdict {
  readonly decision: Decision
  /** The deciding rule's pattern; absent when the default decided. */
  readonly rule?: string | undefined
  readonly reason: string
}

/** The default of a tool no rule matches: from its name and annotations. */
export const byDefault = (subject: Subject): Verdict =>
  ALWAYS_ASK.has(subject.name)
    ? { decision: "ask", reason: `${subject.name} always asks unless a rule decides it` }
    : subject.annotations?.readOnlyHint === true
    ? { decision: "allow", reason: "marked read-only" }
    : { decision: "ask", reason: "not marked read-only" }

/** The most specific rule matching the tool, if any (pure). */
export const mostSpecific = (rules: Iterable<Pick<Rule, "pattern" | "decision">>, name: string) => {
  let best: Pick<Rule, "pattern" | "decision"> | undefined = undefined
  for (const rule of rules) {
    if (!matches(rule.pattern, name)) continue
    if (best === undefined || specificity(rule.pattern) > specificity(best.pattern)) best = rule
  }
  return best
}

/** What decides a call: the most specific matching rule, else the default (pure). */
export const decide = (rules: Iterable<Pick<Rule, "pattern" | "decision">>, subject: Subject): Verdict => {
  const rule = mostSpecific(rules, subject.name)
  return rule === undefined
    ? byDefault(subject)
    : { decision: rule.decision, rule: rule.pattern, reason: `the rule ${rule.pattern} says ${rule.decision}` }
}

/**
 * The rules `verdict` keeps for a connection, with the `data_version` they were read at;
 * `generation` counts the writes through this service, so a read that a write overtook is not kept.
 */
interface Kept {
  rules: { readonly version: number; readonly rules: ReadonlyArray<Rule> } | undefined
  generation: number
}
const keptByConnection = new WeakMap<SqlClient.SqlClient, Kept>()

/**
 * The gate's own read-only connection to the database file: its `data_version` moves on every
 * other connection's commit, this process's included, and it reads the rules with two prepared
 * statements of the driver, without @effect/sql's work per statement (a span, the statement's
 * compilation, the connection's semaphore and statement cache: 0.1–0.15 ms of an agent round,
 * against 3 µs for the PRAGMA here; docs/performance.md).
 */
interface Reader {
  readonly version: () => number
  readonly rows: () => ReadonlyArray<unknown>
  readonly close: () => void
}

const openReader = (filename: string): Reader => {
  const db = new Sqlite(filename, { readonly: true, fileMustExist: true })
  try {
    const version = db.prepare<[], number>("PRAGMA data_version").pluck()
    const rows = db.prepare<[], unknown>("SELECT pattern, decision, created_at FROM approval_rules ORDER BY pattern")
    return { version: () => version.get()!, rows: () => rows.all(), close: () => db.close() }
  } catch (error) {
    db.close()
    throw error
  }
}

/** The database file of the SQLite client, if it is one (not an in-memory database). */
const fileOf = (client: Option.Option<SqliteClient.SqliteClient>): string | undefined => {
  if (Option.isNone(client)) return undefined
  const filename = client.value.config.filename
  return filename === "" || filename === ":memory:" || filename.startsWith("file:") ? undefined : filename
}

const decodeRows = Schema.decodeUnknown(Schema.Array(Row))

/**
 * The `approval_rules` repository. The gate's reads (`verdict`) use the rules kept in memory while
 * the database has not changed under them, which SQLite's `PRAGMA data_version` tells (read
 * first: one statement instead of reading and decoding the table per call). On a database file
 * the gate has a read-only connection of its own (`Reader`, opened at the first verdict): every
 * commit of another connection moves its version — `skald approvals` in another process, and this
 * process's own writes — and it reads the rules again then. On an in-memory database (no second
 * connection can see it) the version is the client's connection's: writes through this service
 * (any instance of it on the connection) drop the kept rules, and a write to `approval_rules` on
 * that connection that does not go through this service is not seen until another connection
 * commits. `list` always reads the table through the client.
 */
export class ApprovalRules extends Effect.Service<ApprovalRules>()("@skald/server/ApprovalRules", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const file = fileOf(yield* Effect.serviceOption(SqliteClient.SqliteClient))
    const all = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Row,
      execute: () => sql`SELECT pattern, decision, created_at FROM approval_rules ORDER BY pattern`
    })

    const rulesOf = (rows: ReadonlyArray<typeof Row.Type>) =>
      rows.map((r) => new Rule({ pattern: r.pattern, decision: r.decision, createdAt: r.created_at }))
    /** Every rule, by pattern. */
    const list: Effect.Effect<ReadonlyArray<Rule>, DatabaseError | CorruptRow> = all(undefined).pipe(
      Effect.catchTag("ParseError", Rows.corrupt("approval_rules")),
      Effect.map(rulesOf),
      Rows.storage("read the approval rules")
    )

    // Kept per connection (`data_version` is the connection's), so that every instance of this
    // service on the connection sees the others' writes.
    const state: Kept = keptByConnection.get(sql) ?? { rules: undefined, generation: 0 }
    keptByConnection.set(sql, state)
    const dropKept = Effect.sync(() => {
      state.rules = undefined
      state.generation++
    })
    const dataVersion = sql<{ data_version: number }>`PRAGMA data_version`.pipe(
      Effect.map((rows) => rows[0]?.data_version ?? -1),
      Rows.storage("read the approval rules")
    )
    const throughSql: Effect.Effect<ReadonlyArray<Rule>, DatabaseError | CorruptRow> = Effect.gen(function*() {
      const version = yield* dataVersion
      if (state.rules !== undefined && state.rules.version === version) return state.rules.rules
      const at = state.generation
      const rules = yield* list
      if (at === state.generation) state.rules = { version, rules }
      return rules
    })

    // With a database file: the reader's (opened at the first verdict, closed with this service).
    // Its version moves on every commit, so a write through this service needs no `dropKept`.
    let reader: Reader | undefined
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        reader?.close()
        reader = undefined
      })
    )
    let read: { readonly version: number; readonly rules: ReadonlyArray<Rule> } | undefined
    const failed = (cause: unknown) =>
      Effect.fail(Rows.databaseError("read the approval rules")(new SqlError({ cause, message: String(cause) })))
    const throughReader = Effect.suspend((): Effect.Effect<ReadonlyArray<Rule>, DatabaseError | CorruptRow> => {
      let version: number
      let rows: ReadonlyArray<unknown>
      try {
        reader ??= openReader(file!)
        version = reader.version()
        if (read !== undefined && read.version === version) return Effect.succeed(read.rules)
        rows = reader.rows()
      } catch (cause) {
        return failed(cause)
      }
      return decodeRows(rows).pipe(
        Effect.catchTag("ParseError", Rows.corrupt("approval_rules")),
        Effect.map((decoded) => {
          const rules = rulesOf(decoded)
          read = { version, rules }
          return rules
        })
      )
    })
    const current = file === undefined ? throughSql : throughReader

    /** Sets the decision of `pattern` (a new rule, or the existing one changed). */
    const set = Effect.fn("ApprovalRules.set")(function*(pattern: string, decision: Decision) {
      if (!PATTERN.test(pattern)) return yield* new InvalidApprovalPattern({ pattern })
      const at = yield* nowIso
      yield* sql`INSERT INTO approval_rules (pattern, decision, created_at) VALUES (${pattern}, ${decision}, ${at})
        ON CONFLICT (pattern) DO UPDATE SET decision = excluded.decision, created_at = excluded.created_at`.pipe(
        Rows.storage("store the approval rule"),
        Effect.ensuring(dropKept)
      )
    })

    /** Removes the rule of `pattern`; false if there was none. */
    const remove = Effect.fn("ApprovalRules.remove")(function*(pattern: string) {
      const rows = yield* sql`DELETE FROM approval_rules WHERE pattern = ${pattern} RETURNING pattern`.pipe(
        Rows.storage("remove the approval rule"),
        Effect.ensuring(dropKept)
      )
      return rows.length > 0
    })

    /** What decides a call to `subject` now. */
    const verdict = (subject: Subject): Effect.Effect<Verdict, DatabaseError | CorruptRow> =>
      Effect.map(current, (rules) => decide(rules, subject))

    return { list, set, remove, verdict } as const
  })
}) {}
