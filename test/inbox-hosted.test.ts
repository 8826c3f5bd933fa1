/**
 * Hosted elicitation: the manager's servers (the SDK fixture `elicit`, a real process over stdio)
 * ask through the Inbox. The client declares elicitation (form and url); each request is an inbox
 * item; an answer outside the requested schema is refused and the item stays pending; a server's
 * own cancel (`notifications/cancelled`) withdraws it; the person's deadline expires it and the
 * server is answered `cancel`; a server that does not wait for its answer leaves an item that its
 * server's stop withdraws; over streamable HTTP (server-everything) the same. A marker value answered to a masked field appears in no table of
 * skald.db, no file under the home and no log line.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { InboxItem, McpServerEntry, ServerConfig, ServerName, type ToolResult } from "@skald/domain"
import { Inbox } from "@skald/server/inbox/Inbox"
import { InboxLog } from "@skald/server/inbox/InboxLog"
import { Context, type Duration, Effect, Fiber, Logger } from "effect"
import * as Fs from "node:fs"
import { filesUnder, fixtureEntry, makeHome, startHostedManager, waitForState } from "./host-support.js"
import { startEverything } from "./http-support.js"
import { eventuallyEffect, readRecords, tempFile } from "./support.js"

const MARKER = "marker-7f3a-never-stored"

const textOf = (result: ToolResult.ToolResult): string =>
  result._tag === "Text" ? result.text : JSON.stringify(result.value)

/** A manager with an inbox over a fresh home, the `elicit` fixture connected; log lines captured. */
const hosted = (options: { readonly elicitationDeadline?: Duration.DurationInput } = {}) =>
  Effect.gen(function*() {
    const home = makeHome()
    const record = tempFile("elicit-hosted")
    const { context, manager } = yield* startHostedManager(home, options)
    yield* manager.register(fixtureEntry("elicit", "elicit", { FIXTURE_RECORD: record })).pipe(Effect.orDie)
    yield* waitForState(manager, "elicit", "connected")
    const inbox = Context.get(context, Inbox)
    const log = Context.get(context, InboxLog)
    const sql = Context.get(context, SqlClient.SqlClient)
    return { home, record, manager, inbox, log, sql }
  })

/** The next pending item of `inbox` (polled: the server's request arrives in its own time). */
const nextItem = (inbox: Inbox) =>
  eventuallyEffect(inbox.list, (items) => items.length > 0, "an inbox item").pipe(Effect.map((items) => items[0]!))

/** Every row of every table of the database, as text. */
const dumpTables = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
    const out: Array<string> = []
    for (const { name } of tables) out.push(name, JSON.stringify(yield* sql.unsafe(`SELECT * FROM "${name}"`)))
    return out.join("\n")
  })

describe("hosted elicitation (the inbox)", () => {
  it.scopedLive("a form is asked in the inbox; an answer outside its schema is refused; the value is never stored", () => {
    const lines: Array<string> = []
    const capture = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ message }) => void lines.push(JSON.stringify(message)))
    )
    return Effect.gen(function*() {
      const { home, inbox, log, manager, record, sql } = yield* hosted()
      const initialized = readRecords(record).find((r) => r.event === "initialized")
      assert.deepStrictEqual((initialized?.capabilities as { elicitation?: unknown }).elicitation, {
        form: {},
        url: {}
      })
      const call = yield* Effect.fork(manager.call("mcp__elicit__ask_secret", {}))
      const item = yield* nextItem(inbox)
      assert.strictEqual(item._tag, "Elicitation")
      if (item._tag !== "Elicitation") return
      assert.deepStrictEqual(item.origin, { server: "elicit" })
      assert.strictEqual(item.mode, "form")
      assert.strictEqual(item.message, "Enter the password for the vault")
      assert.deepStrictEqual(item.fields.map((f) => [f.name, f.required, f.masked]), [["password", true, true]])
      assert.isNumber(item.deadline)
      // Outside the schema: refused, still pending, the server still waiting.
      const wrong = yield* Effect.flip(inbox.resolve(item.id, new InboxItem.Accept({ content: { password: 42 } })))
      assert.strictEqual(wrong._tag, "InboxAnswerInvalid")
      const extra = yield* Effect.flip(
        inbox.resolve(item.id, new InboxItem.Accept({ content: { password: MARKER, user: MARKER } }))
      )
      assert.notInclude(extra.message, MARKER)
      assert.deepStrictEqual((yield* inbox.list).map((i) => i.id), [item.id])
      assert.isUndefined(yield* Fiber.poll(call).pipe(Effect.map((o) => o._tag === "Some" ? o : undefined)))
      yield* inbox.resolve(item.id, new InboxItem.Accept({ content: { password: MARKER } }))
      assert.strictEqual(textOf(yield* Fiber.join(call)), "ask_secret: accept")
      const answer = readRecords(record).find((r) => r.event === "answer")
      assert.deepInclude(answer, { action: "accept", hasContent: true, keys: ["password"] })
      const rows = (yield* log.list).filter((r) => r.id === item.id)
      assert.deepStrictEqual(rows.map((r) => [r.kind, r.server, r.outcome]), [["elicitation", "elicit", "accepted"]])
      // The value: in no table, no file under the home, no log line.
      assert.notInclude(yield* dumpTables(sql), MARKER)
      for (const file of filesUnder(home)) assert.notInclude(Fs.readFileSync(file, "latin1"), MARKER, file)
      assert.notInclude(lines.join("\n"), MARKER)
    }).pipe(Effect.provide(capture))
  })

  it.scopedLive("the server's own cancel (notifications/cancelled) withdraws the item", () =>
    Effect.gen(function*() {
      const { inbox, log, manager } = yield* hosted()
      const call = yield* Effect.fork(manager.call("mcp__elicit__confirm", { timeout: 400 }))
      const item = yield* nextItem(inbox)
      assert.isTrue(item._tag === "Elicitation" && item.confirmation)
      assert.strictEqual(textOf(yield* Fiber.join(call)), "confirm: error -32001")
      const rows = yield* eventuallyEffect(
        Effect.map(log.list, (all) => all.filter((r) => r.id === item.id)),
        (found) => found.length > 0,
        "the item's outcome"
      )
      assert.deepStrictEqual(rows.map((r) => r.outcome), ["withdrawn"])
      assert.deepStrictEqual(yield* inbox.list, [])
      const late = yield* Effect.flip(inbox.resolve(item.id, new InboxItem.Accept({})))
      assert.strictEqual(late._tag, "InboxItemNotFound")
    }))

  it.scopedLive("the person's deadline expires the item and the server is answered cancel", () =>
    Effect.gen(function*() {
      const { inbox, log, manager } = yield* hosted({ elicitationDeadline: "1 second" })
      const call = yield* Effect.fork(manager.call("mcp__elicit__confirm", {}))
      const item = yield* nextItem(inbox)
      assert.strictEqual(textOf(yield* Fiber.join(call)), "confirm: cancel")
      assert.deepStrictEqual((yield* log.list).filter((r) => r.id === item.id).map((r) => r.outcome), ["expired"])
    }))

  it.scopedLive("URL mode: the item carries the URL; accept is consent, and the server completes its flow", () =>
    Effect.gen(function*() {
      const { inbox, manager } = yield* hosted()
      const call = yield* Effect.fork(manager.call("mcp__elicit__url_flow", {}))
      const item = yield* nextItem(inbox)
      assert.isTrue(item._tag === "Elicitation" && item.mode === "url" && item.url?.startsWith("http://127.0.0.1:"))
      yield* inbox.resolve(item.id, new InboxItem.Accept({}))
      assert.match(textOf(yield* Fiber.join(call)), /^url_flow: accept, completed /)
    }))

  it.scopedLive("a server that does not wait: its item stays answerable, and stopping the server withdraws it", () =>
    Effect.gen(function*() {
      const { inbox, log, manager, record } = yield* hosted()
      assert.strictEqual(textOf(yield* manager.call("mcp__elicit__ask_and_leave", {})), "ask_and_leave: asked")
      const first = yield* nextItem(inbox)
      yield* inbox.resolve(first.id, new InboxItem.Decline())
      yield* eventuallyEffect(
        Effect.sync(() => readRecords(record).filter((r) => r.event === "answer" && r.tool === "ask_and_leave")),
        (found) => found.length === 1 && found[0]!.action === "decline",
        "the server to get the answer"
      )
      yield* manager.call("mcp__elicit__ask_and_leave", {})
      const second = yield* nextItem(inbox)
      yield* manager.setEnabled(ServerName.make("elicit"), false).pipe(Effect.orDie)
      const rows = yield* eventuallyEffect(
        Effect.map(log.list, (all) => all.filter((r) => r.id === second.id)),
        (found) => found.length > 0,
        "the second item's outcome"
      )
      assert.deepStrictEqual(rows.map((r) => r.outcome), ["withdrawn"])
      assert.deepStrictEqual(yield* inbox.list, [])
    }))

  it.scopedLive("over streamable HTTP too: server-everything's elicitation is an inbox item", () =>
    Effect.gen(function*() {
      const everything = yield* startEverything("streamableHttp")
      const { context, manager } = yield* startHostedManager(makeHome())
      const inbox = Context.get(context, Inbox)
      yield* manager.register(McpServerEntry.McpServerEntry.make({
        name: ServerName.make("every"),
        config: ServerConfig.HttpServerConfig.make({ url: everything.url }),
        enabled: true
      })).pipe(Effect.orDie)
      // Its elicitation tool is offered only to a client that declared elicitation.
      yield* eventuallyEffect(
        manager.tools,
        (tools) => tools.some((t) => t.name === "mcp__every__trigger-elicitation-request"),
        "the elicitation tool",
        "30 seconds"
      )
      const call = yield* Effect.fork(manager.call("mcp__every__trigger-elicitation-request", {}))
      const item = yield* nextItem(inbox)
      assert.deepStrictEqual(item.origin, { server: "every" })
      assert.isTrue(item._tag === "Elicitation" && item.mode === "form" && item.fields.length > 0)
      yield* inbox.resolve(item.id, new InboxItem.Decline())
      assert.include(textOf(yield* Fiber.join(call)), "declined")
    }))
})
