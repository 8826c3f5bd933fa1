/**
 * The database file before it is opened: a corrupt, a zero-byte and a non-SQLite file are refused
 * with their path and what to do (one stderr line, exit 2, the file left as it was); a missing one
 * is created. Real files, the real `skald` binary, and the host layer itself.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { assert, describe, it } from "@effect/vitest"
import * as Database from "@skald/server/host/Database"
import { Effect, Exit, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runSkald } from "./cli-support.js"
import { makeHome, servicesLayer } from "./host-support.js"

const dbOf = (home: string) => Path.join(home, "data", "skald.db")

/** A home whose database file has these bytes (a real database first, when `corrupt`). */
const homeWith = async (bytes: Buffer | "corrupt"): Promise<string> => {
  const home = makeHome()
  if (bytes === "corrupt") {
    assert.strictEqual((await runSkald(["mcp", "list", "--home", home])).status, 0)
    const file = Buffer.from(Fs.readFileSync(dbOf(home)))
    // Keep the 100-byte header (it still says SQLite), scramble every page after it.
    file.fill(0x5a, 100)
    Fs.writeFileSync(dbOf(home), file)
    for (const extra of ["-wal", "-shm"]) Fs.rmSync(`${dbOf(home)}${extra}`, { force: true })
  } else {
    Fs.mkdirSync(Path.join(home, "data"), { recursive: true })
    Fs.writeFileSync(dbOf(home), bytes)
  }
  return home
}

const cases: ReadonlyArray<readonly [string, () => Promise<string>, RegExp]> = [
  ["a corrupt database", () => homeWith("corrupt"), /corrupt|malformed/],
  ["a zero-byte file", () => homeWith(Buffer.alloc(0)), /empty \(0 bytes\)/],
  [
    "a file that is not SQLite",
    () => homeWith(Buffer.from("name,command\nweather,node weather.js\n")),
    /not a SQLite database/
  ]
]

describe("the database file", () => {
  for (const [what, make, reason] of cases) {
    it(`${what} is refused with its path and what to do, and left as it was`, async () => {
      const home = await make()
      const before = Fs.readFileSync(dbOf(home))
      for (const args of [["mcp", "list"], ["mcp", "list", "--json"], ["serve"]]) {
        const run = await runSkald([...args, "--home", home], { env: { SKALD_PORT: "0" } })
        assert.strictEqual(run.status, 2, `${args.join(" ")}: ${run.stderr}`)
        const lines = run.stderr.trim().split("\n")
        assert.strictEqual(lines.length, 1, run.stderr)
        assert.include(lines[0], dbOf(home))
        assert.match(lines[0]!, reason)
        assert.match(lines[0]!, /restore it from a backup/i)
        assert.include(lines[0], "move it aside")
        assert.notInclude(run.stderr, "unexpected failure")
        assert.strictEqual(run.stdout, "")
      }
      assert.deepStrictEqual(Fs.readFileSync(dbOf(home)), before, "the file was not touched")
    }, 180_000)
  }

  it.effect("the host layer fails with DatabaseUnusable naming the file", () =>
    Effect.gen(function*() {
      const home = yield* Effect.promise(() => homeWith(Buffer.alloc(0)))
      const exit = yield* Effect.exit(Layer.build(servicesLayer(home)).pipe(Effect.scoped))
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.instanceOf(error, Database.DatabaseUnusable)
      assert.strictEqual((error as Database.DatabaseUnusable).path, dbOf(home))
    }))

  it.effect("a database its migrations cannot be applied to is DatabaseUnusable, with SQLite's reason", () =>
    Effect.gen(function*() {
      // A real SQLite file that already has a table the first migration creates (made by another tool).
      const home = makeHome()
      Fs.mkdirSync(Path.join(home, "data"), { recursive: true })
      yield* Effect.flatMap(SqliteClient.SqliteClient, (sql) => sql`CREATE TABLE mcp_servers (x TEXT)`).pipe(
        Effect.provide(SqliteClient.layer({ filename: dbOf(home) })),
        Effect.orDie
      )
      const exit = yield* Effect.exit(Layer.build(servicesLayer(home)).pipe(Effect.scoped))
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.instanceOf(error, Database.DatabaseUnusable, String(exit))
      const e = error as Database.DatabaseUnusable
      assert.strictEqual(e.path, dbOf(home))
      assert.include(e.reason, "its migrations cannot be applied")
      assert.include(e.reason, "table mcp_servers already exists")
      assert.include(e.message, "Restore it from a backup")
    }))

  it.effect("the host's connection is in WAL mode with synchronous=NORMAL (a commit is not fsync-ed)", () =>
    Effect.gen(function*() {
      const sql = yield* SqliteClient.SqliteClient
      const [journal] = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
      const [sync] = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
      assert.strictEqual(journal?.journal_mode, "wal")
      // 1 = NORMAL (SQLite's default is 2, FULL).
      assert.strictEqual(sync?.synchronous, 1)
    }).pipe(Effect.provide(servicesLayer(makeHome())), Effect.scoped))

  it("a missing file is still created", async () => {
    const home = makeHome()
    const run = await runSkald(["mcp", "list", "--home", home])
    assert.strictEqual(run.status, 0, run.stderr)
    assert.strictEqual(Fs.readFileSync(dbOf(home)).subarray(0, 16).toString("latin1"), "SQLite format 3\0")
  }, 60_000)
})
