/**
 * The approval gate in the turn loop, with a real MCP server (the notes fixture: `read_note` is
 * read-only, `delete_note` destructive) through the manager, a scripted model, and the inbox
 * answered by the test as a person would (`resolve` on the item it watches for):
 * - a destructive call is held until it is answered (the server sees nothing before), then runs;
 * - `Deny` records it `denied`, it never reaches the server, and the model reads why;
 * - `Approve {always}` adds an exact `allow` rule that the next call uses (no second item);
 * - a read-only tool runs without asking;
 * - a stop while waiting withdraws the item and the call is `cancelled`;
 * - no person (mode `deny`), and a `deny` rule, refuse without asking.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { InboxItem, type TurnEvent } from "@skald/domain"
import * as ApprovalRules from "@skald/server/inbox/ApprovalRules"
import type { Inbox } from "@skald/server/inbox/Inbox"
import { Context, Effect, Fiber, Layer, Option, Stream } from "effect"
import { fixtureEntry, makeHome, startManager, waitForState } from "./host-support.js"
import { readRecords, tempFile } from "./support.js"
import { agentOver, events, type Options } from "./support/agent.js"
import * as Scripted from "./support/scripted-model.js"

/** A manager with the notes server, the loop over it with `script`, and the approval rules. */
const setup = (script: ReadonlyArray<Scripted.Round>, options: Options = { approvals: { mode: "ask" } }) =>
  Effect.gen(function*() {
    const record = tempFile("approvals")
    const { context, manager } = yield* startManager(makeHome())
    yield* Effect.orDie(manager.register(fixtureEntry("notes", "notes", { FIXTURE_RECORD: record })))
    yield* waitForState(manager, "notes", "connected")
    const loop = yield* agentOver(context, script, options)
    const rules = Context.get(
      yield* Layer.build(Layer.provide(ApprovalRules.ApprovalRules.Default, Layer.succeedContext(context))),
      ApprovalRules.ApprovalRules
    )
    const sql = Context.get(context, SqlClient.SqlClient)
    /** The calls that reached the server. */
    const ran = () => readRecords(record).map((r) => `${String(r.tool)}(${String(r.name)})`)
    /** How the inbox's approval items ended (its outcome log). */
    const outcomes = sql<{ tool: string; outcome: string }>`SELECT tool, outcome FROM inbox_items
      WHERE kind = 'approval' ORDER BY resolved_at, id`.pipe(
      Effect.orDie,
      Effect.map((rows) => rows.map((r) => `${r.tool}: ${r.outcome}`))
    )
    return { ...loop, rules, ran, outcomes }
  })

/** The next approval the inbox holds (a watcher sees the pending ones first). */
const nextApproval = (inbox: Inbox) =>
  inbox.watch.pipe(
    Stream.filterMap((change) =>
      change._tag === "ItemAdded" && change.item._tag === "Approval" ? Option.some(change.item) : Option.none()
    ),
    Stream.runHead,
    Effect.map(Option.getOrThrow)
  )

const deleteCall = (id: string, name = "draft") =>
  Scripted.calls([{ id, name: "mcp__notes__delete_note", params: { name } }])

const toolDone = (all: ReadonlyArray<TurnEvent.TurnEvent>) =>
  all.filter((e): e is TurnEvent.ToolDone => e._tag === "ToolDone").map((e) => [e.name, e.status])

describe("approvals in the turn loop", () => {
  it.scopedLive("a destructive tool is held until the person approves it, then runs", () =>
    Effect.gen(function*() {
      const { agent, inbox, outcomes, ran, store } = yield* setup([deleteCall("c1"), Scripted.answer("deleted")])
      const turn = yield* Effect.fork(events(agent.run({ message: "delete the draft" })))
      const item = yield* nextApproval(inbox)
      assert.strictEqual(item.tool, "mcp__notes__delete_note")
      assert.deepStrictEqual(item.arguments, { name: "draft" })
      assert.deepStrictEqual(item.annotations, { destructiveHint: true })
      assert.strictEqual(item.reason, "not marked read-only")
      assert.strictEqual(item.origin.server, "notes")
      assert.strictEqual(item.origin.callId, "c1")
      assert.isDefined(item.deadline)
      // Held: the server has seen no call while the item waits.
      assert.deepStrictEqual(ran(), [])
      assert.deepStrictEqual((yield* inbox.list).map((i) => i.id), [item.id])
      yield* inbox.resolve(item.id, new InboxItem.Approve({ always: false }))
      const all = yield* Fiber.join(turn)
      assert.deepStrictEqual(toolDone(all), [["mcp__notes__delete_note", "done"]])
      assert.deepStrictEqual(ran(), ["delete_note(draft)"])
      assert.deepStrictEqual(yield* outcomes, ["mcp__notes__delete_note: approved"])
      const started = all[0] as TurnEvent.TurnStarted
      const calls = (yield* store.history(started.sessionId)).flatMap((m) => m.calls)
      assert.deepStrictEqual(calls.map((c) => [c.callId, c.status, c.result]), [["c1", "done", "deleted draft"]])
    }))

  it.scopedLive("denied: the call is stored denied, never reaches the server, and the model reads why", () =>
    Effect.gen(function*() {
      const { agent, inbox, model, outcomes, ran, store } = yield* setup([deleteCall("c1"), Scripted.answer("ok")])
      const turn = yield* Effect.fork(events(agent.run({ message: "delete the draft" })))
      const item = yield* nextApproval(inbox)
      yield* inbox.resolve(item.id, new InboxItem.Deny())
      const all = yield* Fiber.join(turn)
      assert.deepStrictEqual(toolDone(all), [["mcp__notes__delete_note", "denied"]])
      assert.deepStrictEqual(ran(), [])
      assert.deepStrictEqual(yield* outcomes, ["mcp__notes__delete_note: denied"])
      const started = all[0] as TurnEvent.TurnStarted
      const call = (yield* store.history(started.sessionId)).flatMap((m) => m.calls)[0]!
      assert.strictEqual(call.status, "denied")
      assert.include(call.result, "denied by the person")
      assert.include(call.result, "Do not call it again")
      // The model's next request carries that result for the call.
      const second = (yield* model.recorded)[1]!
      const results = second.messages.flatMap((m) =>
        m.role === "tool" ? (m.content as ReadonlyArray<{ id: string; result: unknown }>) : []
      )
      assert.strictEqual(results.length, 1)
      assert.include(JSON.stringify(results[0]!.result), "denied by the person")
    }))

  it.scopedLive("always: an exact allow rule is added and the next call runs without asking", () =>
    Effect.gen(function*() {
      const { agent, inbox, outcomes, ran, rules } = yield* setup([
        deleteCall("c1", "one"),
        deleteCall("c2", "two"),
        Scripted.answer("both deleted")
      ])
      const turn = yield* Effect.fork(events(agent.run({ message: "delete two notes" })))
      const item = yield* nextApproval(inbox)
      yield* inbox.resolve(item.id, new InboxItem.Approve({ always: true }))
      const all = yield* Fiber.join(turn)
      assert.deepStrictEqual(toolDone(all), [["mcp__notes__delete_note", "done"], ["mcp__notes__delete_note", "done"]])
      assert.deepStrictEqual(ran(), ["delete_note(one)", "delete_note(two)"])
      assert.deepStrictEqual((yield* rules.list).map((r) => [r.pattern, r.decision]), [[
        "mcp__notes__delete_note",
        "allow"
      ]])
      // One item only: the second call was decided by the rule.
      assert.deepStrictEqual(yield* outcomes, ["mcp__notes__delete_note: approved"])
      assert.deepStrictEqual(yield* inbox.list, [])
    }))

  it.scopedLive("a read-only tool runs without asking", () =>
    Effect.gen(function*() {
      const { agent, outcomes, ran } = yield* setup([
        Scripted.calls([{ id: "r1", name: "mcp__notes__read_note", params: { name: "todo" } }]),
        Scripted.answer("read")
      ])
      const all = yield* events(agent.run({ message: "read my todo note" }))
      assert.deepStrictEqual(toolDone(all), [["mcp__notes__read_note", "done"]])
      assert.deepStrictEqual(ran(), ["read_note(todo)"])
      assert.deepStrictEqual(yield* outcomes, [])
    }))

  it.scopedLive("a stop while waiting withdraws the item; the call is cancelled and never runs", () =>
    Effect.gen(function*() {
      const { agent, inbox, outcomes, ran, store } = yield* setup([deleteCall("c1")])
      const turn = yield* Effect.fork(events(agent.run({ message: "delete the draft" })))
      const item = yield* nextApproval(inbox)
      const resolved = yield* inbox.watch.pipe(
        Stream.filter((c) => c._tag === "ItemResolved" && c.id === item.id),
        Stream.runHead,
        Effect.fork
      )
      assert.isTrue(yield* agent.stop(item.origin.sessionId!))
      const all = yield* Fiber.join(turn)
      assert.strictEqual(all[all.length - 1]!._tag, "TurnStopped")
      assert.deepStrictEqual(toolDone(all), [["mcp__notes__delete_note", "cancelled"]])
      const change = Option.getOrThrow(yield* Fiber.join(resolved))
      assert.strictEqual((change as InboxItem.ItemResolved).outcome, "withdrawn")
      assert.deepStrictEqual(yield* outcomes, ["mcp__notes__delete_note: withdrawn"])
      assert.deepStrictEqual(yield* inbox.list, [])
      assert.deepStrictEqual(ran(), [])
      const calls = (yield* store.history(item.origin.sessionId!)).flatMap((m) => m.calls)
      assert.deepStrictEqual(calls.map((c) => c.status), ["cancelled"])
    }))

  it.scopedLive("no person there (mode deny): an ask is refused at once; a read-only tool still runs", () =>
    Effect.gen(function*() {
      const { agent, outcomes, ran } = yield* setup([
        Scripted.calls([
          { id: "c1", name: "mcp__notes__delete_note", params: { name: "a" } },
          { id: "c2", name: "mcp__notes__read_note", params: { name: "b" } }
        ]),
        Scripted.answer("done")
      ], { approvals: { mode: "deny" } })
      const all = yield* events(agent.run({ message: "go" }))
      const done = all.filter((e): e is TurnEvent.ToolDone => e._tag === "ToolDone")
      assert.deepStrictEqual(done.map((e) => [e.name, e.status]), [
        ["mcp__notes__delete_note", "denied"],
        ["mcp__notes__read_note", "done"]
      ])
      assert.include(done[0]!.result, "because no person was there to approve it")
      assert.deepStrictEqual(ran(), ["read_note(b)"])
      assert.deepStrictEqual(yield* outcomes, [])
    }))

  it.scopedLive("a deny rule refuses even a read-only tool, without asking; the result names the rule", () =>
    Effect.gen(function*() {
      const { agent, outcomes, ran, rules } = yield* setup([
        Scripted.calls([{ id: "r1", name: "mcp__notes__read_note", params: { name: "x" } }]),
        Scripted.answer("ok")
      ])
      yield* rules.set("mcp__notes__*", "deny")
      const all = yield* events(agent.run({ message: "read x" }))
      const done = all.filter((e): e is TurnEvent.ToolDone => e._tag === "ToolDone")
      assert.deepStrictEqual(done.map((e) => e.status), ["denied"])
      assert.include(done[0]!.result, "denied by the approval rule mcp__notes__*")
      assert.deepStrictEqual(ran(), [])
      assert.deepStrictEqual(yield* outcomes, [])
    }))

  it.scopedLive("the config tools pass the gate: list_items (read-only) runs, delete_mcp is refused with nobody to ask", () =>
    Effect.gen(function*() {
      const { agent, outcomes } = yield* setup([
        Scripted.calls([{ id: "a1", name: "activate_tools", params: { groups: ["config"] } }]),
        Scripted.calls([
          { id: "l1", name: "list_items", params: { type: "mcp" } },
          { id: "x1", name: "delete_mcp", params: { name: "notes" } }
        ]),
        Scripted.answer("done")
      ], { approvals: { mode: "deny" } })
      const all = yield* events(agent.run({ message: "clean up" }))
      assert.deepStrictEqual(toolDone(all), [
        ["activate_tools", "done"],
        ["list_items", "done"],
        ["delete_mcp", "denied"]
      ])
      assert.deepStrictEqual(yield* outcomes, [])
    }))

  it.scopedLive("an approval nobody answers expires at its deadline: the call is denied", () =>
    Effect.gen(function*() {
      const { agent, outcomes, ran } = yield* setup([deleteCall("c1"), Scripted.answer("ok")], {
        approvals: { mode: "ask", deadline: "10 millis" }
      })
      const all = yield* events(agent.run({ message: "delete the draft" }))
      assert.deepStrictEqual(toolDone(all), [["mcp__notes__delete_note", "denied"]])
      assert.deepStrictEqual(yield* outcomes, ["mcp__notes__delete_note: expired"])
      assert.deepStrictEqual(ran(), [])
    }))
})
