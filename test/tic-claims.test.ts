/**
 * The TIC's claims on pending events (issue 24, point 2; host/EventRepo.ts `claim`): a model-based
 * property over a real SQLite file opened by two connections (as two processes would), with
 * claimers on both. Claims, completions, renewals, releases, crashes (a claimer that forgets its
 * claim: its host died) and time passing (TestClock) in any order: every claim takes exactly the
 * oldest pending events no live claim holds — so no event is ever held by two live claims — a
 * completion processes exactly what its claim still holds, and in the end every event is processed,
 * each exactly once.
 */
import { assert, describe, it } from "@effect/vitest"
import { EventRepo, Paths } from "@skald/server"
import * as Database from "@skald/server/host/Database"
import { Context, Effect, FastCheck as fc, Layer, TestClock } from "effect"
import { tempHome } from "./host-support.js"

const LEASE = 1000
const EVENTS = 8
const CLAIMERS = 3

/** An EventRepo on its own connection to the home's database. */
const connection = (home: string) =>
  Layer.build(EventRepo.layer.pipe(Layer.provide(Database.layer), Layer.provide(Paths.Paths.Test(home)))).pipe(
    Effect.map((context) => Context.get(context, EventRepo.EventRepo))
  )

type Op =
  | { readonly op: "claim"; readonly who: number; readonly limit: number }
  | { readonly op: "complete" | "renew" | "release" | "crash"; readonly who: number }
  | { readonly op: "advance"; readonly ms: number }

const who = fc.integer({ min: 0, max: CLAIMERS - 1 })
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("claim" as const), who, limit: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ op: fc.constantFrom("complete" as const, "renew" as const, "release" as const, "crash" as const), who }),
  fc.record({ op: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 1500 }) })
)

describe("TIC claims", () => {
  it.effect.prop(
    "two connections, three claimers: never two live claims on an event; every event processed exactly once",
    { ops: fc.array(op, { minLength: 1, maxLength: 30 }) },
    ({ ops }) =>
      Effect.scoped(Effect.gen(function*() {
        const home = yield* tempHome
        const a = yield* connection(home)
        const b = yield* connection(home)
        // Claimers 0 and 1 share connection a (one process); claimer 2 is on b (another process).
        const repoOf = (c: number) => c === 2 ? b : a
        yield* a.insertAll(
          Array.from({ length: EVENTS }, (_, i) => ({
            server: i % 2 === 0 ? "demo" : "gone",
            method: "event/x",
            params: { i },
            receivedAt: "2026-12-02T00:00:00.000Z"
          }))
        )
        const ids = (yield* a.list()).map((e) => e.id)
        // The model: each row's claim and status; each claimer's token (forgotten on a crash).
        const rows = new Map(ids.map((id) => [id, { token: undefined as string | undefined, until: 0, done: 0 }]))
        const tokens: Array<string | undefined> = Array.from({ length: CLAIMERS }, () => undefined)
        let now = 0
        let serial = 0
        const live = (r: { token: string | undefined; until: number }) => r.token !== undefined && r.until > now

        for (const o of ops) {
          switch (o.op) {
            case "advance":
              yield* TestClock.adjust(o.ms)
              now += o.ms
              break
            case "claim": {
              if (tokens[o.who] !== undefined) break
              const token = `t${serial++}`
              const expected = ids.filter((id) => rows.get(id)!.done === 0 && !live(rows.get(id)!)).slice(0, o.limit)
              const got = (yield* repoOf(o.who).claim({ token, limit: o.limit, leaseMillis: LEASE })).map((e) => e.id)
              assert.deepStrictEqual(got, expected, "a claim takes the oldest free pending events")
              for (const id of got) Object.assign(rows.get(id)!, { token, until: now + LEASE })
              if (got.length > 0) tokens[o.who] = token
              break
            }
            case "renew": {
              const token = tokens[o.who]
              if (token === undefined) break
              const held = ids.filter((id) => rows.get(id)!.token === token && rows.get(id)!.done === 0)
              assert.strictEqual(yield* repoOf(o.who).renew(token, LEASE), held.length)
              for (const id of held) rows.get(id)!.until = now + LEASE
              break
            }
            case "complete": {
              const token = tokens[o.who]
              if (token === undefined) break
              const held = ids.filter((id) => rows.get(id)!.token === token && rows.get(id)!.done === 0)
              assert.deepStrictEqual(yield* repoOf(o.who).complete(token), held)
              for (const id of held) Object.assign(rows.get(id)!, { token: undefined, done: rows.get(id)!.done + 1 })
              tokens[o.who] = undefined
              break
            }
            case "release": {
              const token = tokens[o.who]
              if (token === undefined) break
              yield* repoOf(o.who).release(token)
              for (const r of rows.values()) if (r.token === token && r.done === 0) r.token = undefined
              tokens[o.who] = undefined
              break
            }
            case "crash":
              tokens[o.who] = undefined
              break
          }
        }
        // Every claim of a claimer that died expires; then one claimer drains what is left.
        yield* TestClock.adjust(LEASE)
        for (const t of tokens) if (t !== undefined) yield* a.complete(t)
        for (let guard = 0; guard <= EVENTS; guard++) {
          const token = `drain${guard}`
          if ((yield* b.claim({ token, limit: 3, leaseMillis: LEASE })).length === 0) break
          yield* b.complete(token)
        }
        const events = yield* a.list()
        assert.deepStrictEqual(events.map((e) => e.status), ids.map(() => "processed"))
        assert.strictEqual(yield* b.pendingCount, 0)
        for (const r of rows.values()) assert.isAtMost(r.done, 1, "no event processed twice in the model")
      })),
    { fastCheck: { numRuns: 30 } }
  )

  it.effect("a claim's cut keeps a prefix; the rest stays free for the next claimer", () =>
    Effect.scoped(Effect.gen(function*() {
      const home = yield* tempHome
      const a = yield* connection(home)
      const b = yield* connection(home)
      yield* a.insertAll(Array.from({ length: 5 }, (_, i) => ({
        server: "s",
        method: "event/x",
        params: { i },
        receivedAt: "2026-12-02T00:00:00.000Z"
      })))
      const first = yield* a.claim({ token: "one", limit: 4, leaseMillis: LEASE, cut: () => 2 })
      assert.deepStrictEqual(first.map((e) => e.params), [{ i: 0 }, { i: 1 }])
      const second = yield* b.claim({ token: "two", limit: 10, leaseMillis: LEASE })
      assert.deepStrictEqual(second.map((e) => e.params), [{ i: 2 }, { i: 3 }, { i: 4 }])
      assert.deepStrictEqual(yield* b.claim({ token: "three", limit: 10, leaseMillis: LEASE }), [])
    })))
})
