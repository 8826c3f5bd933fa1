/**
 * The repositories read rows through schemas: a row that does not match (written by hand, with
 * raw SQL, into a real SQLite file) is a typed `CorruptRow` error naming the table, the row and
 * the column — never a defect, and never quoting the value. A statement SQLite refuses is a
 * `DatabaseError` saying what was being done — never the SQL layer's `SqlError`. Their timestamps
 * are the Clock's.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { ServerName } from "@skald/domain"
import { EventRepo, HostError, McpServerRepo, StatusRepo } from "@skald/server"
import { Chunk, Context, Effect, Either, Fiber, Layer, Option, Stream, TestClock } from "effect"
import { commandEntry, servicesLayer, tempHome } from "./host-support.js"

const openAt = (home: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(servicesLayer(home))
    return {
      sql: Context.get(context, SqlClient.SqlClient),
      servers: Context.get(context, McpServerRepo.McpServerRepo),
      statuses: Context.get(context, StatusRepo.StatusRepo),
      events: Context.get(context, EventRepo.EventRepo)
    }
  })
const open = Effect.flatMap(tempHome, openAt)

const corruptRow = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.either(effect), (result) => {
    assert.isTrue(Either.isLeft(result), "a typed failure")
    const error = (result as Either.Left<E, A>).left as unknown as {
      _tag: string
      table: string
      key?: string
      columns: ReadonlyArray<string>
      message: string
    }
    assert.strictEqual(error._tag, "CorruptRow")
    return error
  })

/** The failure of `effect`: a `DatabaseError` (HostError.ts) of that operation, with what SQLite said. */
const databaseError = <A, E>(effect: Effect.Effect<A, E>, operation: string, reason: string, code: string) =>
  Effect.map(Effect.flip(effect), (error) => {
    assert.instanceOf(error, HostError.DatabaseError, `${operation}: ${String(error)}`)
    const e = error as unknown as HostError.DatabaseError
    assert.strictEqual(e.operation, operation)
    assert.include(e.reason, reason)
    assert.strictEqual(e.code, code)
    assert.include(e.message, `could not ${operation}: `)
    return e
  })

describe("repositories", () => {
  it.scoped("a server row whose env is not JSON is a CorruptRow naming the row and column, not the value", () =>
    Effect.gen(function*() {
      const { servers, sql } = yield* open
      yield* servers.upsert(commandEntry("good", "/bin/true", []))
      yield* servers.upsert(commandEntry("broken", "/bin/true", []))
      yield* sql`UPDATE mcp_servers SET env = ${"secret-ish not json"} WHERE name = 'broken'`

      const listed = yield* corruptRow(servers.list)
      assert.strictEqual(listed.table, "mcp_servers")
      assert.strictEqual(listed.key, "broken")
      assert.deepStrictEqual(listed.columns, ["env"])
      assert.notInclude(listed.message, "secret-ish")
      assert.include(listed.message, `"broken"`)

      const got = yield* corruptRow(servers.get(ServerName.make("broken")))
      assert.strictEqual(got.key, "broken")
      // The other rows stay readable one by one.
      assert.isTrue(Option.isSome(yield* servers.get(ServerName.make("good"))))
    }))

  it.scoped("a server row whose args are JSON of the wrong shape, or whose command is empty, is a CorruptRow", () =>
    Effect.gen(function*() {
      const { servers, sql } = yield* open
      yield* servers.upsert(commandEntry("a", "/bin/true", []))
      yield* servers.upsert(commandEntry("b", "/bin/true", []))
      yield* sql`UPDATE mcp_servers SET args = ${"{\"not\":\"a list\"}"} WHERE name = 'a'`
      yield* sql`UPDATE mcp_servers SET command = '' WHERE name = 'b'`
      const a = yield* corruptRow(servers.get(ServerName.make("a")))
      assert.deepStrictEqual(a.columns, ["args"])
      const b = yield* corruptRow(servers.get(ServerName.make("b")))
      assert.deepStrictEqual(b.columns, ["command"])
      assert.strictEqual((yield* corruptRow(servers.list)).key, "a")
    }))

  it.scoped("bad status, heartbeat, request and event rows are CorruptRow errors", () =>
    Effect.gen(function*() {
      const { events, sql, statuses } = yield* open
      yield* statuses.set({ name: "s", state: "connected", since: "2026-01-01T00:00:00.000Z" })
      // (The table's CHECK constraints refuse an unknown state or request kind: a wrong type gets in.)
      yield* sql`UPDATE mcp_server_status SET tool_count = 'many' WHERE name = 's'`
      const status = yield* corruptRow(statuses.all)
      assert.strictEqual(status.table, "mcp_server_status")
      assert.deepStrictEqual(status.columns, ["tool_count"])

      yield* sql`INSERT INTO host_heartbeat (id, pid, started_at, beat_at) VALUES (1, 'no pid', 'x', 'y')`
      assert.deepStrictEqual((yield* corruptRow(statuses.heartbeat)).columns, ["pid"])

      yield* sql`INSERT INTO host_requests (kind, name, requested_at) VALUES ('restart', 'x', 'now')`
      // (A TEXT column turns a number into text; a blob stays a blob.)
      yield* sql`UPDATE host_requests SET name = x'6869'`
      assert.deepStrictEqual((yield* corruptRow(statuses.takeRequests)).columns, ["name"])

      yield* events.insertAll([{
        server: "s",
        method: "event/x",
        params: { a: 1 },
        receivedAt: "2026-01-01T00:00:00.000Z"
      }])
      assert.deepStrictEqual((yield* events.list()).map((e) => e.params), [{ a: 1 }])
      yield* sql`UPDATE mcp_events SET params = '{oops'`
      const event = yield* corruptRow(events.list())
      assert.strictEqual(event.table, "mcp_events")
      assert.deepStrictEqual(event.columns, ["params"])
    }))

  it.scoped("a statement SQLite refuses is a DatabaseError naming the operation, SQLite's reason and code", () =>
    Effect.gen(function*() {
      const { events, servers, sql, statuses } = yield* open
      const kept = ServerName.make("kept")
      yield* servers.upsert(commandEntry("kept", "/bin/true", []))
      yield* statuses.set({ name: "kept", state: "connected", since: "2026-01-01T00:00:00.000Z" })
      // Real refusals by SQLite: triggers that abort every write, and a table that is gone.
      for (const table of ["mcp_servers", "mcp_server_status", "host_heartbeat", "host_requests"]) {
        for (const op of ["INSERT", "UPDATE", "DELETE"]) {
          yield* sql.unsafe(
            `CREATE TRIGGER refuse_${op}_${table} BEFORE ${op} ON ${table} BEGIN SELECT RAISE(ABORT, 'refused'); END`
          )
        }
      }
      yield* sql`DROP TABLE mcp_events`
      const refused = (effect: Effect.Effect<unknown, unknown>, operation: string) =>
        databaseError(effect, operation, "refused", "SQLITE_CONSTRAINT_TRIGGER")
      const since = "2026-01-01T00:00:00.000Z"
      yield* refused(servers.upsert(commandEntry("new", "/bin/true", [])), "store the registration of MCP server 'new'")
      yield* refused(servers.remove(kept), "remove the registration of MCP server 'kept'")
      yield* refused(servers.setEnabled(kept, false), "disable MCP server 'kept'")
      yield* refused(statuses.set({ name: "kept", state: "failed", since }), "record the status of MCP server 'kept'")
      yield* refused(statuses.remove("kept"), "remove the status of MCP server 'kept'")
      yield* refused(statuses.clear, "clear the servers' statuses")
      yield* refused(statuses.beat({ pid: 1, startedAt: since, beatAt: since }), "record the host's heartbeat")
      yield* refused(statuses.request("restart", "kept", since), "ask the running host to restart 'kept'")
      const gone = (effect: Effect.Effect<unknown, unknown>, operation: string) =>
        databaseError(effect, operation, "no such table: mcp_events", "SQLITE_ERROR")
      yield* gone(
        events.insertAll([{ server: "s", method: "event/x", params: {}, receivedAt: since }]),
        "store 1 MCP events"
      )
      yield* gone(events.list({ pending: true }), "read the MCP events")
      const marked = yield* gone(events.markProcessed([1]), "mark MCP events processed")
      assert.include(marked.message, "then try again")
      // What is only read still works.
      assert.deepStrictEqual((yield* servers.list).map((e) => e.name), ["kept"])
      assert.deepStrictEqual((yield* statuses.all).map((s) => s.state), ["connected"])
    }))

  it.scoped("stamps are the Clock's: created, updated, processed", () =>
    Effect.gen(function*() {
      const { events, servers, sql } = yield* open
      yield* TestClock.setTime(Date.parse("2030-05-06T07:08:09.010Z"))
      yield* servers.upsert(commandEntry("t", "/bin/true", []))
      yield* TestClock.adjust("1 second")
      yield* servers.setEnabled(ServerName.make("t"), false)
      const [row] = yield* sql<
        { created_at: string; updated_at: string }
      >`SELECT created_at, updated_at FROM mcp_servers`
      assert.deepStrictEqual(row, { created_at: "2030-05-06T07:08:09.010Z", updated_at: "2030-05-06T07:08:10.010Z" })
      yield* events.insertAll([{ server: "t", method: "event/x", params: undefined, receivedAt: "r" }])
      assert.strictEqual(yield* events.markProcessed([1]), 1)
      assert.strictEqual((yield* events.list())[0]?.processedAt, "2030-05-06T07:08:10.010Z")
    }))

  it.scoped("changes ticks for another connection's commits, not for its own; stamps follow updated_at", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const here = yield* openAt(home)
      const there = yield* openAt(home)
      const changes = yield* here.servers.changes("1 second")
      const ticks = yield* changes.pipe(Stream.take(2), Stream.runCollect, Effect.fork)
      // Its own write: no tick, whatever time passes.
      yield* here.servers.upsert(commandEntry("mine", "/bin/true", []))
      yield* TestClock.adjust("3 seconds")
      assert.isTrue(Option.isNone(yield* Fiber.poll(ticks)))
      // Another connection's: a tick at the next check, one per check that saw a commit.
      yield* there.servers.upsert(commandEntry("theirs", "/bin/true", []))
      yield* TestClock.adjust("1 second")
      yield* there.statuses.request("restart", "mine", "2026-01-01T00:00:00.000Z")
      yield* TestClock.adjust("1 second")
      assert.strictEqual(Chunk.size(yield* Fiber.join(ticks)), 2)
      const stamps = yield* here.servers.stamps
      assert.deepStrictEqual([...stamps.keys()], ["mine", "theirs"])
      assert.strictEqual(stamps.get("mine"), "1970-01-01T00:00:00.000Z")
      assert.strictEqual(stamps.get("theirs"), "1970-01-01T00:00:03.000Z")
    }))
})
