/**
 * The manager's time is Effect's `Clock`: under `TestClock` (which starts at the epoch) its
 * restart backoff waits exactly as long as the clock is moved, the status and `nextRetryAt` carry
 * the clock's time, and the heartbeat beats on the clock's ticks. Real processes, a real database;
 * only the sleeps are the test's.
 */
import { assert, describe, it } from "@effect/vitest"
import type { McpServerEntry } from "@skald/domain"
import { StatusRepo } from "@skald/server"
import { Context, Effect, Option, TestClock, TestServices } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { commandEntry, startManager, tempHome } from "./host-support.js"

/** Real time passing (the test clock stands still): lets processes and the database do their work. */
const liveSleep = (millis: number) => TestServices.provideLive(Effect.sleep(millis))

/** Polls (in real time, up to 30 s) until `check` holds of server `name`'s summary. */
const waitFor = (
  list: Effect.Effect<ReadonlyArray<McpServerEntry.ServerSummary>, unknown>,
  name: string,
  check: (s: McpServerEntry.ServerSummary | undefined) => boolean,
  what: string
) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1500; i++) {
      const found = (yield* Effect.orDie(list)).find((s) => s.name === name)
      if (check(found)) return found!
      yield* liveSleep(20)
    }
    return yield* Effect.dieMessage(`gave up waiting for ${name}: ${what}`)
  })

const failuresIn = (home: string, name: string) =>
  (Fs.existsSync(Path.join(home, `logs/mcp/${name}.log`))
    ? Fs.readFileSync(Path.join(home, `logs/mcp/${name}.log`), "utf8")
    : "").split("\n").filter((l) => l.includes("[lifecycle]  failed to start:")).length

const iso = (millis: number) => new Date(millis).toISOString()

describe("manager timing on the Clock", () => {
  it.scoped(
    "the backoff sleeps on the Clock; statuses, nextRetryAt and the heartbeat carry its time",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const { context, manager } = yield* startManager(home, {
          restartBase: "1 second",
          restartMax: "4 seconds",
          heartbeatInterval: "5 seconds",
          watchInterval: "10 seconds"
        })
        const statuses = Context.get(context, StatusRepo.StatusRepo)
        const beatAt = Effect.map(statuses.heartbeat, Option.map((h) => h.beatAt))
        // The first beat, at the clock's start (the epoch), not the wall clock's.
        assert.deepStrictEqual(yield* beatAt, Option.some(iso(0)))

        yield* manager.register(commandEntry("bad", "/nonexistent/skald-clock-command", []))
        const attempt = (n: number) => (s: McpServerEntry.ServerSummary | undefined) =>
          s?.state === "failed" && s.error?.includes(`(attempt ${n})`) === true
        const first = yield* waitFor(manager.list, "bad", attempt(1), "attempt 1")
        assert.strictEqual(first.since, iso(0))
        assert.strictEqual(first.nextRetryAt, iso(1000))
        assert.include(first.error, "restarting in 1s (attempt 1)")

        // Just short of the delay: no new start, whatever real time passes.
        for (let i = 0; i < 500 && failuresIn(home, "bad") < 1; i++) yield* liveSleep(20)
        yield* TestClock.adjust("999 millis")
        yield* liveSleep(300)
        assert.strictEqual(failuresIn(home, "bad"), 1)
        assert.isTrue(attempt(1)((yield* manager.list).find((s) => s.name === "bad")))

        // The delay reached: the second start, then 2 s (doubled).
        yield* TestClock.adjust("1 millis")
        const second = yield* waitFor(manager.list, "bad", attempt(2), "attempt 2")
        assert.strictEqual(second.since, iso(1000))
        assert.strictEqual(second.nextRetryAt, iso(3000))
        assert.include(second.error, "restarting in 2s (attempt 2)")

        yield* TestClock.adjust("2 seconds")
        const third = yield* waitFor(manager.list, "bad", attempt(3), "attempt 3")
        assert.strictEqual(third.nextRetryAt, iso(7000))

        // Capped at restartMax (4 s, not 8 s).
        yield* TestClock.adjust("4 seconds")
        const fourth = yield* waitFor(manager.list, "bad", attempt(4), "attempt 4")
        assert.strictEqual(fourth.since, iso(7000))
        assert.strictEqual(fourth.nextRetryAt, iso(11_000))
        assert.include(fourth.error, "restarting in 4s (attempt 4)")
        // (The log writer is asynchronous: its lines may come a moment after the status.)
        for (let i = 0; i < 500 && failuresIn(home, "bad") < 4; i++) yield* liveSleep(20)
        assert.strictEqual(failuresIn(home, "bad"), 4)

        // The heartbeat beat at 5 s (and only then) while the clock went to 7 s.
        assert.deepStrictEqual(yield* beatAt, Option.some(iso(5000)))
        yield* TestClock.adjust("3 seconds")
        for (let i = 0; i < 500 && Option.getOrUndefined(yield* beatAt) !== iso(10_000); i++) yield* liveSleep(20)
        assert.deepStrictEqual(yield* beatAt, Option.some(iso(10_000)))
        // The log's timestamps are the clock's too.
        for (
          let i = 0;
          i < 500 && !Fs.readFileSync(Path.join(home, "logs/mcp/bad.log"), "utf8").includes("attempt 4");
          i++
        ) {
          yield* liveSleep(20)
        }
        const log = Fs.readFileSync(Path.join(home, "logs/mcp/bad.log"), "utf8")
        assert.include(log, `${iso(7000)} [lifecycle]  restarting in 4s (attempt 4)`)
      }),
    120_000
  )
})
