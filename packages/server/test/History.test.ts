/**
 * The history's two directions: a turn as the loop sends it live, persisted through the real chat
 * store (a SQLite file) and replayed, gives exactly the messages sent live; any stored history
 * replays as one the providers accept; results over the cap are cut with a note.
 */
import * as Prompt from "@effect/ai/Prompt"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqliteMigrator from "@effect/sql-sqlite-node/SqliteMigrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { ToolResult } from "@skald/domain"
import { Context, Effect, FastCheck as fc, Layer, Option, Schema, TestClock } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { ChatStore } from "../src/agent/ChatStore.js"
import * as History from "../src/agent/History.js"
import * as Database from "../src/host/Database.js"
import * as Paths from "../src/host/Paths.js"

const encode = Schema.encodeSync(Schema.Array(Prompt.Message))

/** A store over a fresh SQLite file. */
const freshStore = Effect.gen(function*() {
  const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-history-"))
  const layer = ChatStore.Default.pipe(
    Layer.provide(Database.layer),
    Layer.provide(Layer.succeed(Paths.Paths, Paths.make({ home })))
  )
  return Context.get(yield* Layer.build(layer), ChatStore)
})

const text = fc.string({ unit: "grapheme", maxLength: 40 })
// A value as JSON carries it (what a model's arguments and a JSON result are): fc.jsonValue also
// gives -0, which JSON writes as 0, so a stored -0 reads back as 0 (the test below says so).
const json = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as fc.JsonValue)
// The properties over a real store: under load a run is slow, and shrinking a failure runs the
// property again and again; past this, fast-check stops and reports the input it has (seed and
// path included) rather than the test timing out without it.
const storeRuns = (numRuns: number) => ({ fastCheck: { numRuns, interruptAfterTimeLimit: 30_000 } })
const outcome = fc.oneof(
  fc.record({
    status: fc.constantFrom("done" as const, "error" as const, "denied" as const),
    result: fc.oneof(
      text.map((t) => ToolResult.TextResult.make({ text: t })),
      json.map((v) => ToolResult.JsonResult.make({ value: v }))
    )
  }),
  fc.constant({ status: "cancelled" as const, result: undefined })
)
const call = fc.record({
  name: fc.constantFrom("mcp__a__x", "mcp__b__y", "mcp__c_d__z"),
  params: fc.dictionary(fc.string({ maxLength: 8 }), json, { maxKeys: 4 }),
  outcome
})
const round = fc.record({ text, calls: fc.array(call, { maxLength: 4 }) })
const turn = fc.record({ message: text, rounds: fc.array(round, { minLength: 1, maxLength: 4 }) })

/** Sends a turn "live" the way the loop does, persisting as it goes; returns the messages it sent. */
const live = (store: ChatStore, session: string, t: typeof turn extends fc.Arbitrary<infer T> ? T : never) =>
  Effect.gen(function*() {
    yield* store.append(session, { role: "user", text: t.message, calls: [] })
    const messages: Array<Prompt.Message> = [History.user(t.message)]
    let n = 0
    for (const r of t.rounds) {
      const assistant = History.assistant(
        r.text,
        r.calls.map((c) => ({ id: `call-${n++}`, name: c.name, params: c.params }))
      )
      if (assistant === undefined) continue
      const row = History.rowOf(assistant)
      const id = yield* store.append(session, row)
      messages.push(assistant)
      if (row.calls.length === 0) continue
      const results = yield* Effect.forEach(row.calls, (c, i) => {
        const o = r.calls[i]!.outcome
        const stored = o.result === undefined
          ? { status: o.status, result: History.CANCELLED_RESULT, resultType: "string" as const }
          : { status: o.status, ...History.capResult(o.result, 1_000_000) }
        return Effect.as(store.finishCall(id, c.callId, stored), { ...c, ...stored })
      })
      messages.push(History.toolResults(results))
    }
    return messages
  })

describe("History", () => {
  it.scoped("a fresh store has no sessions", () =>
    Effect.gen(function*() {
      const store = yield* freshStore
      assert.deepStrictEqual(yield* store.listSessions, [])
    }))

  it.scoped("sub-agent sessions: listed under their parent, not among the sessions; deleted with it, each subtree alone", () =>
    Effect.gen(function*() {
      const store = yield* freshStore
      const make = (agent: string, parent?: string) =>
        Effect.tap(
          store.createSession({ agent, title: `task of ${agent}`, parent }),
          (s) => store.append(s.id, { role: "user", text: `hello ${agent}`, calls: [] })
        )
      const a = yield* make("a")
      const b = yield* make("b")
      const a1 = yield* make("a1", a.id)
      const a1x = yield* make("a1x", a1.id)
      const a2 = yield* make("a2", a.id)
      const ids = (sessions: ReadonlyArray<{ readonly id: string }>) => sessions.map((s) => s.id)
      const exists = (id: string) => Effect.map(store.getSession(id), Option.isSome)

      assert.sameMembers(ids(yield* store.listSessions), [a.id, b.id])
      assert.deepStrictEqual(ids(yield* store.subSessions(a.id)), [a1.id, a2.id])
      assert.deepStrictEqual(ids(yield* store.subSessions(a1.id)), [a1x.id])
      assert.deepStrictEqual(yield* store.subSessions(b.id), [])
      const found = yield* store.getSession(a1x.id)
      assert.strictEqual(Option.isSome(found) ? found.value.parent : undefined, a1.id)
      const root = yield* store.getSession(a.id)
      assert.isTrue(Option.isSome(root) && root.value.parent === undefined, "a session a person started has no parent")

      // A sub-session alone takes its own sub-sessions with it, and nothing else.
      assert.isTrue(yield* store.removeSession(a1.id))
      assert.isFalse(yield* exists(a1.id))
      assert.isFalse(yield* exists(a1x.id))
      assert.deepStrictEqual(yield* store.history(a1x.id), [])
      assert.deepStrictEqual(ids(yield* store.subSessions(a.id)), [a2.id])
      // The parent takes the rest; the other session keeps its messages.
      assert.isTrue(yield* store.removeSession(a.id))
      assert.isFalse(yield* exists(a2.id))
      assert.deepStrictEqual(yield* store.history(a2.id), [])
      assert.deepStrictEqual(ids(yield* store.listSessions), [b.id])
      assert.deepStrictEqual((yield* store.history(b.id)).map((m) => m.text), ["hello b"])
      assert.isFalse(yield* store.removeSession(a.id))
    }))

  it.scoped.prop(
    "replaying persisted turns gives exactly the messages sent live",
    [fc.array(turn, { minLength: 1, maxLength: 3 })],
    ([turns]) =>
      Effect.gen(function*() {
        const store = yield* freshStore
        const session = yield* store.createSession({ agent: "main" })
        const sent: Array<Prompt.Message> = []
        for (const t of turns) sent.push(...(yield* live(store, session.id, t)))
        const replayed = History.replay(yield* store.history(session.id))
        assert.deepStrictEqual(encode(replayed), encode(sent))
      }),
    storeRuns(40)
  )
  const status = fc.constantFrom(
    "running" as const,
    "done" as const,
    "error" as const,
    "cancelled" as const,
    "denied" as const
  )
  const storedCall = fc.record({
    name: fc.constantFrom("mcp__a__x", "mcp__b__y"),
    arguments: fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 3 }),
    status,
    json: fc.boolean(),
    value: json
  })
  // A text result of any value: String() throws on an object with a `toString` key ({"toString":0}).
  const textOf = (value: unknown): string => typeof value === "string" ? value : JSON.stringify(value)
  const storedRow = fc.oneof(
    fc.record({ role: fc.constant("user" as const), text, calls: fc.constant([]) }),
    fc.record({ role: fc.constant("assistant" as const), text, calls: fc.array(storedCall, { maxLength: 4 }) })
  )

  it.scoped("a history written before migration 0015 reads the same after it, and appends go on", () =>
    Effect.gen(function*() {
      const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-history-"))
      const paths = Paths.make({ home })
      Fs.mkdirSync(Path.dirname(paths.database), { recursive: true })
      // The database as the release before 0015 left it: a session, a user message, a call.
      const earlier = Object.fromEntries(
        Object.entries(Database.migrations).filter(([name]) => name < "0015")
      )
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO chat_sessions (id, agent, title, created_at, updated_at)
          VALUES ('s', 'main', NULL, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z')`
        yield* sql`INSERT INTO chat_messages (session, seq, role, text, created_at)
          VALUES ('s', 0, 'user', 'hi', '2026-01-01T00:00:00.000Z'), ('s', 1, 'assistant', '', '2026-01-01T00:00:01.000Z')`
        yield* sql`INSERT INTO chat_llm_tools (call_id, session, message, position, tool_name, arguments, result,
            result_type, status, started_at, finished_at)
          VALUES ('c0', 's', 2, 0, 'mcp__a__x', '{"k":1}', '{"v":2}', 'json', 'done',
            '2026-01-01T00:00:01.000Z', '2026-01-01T00:00:01.000Z')`
      }).pipe(
        Effect.provide(
          SqliteMigrator.layer({ loader: SqliteMigrator.fromRecord(earlier) }).pipe(
            Layer.provideMerge(SqliteClient.layer({ filename: paths.database })),
            Layer.provide(NodeContext.layer)
          )
        )
      )
      const store = Context.get(
        yield* Layer.build(
          ChatStore.Default.pipe(Layer.provide(Database.layer), Layer.provide(Layer.succeed(Paths.Paths, paths)))
        ),
        ChatStore
      )
      // Migration 0016 gives it no parent: it is listed as before.
      assert.deepStrictEqual((yield* store.listSessions).map((x) => [x.id, x.parent]), [["s", undefined]])
      const before = yield* store.history("s")
      assert.deepStrictEqual(before.map((m) => [m.seq, m.role, m.text, m.calls]), [
        [0, "user", "hi", []],
        [1, "assistant", "", [{
          callId: "c0",
          name: "mcp__a__x",
          arguments: { k: 1 },
          status: "done",
          result: "{\"v\":2}",
          resultType: "json"
        }]]
      ])
      yield* TestClock.setTime(Date.parse("2026-02-01T00:00:00.000Z"))
      const call: History.CallRow = {
        callId: "c1",
        name: "mcp__a__x",
        arguments: {},
        status: "running",
        result: undefined,
        resultType: "string"
      }
      yield* store.append("s", { role: "assistant", text: "again", calls: [call] })
      const after = yield* store.history("s")
      assert.deepStrictEqual(after.slice(0, 2), before)
      assert.deepStrictEqual(after.map((m) => m.seq), [0, 1, 2])
      assert.deepStrictEqual(after[2]!.calls, [call])
      assert.strictEqual(Option.getOrThrow(yield* store.getSession("s")).updatedAt, "2026-02-01T00:00:00.000Z")
    }))

  it.scoped.prop(
    "appended messages read back exactly, calls in order; the session's time is its last message's",
    [fc.array(storedRow, { minLength: 1, maxLength: 5 })],
    ([rows]) =>
      Effect.gen(function*() {
        const store = yield* freshStore
        const session = yield* store.createSession({ agent: "main" })
        const appended: Array<History.MessageRow> = []
        for (const [m, row] of rows.entries()) {
          yield* TestClock.adjust("1 second")
          const stored: History.MessageRow = {
            role: row.role,
            text: row.text,
            calls: row.calls.map((c, i): History.CallRow => ({
              callId: `call-${m}-${i}`,
              name: c.name,
              arguments: c.arguments,
              status: c.status,
              result: c.status === "running" ? undefined : c.json ? JSON.stringify(c.value) : textOf(c.value),
              resultType: c.json ? "json" : "string"
            }))
          }
          yield* store.append(session.id, stored)
          appended.push(stored)
        }
        const history = yield* store.history(session.id)
        assert.deepStrictEqual(
          history.map((m) => ({ role: m.role, text: m.text, calls: m.calls })),
          appended
        )
        assert.deepStrictEqual(history.map((m) => m.seq), rows.map((_, i) => i))
        const after = yield* store.getSession(session.id)
        assert.strictEqual(Option.getOrThrow(after).updatedAt, history.at(-1)!.createdAt)
        assert.notStrictEqual(Option.getOrThrow(after).updatedAt, session.createdAt)
      }),
    storeRuns(30)
  )

  it.prop(
    "any stored history, whatever its calls' statuses, replays as one the providers accept",
    [fc.array(storedRow, { maxLength: 8 })],
    ([rows]) => {
      let n = 0
      const history: Array<History.MessageRow> = rows.map((r) => ({
        role: r.role,
        text: r.text,
        calls: r.calls.map((c): History.CallRow => ({
          callId: `c${n++}`,
          name: c.name,
          arguments: c.arguments,
          status: c.status,
          result: c.status === "running" ? undefined : c.json ? JSON.stringify(c.value) : textOf(c.value),
          resultType: c.json && c.status !== "running" ? "json" : "string"
        }))
      }))
      const replayed = History.replay(history)
      assert.strictEqual(History.problemOf(replayed), undefined)
      // Every call is answered, and only a finished one as a success.
      const results = replayed.flatMap((m) => (m.role === "tool" ? m.content : []))
      const calls = history.flatMap((r) => r.calls)
      assert.deepStrictEqual(results.map((p) => p.id), calls.map((c) => c.callId))
      assert.deepStrictEqual(results.map((p) => p.isFailure), calls.map((c) => c.status !== "done"))
    }
  )

  it("a json result replays as its JSON value; a text one as the text; a running call as interrupted", () => {
    const [, tools] = History.messagesOf({
      role: "assistant",
      text: "",
      calls: [
        { callId: "a", name: "mcp__s__j", arguments: {}, status: "done", result: `{"x":[1,2]}`, resultType: "json" },
        { callId: "b", name: "mcp__s__t", arguments: {}, status: "done", result: `{"x":[1,2]}`, resultType: "string" },
        { callId: "c", name: "mcp__s__r", arguments: {}, status: "running", result: undefined, resultType: "string" }
      ]
    })
    assert.strictEqual(tools?.role, "tool")
    const parts = tools?.role === "tool" ? tools.content : []
    assert.deepStrictEqual(parts.map((p) => p.result), [{ x: [1, 2] }, `{"x":[1,2]}`, History.INTERRUPTED_RESULT])
    assert.deepStrictEqual(parts.map((p) => p.isFailure), [false, false, true])
  })

  it.scoped("JSON has no -0: a call's -0 argument is stored and replayed as 0, the same JSON text", () =>
    Effect.gen(function*() {
      const store = yield* freshStore
      const session = yield* store.createSession({ agent: "main" })
      const params = { x: -0, y: [-0, 1] }
      const message = History.assistant("", [{ id: "c0", name: "mcp__a__x", params }])!
      yield* store.append(session.id, History.rowOf(message))
      const [row] = yield* store.history(session.id)
      const [stored] = row!.calls
      assert.deepStrictEqual(stored!.arguments, { x: 0, y: [0, 1] })
      assert.strictEqual(JSON.stringify(stored!.arguments), JSON.stringify(params))
    }))

  it("an empty round is no message", () => {
    assert.strictEqual(History.assistant("", []), undefined)
    assert.deepStrictEqual(History.replay([{ role: "assistant", text: "", calls: [] }]), [])
  })

  it.prop("a result over the cap is cut, on a character boundary, with a note; under it, untouched", [
    fc.string({ unit: "grapheme", maxLength: 300 }),
    fc.integer({ min: 1, max: 200 })
  ], ([t, cap]) => {
    const out = History.capResult(ToolResult.TextResult.make({ text: t }), cap)
    const bytes = Buffer.byteLength(t, "utf8")
    if (bytes <= cap) {
      assert.deepStrictEqual(out, { result: t, resultType: "string", truncated: false })
      return
    }
    assert.isTrue(out.truncated)
    const marker = "\n\n[truncated: "
    const at = out.result.lastIndexOf(marker)
    const kept = out.result.slice(0, at)
    assert.isTrue(t.startsWith(kept))
    assert.isAtMost(Buffer.byteLength(kept, "utf8"), cap)
    assert.strictEqual(
      out.result.slice(at + marker.length),
      `the result was ${bytes} bytes; only the first ${cap} are shown]`
    )
  })

  it("a JSON result over the cap becomes text (it is no longer JSON); under it, compact JSON", () => {
    const value = { list: Array.from({ length: 50 }, (_, i) => i) }
    assert.deepStrictEqual(History.capResult(ToolResult.JsonResult.make({ value }), 10_000), {
      result: JSON.stringify(value),
      resultType: "json",
      truncated: false
    })
    const cut = History.capResult(ToolResult.JsonResult.make({ value }), 20)
    assert.strictEqual(cut.resultType, "string")
    assert.isTrue(cut.truncated)
    assert.isTrue(cut.result.startsWith(JSON.stringify(value).slice(0, 20)))
  })

  it("media URLs are read from the manager's markdown, bare or absolute; other links are not", () => {
    const text = [
      "a tiny image",
      "![image](/api/mcp-media/1f.png) (image/png, 67 B)",
      "[audio](http://127.0.0.1:8787/api/mcp-media/2a.wav) (audio/wav, 44 B)",
      "[application/pdf](https://example.com/report.pdf)"
    ].join("\n")
    assert.deepStrictEqual(History.mediaUrls(text), [
      "/api/mcp-media/1f.png",
      "http://127.0.0.1:8787/api/mcp-media/2a.wav"
    ])
  })
})
