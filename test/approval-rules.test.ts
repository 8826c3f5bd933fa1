/**
 * The approval rules: the decision of the most specific matching rule, checked against a reference
 * model (a property test over rule sets), the annotation defaults, and the repository over a real
 * SQLite file (migration 0011: the decision's CHECK, set/list/remove); the rules the gate keeps in
 * memory follow a change made by another connection on the same file and by another process (the
 * real `skald approvals set|rm`) on the next call.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as ApprovalRules from "@skald/server/inbox/ApprovalRules"
import { Context, Effect, FastCheck as fc, Layer } from "effect"
import { runSkald } from "./cli-support.js"
import { servicesLayer, tempHome } from "./host-support.js"

/**
 * The reference model: the candidates of a name, most specific first, are the name itself, then
 * `prefix*` for every prefix of the name from the longest (the whole name) to the empty one (`*`);
 * the first one that is a rule decides; else the default table.
 */
const reference = (
  rules: ReadonlyMap<string, ApprovalRules.Decision>,
  name: string,
  readOnly: boolean | undefined
): ApprovalRules.Decision => {
  const candidates = [name, ...Array.from({ length: name.length + 1 }, (_, i) => `${name.slice(0, name.length - i)}*`)]
  for (const c of candidates) {
    const d = rules.get(c)
    if (d !== undefined) return d
  }
  if (name === "delete_mcp" || name === "register_mcp") return "ask"
  return readOnly === true ? "allow" : "ask"
}

// Small alphabets, so that patterns and names overlap often.
const segment = fc.stringMatching(/^[ab_]{0,4}$/)
const toolName = fc.oneof(
  fc.tuple(segment, segment).map(([s, t]) => `mcp__${s}__${t}`),
  fc.constantFrom("delete_mcp", "register_mcp", "toggle_item", "list_items")
)
const pattern = fc.oneof(
  toolName,
  toolName.chain((n) => fc.nat({ max: n.length }).map((i) => `${n.slice(0, i)}*`)),
  fc.constant("*")
)
const decision = fc.constantFrom<ApprovalRules.Decision>("allow", "ask", "deny")
const ruleSet = fc.array(fc.tuple(pattern, decision), { maxLength: 8 }).map((pairs) => new Map(pairs))

describe("the most specific rule decides", () => {
  it.prop(
    "the decision is the reference model's, for any rule set, tool and annotations",
    [ruleSet, toolName, fc.option(fc.boolean(), { nil: undefined })],
    ([rules, name, readOnly]) => {
      const verdict = ApprovalRules.decide(
        [...rules].map(([p, d]) => ({ pattern: p, decision: d })),
        { name, annotations: readOnly === undefined ? undefined : { readOnlyHint: readOnly } }
      )
      assert.strictEqual(verdict.decision, reference(rules, name, readOnly))
      // The deciding rule, when there is one, matches the name and is in the set with that decision.
      if (verdict.rule !== undefined) {
        assert.isTrue(ApprovalRules.matches(verdict.rule, name))
        assert.strictEqual(rules.get(verdict.rule), verdict.decision)
      } else {
        assert.isFalse([...rules.keys()].some((p) => ApprovalRules.matches(p, name)))
      }
    }
  )

  it.prop(
    "the order of the rules does not matter",
    [ruleSet, toolName],
    ([rules, name]) => {
      const list = [...rules].map(([p, d]) => ({ pattern: p, decision: d }))
      const subject = { name }
      assert.deepStrictEqual(
        ApprovalRules.decide(list, subject),
        ApprovalRules.decide([...list].reverse(), subject)
      )
    }
  )

  it("an exact name beats the longest glob, a longer prefix beats a shorter one, * comes last", () => {
    const rules = [
      { pattern: "*", decision: "deny" as const },
      { pattern: "mcp__gcal__*", decision: "ask" as const },
      { pattern: "mcp__gcal__list*", decision: "allow" as const },
      { pattern: "mcp__gcal__list_events", decision: "deny" as const }
    ]
    const d = (name: string) => ApprovalRules.decide(rules, { name })
    assert.deepStrictEqual(d("mcp__gcal__list_events"), {
      decision: "deny",
      rule: "mcp__gcal__list_events",
      reason: "the rule mcp__gcal__list_events says deny"
    })
    assert.strictEqual(d("mcp__gcal__list_calendars").rule, "mcp__gcal__list*")
    assert.strictEqual(d("mcp__gcal__delete_event").rule, "mcp__gcal__*")
    assert.strictEqual(d("mcp__ssh__exec").rule, "*")
  })

  it("the defaults: read-only allows, anything else asks, delete_mcp and register_mcp ask whatever their hints", () => {
    const d = (name: string, readOnlyHint?: boolean) =>
      ApprovalRules.decide([], { name, annotations: readOnlyHint === undefined ? undefined : { readOnlyHint } })
        .decision
    assert.strictEqual(d("mcp__fs__read", true), "allow")
    assert.strictEqual(d("mcp__fs__write", false), "ask")
    assert.strictEqual(d("mcp__fs__write"), "ask")
    assert.strictEqual(d("delete_mcp", true), "ask")
    assert.strictEqual(d("register_mcp", true), "ask")
    // A rule overrides the default, also for delete_mcp.
    assert.strictEqual(
      ApprovalRules.decide([{ pattern: "delete_mcp", decision: "allow" }], { name: "delete_mcp" })
        .decision,
      "allow"
    )
  })
})

describe("the approval_rules table", () => {
  const open = Effect.gen(function*() {
    const context = yield* Layer.build(
      ApprovalRules.ApprovalRules.Default.pipe(Layer.provideMerge(servicesLayer(yield* tempHome)))
    )
    return { rules: Context.get(context, ApprovalRules.ApprovalRules), sql: Context.get(context, SqlClient.SqlClient) }
  })

  it.scoped("set, list, change, remove; the verdict reads the stored rules", () =>
    Effect.gen(function*() {
      const { rules } = yield* open
      yield* rules.set("mcp__gcal__*", "ask")
      yield* rules.set("mcp__gcal__list_events", "allow")
      yield* rules.set("*", "deny")
      yield* rules.set("*", "ask")
      const listed = (yield* rules.list).map((r) => [r.pattern, r.decision])
      assert.deepStrictEqual(listed, [["*", "ask"], ["mcp__gcal__*", "ask"], ["mcp__gcal__list_events", "allow"]])
      assert.strictEqual((yield* rules.verdict({ name: "mcp__gcal__list_events" })).decision, "allow")
      assert.strictEqual((yield* rules.verdict({ name: "mcp__gcal__delete_event" })).rule, "mcp__gcal__*")
      assert.isTrue(yield* rules.remove("mcp__gcal__list_events"))
      assert.isFalse(yield* rules.remove("mcp__gcal__list_events"))
      assert.strictEqual((yield* rules.verdict({ name: "mcp__gcal__list_events" })).rule, "mcp__gcal__*")
    }))

  it.scoped("a pattern that cannot be one is refused; the table refuses a decision outside allow|ask|deny", () =>
    Effect.gen(function*() {
      const { rules, sql } = yield* open
      for (const bad of ["", "mcp__a*b", "a b", "**"]) {
        const error = yield* Effect.flip(rules.set(bad, "allow"))
        assert.strictEqual(error._tag, "InvalidApprovalPattern", bad)
        assert.include(error.message, "exact tool name")
      }
      const refused = yield* Effect.flip(
        sql`INSERT INTO approval_rules (pattern, decision, created_at) VALUES ('x', 'maybe', 'now')`
      )
      assert.include(String((refused.cause as Error).message), "CHECK constraint failed")
      assert.deepStrictEqual(yield* rules.list, [])
    }))

  it.scoped("a rule changed by another connection on the same file decides the next call", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const build = Effect.map(
        Layer.build(ApprovalRules.ApprovalRules.Default.pipe(Layer.provideMerge(servicesLayer(home)))),
        (context) => Context.get(context, ApprovalRules.ApprovalRules)
      )
      const gate = yield* build
      const other = yield* build
      const tool = { name: "mcp__notes__delete_note" }
      // Read (and kept) before the other connection writes.
      assert.strictEqual((yield* gate.verdict(tool)).decision, "ask")
      assert.strictEqual((yield* gate.verdict(tool)).decision, "ask")
      yield* other.set("mcp__notes__*", "deny")
      assert.strictEqual((yield* gate.verdict(tool)).rule, "mcp__notes__*")
      yield* other.set("mcp__notes__delete_note", "allow")
      assert.strictEqual((yield* gate.verdict(tool)).decision, "allow")
      assert.isTrue(yield* other.remove("mcp__notes__delete_note"))
      assert.strictEqual((yield* gate.verdict(tool)).decision, "deny")
      // This connection's own writes, through the service, are seen at once too.
      yield* gate.set("mcp__notes__*", "allow")
      assert.strictEqual((yield* gate.verdict(tool)).decision, "allow")
      assert.strictEqual((yield* other.verdict(tool)).decision, "allow")
      assert.isTrue(yield* gate.remove("mcp__notes__*"))
      assert.strictEqual((yield* other.verdict(tool)).decision, "ask")
      assert.strictEqual((yield* gate.verdict(tool)).decision, "ask")
    }))

  it.scoped("two instances of the service on one connection see each other's writes", () =>
    Effect.gen(function*() {
      const services = yield* Layer.build(servicesLayer(yield* tempHome))
      const instance = Effect.map(
        Layer.build(
          Layer.fresh(ApprovalRules.ApprovalRules.Default).pipe(Layer.provide(Layer.succeedContext(services)))
        ),
        (context) => Context.get(context, ApprovalRules.ApprovalRules)
      )
      const gate = yield* instance
      const other = yield* instance
      assert.notStrictEqual(gate, other)
      const tool = { name: "mcp__notes__delete_note" }
      assert.strictEqual((yield* gate.verdict(tool)).decision, "ask")
      yield* other.set("mcp__notes__*", "deny")
      assert.strictEqual((yield* gate.verdict(tool)).decision, "deny")
      assert.isTrue(yield* other.remove("mcp__notes__*"))
      assert.strictEqual((yield* gate.verdict(tool)).decision, "ask")
    }))

  it.scoped("a rule set or removed by `skald approvals` in another process decides the next call", () =>
    Effect.gen(function*() {
      const { home, rules } = yield* Effect.gen(function*() {
        const home = yield* tempHome
        const context = yield* Layer.build(
          ApprovalRules.ApprovalRules.Default.pipe(Layer.provideMerge(servicesLayer(home)))
        )
        return { home, rules: Context.get(context, ApprovalRules.ApprovalRules) }
      })
      const skald = (...args: ReadonlyArray<string>) =>
        Effect.promise(() => runSkald(["approvals", ...args, "--home", home]))
      const tool = { name: "mcp__fs__read", annotations: { readOnlyHint: true } }
      assert.strictEqual((yield* rules.verdict(tool)).decision, "allow")
      const set = yield* skald("set", "mcp__fs__*", "deny")
      assert.strictEqual(set.status, 0, set.stderr)
      assert.deepStrictEqual(yield* rules.verdict(tool), {
        decision: "deny",
        rule: "mcp__fs__*",
        reason: "the rule mcp__fs__* says deny"
      })
      const rm = yield* skald("rm", "mcp__fs__*")
      assert.strictEqual(rm.status, 0, rm.stderr)
      assert.strictEqual((yield* rules.verdict(tool)).decision, "allow")
    }))

  it.scoped("a row the gate cannot read is a CorruptRow naming the table, not a verdict", () =>
    Effect.gen(function*() {
      const { rules, sql } = yield* open
      const tool = { name: "mcp__fs__read", annotations: { readOnlyHint: true } }
      assert.strictEqual((yield* rules.verdict(tool)).decision, "allow")
      // A value the CHECK would refuse (let in as a damaged or hand-edited file could hold it).
      yield* sql`PRAGMA ignore_check_constraints = ON`
      yield* sql`INSERT INTO approval_rules (pattern, decision, created_at) VALUES ('mcp__fs__*', 'maybe', 'now')`
      const failed = yield* Effect.flip(rules.verdict(tool))
      assert.strictEqual(failed._tag, "CorruptRow")
      if (failed._tag === "CorruptRow") assert.strictEqual(failed.table, "approval_rules")
    }))

  it.scoped("on an in-memory database, writes through the service decide the next verdict", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(
        ApprovalRules.ApprovalRules.Default.pipe(Layer.provideMerge(SqliteClient.layer({ filename: ":memory:" })))
      )
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* sql`CREATE TABLE approval_rules (pattern TEXT PRIMARY KEY, decision TEXT NOT NULL, created_at TEXT NOT NULL)`
      const rules = Context.get(context, ApprovalRules.ApprovalRules)
      const tool = { name: "mcp__fs__read", annotations: { readOnlyHint: true } }
      assert.strictEqual((yield* rules.verdict(tool)).decision, "allow")
      yield* rules.set("mcp__fs__*", "deny")
      assert.strictEqual((yield* rules.verdict(tool)).decision, "deny")
      assert.isTrue(yield* rules.remove("mcp__fs__*"))
      assert.strictEqual((yield* rules.verdict(tool)).decision, "allow")
    }))
})
