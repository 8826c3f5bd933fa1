/**
 * The TIC agent through the real binary (issue 24): `skald serve` ticks every SKALD_TIC_INTERVAL
 * with the stand-in model over HTTP; a host killed (SIGKILL) mid-turn leaves its batch claimed
 * until the lease runs out, then the restarted host processes the same events once more — and never
 * again (`skald tic run` through the host finds nothing); the model's `notify` is in the host's
 * inbox (`skald inbox`). Without a host, two `skald tic run` at once never take the same events.
 */
import { assert, describe, it } from "@effect/vitest"
import { EventRepo } from "@skald/server"
import * as RpcHost from "@skald/server/cli/RpcHost"
import { Context, Effect, Layer } from "effect"
import { runSkald, startServe, stopProcess } from "./cli-support.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { makeHome, servicesLayer } from "./host-support.js"
import { modelEnv } from "./serve-support.js"
import { eventuallyEffect } from "./support.js"

/** Runs `f` over the home's EventRepo in this process (no host holds it open meanwhile, or one does: both are fine). */
const withRepo = <A, E>(home: string, f: (repo: EventRepo.Service) => Effect.Effect<A, E>) =>
  Effect.scoped(
    Effect.flatMap(Layer.build(servicesLayer(home)), (context) => f(Context.get(context, EventRepo.EventRepo)))
  ).pipe(Effect.orDie)

const event = (i: number) => ({
  server: i % 2 === 0 ? "mail" : "deleted-server",
  method: "event/new_email",
  params: { subject: `message ${i}` },
  receivedAt: "2026-12-02T00:00:00.000Z"
})

/** The user message of a recorded chat-completions request. */
const userText = (request: ModelStandin.RecordedRequest): string =>
  JSON.stringify(
    (request.body as { messages: Array<{ role: string; content: unknown }> }).messages.filter((m) => m.role === "user")
  )

describe("skald tic", () => {
  it.scopedLive(
    "a host killed mid-turn: after restart the same events are processed once more, then never again",
    () =>
      Effect.gen(function*() {
        const home = makeHome()
        yield* withRepo(home, (repo) => repo.insertAll([event(1), event(2), event(3)]))
        const standin = yield* ModelStandin.start([
          { events: [], hang: true },
          ModelStandin.toolCalls([{
            id: "n1",
            name: "notify",
            arguments: { briefing: "Three new emails; message 2 needs an answer.", title: "New mail" }
          }]),
          ModelStandin.text("Read 3 events; notified 1.")
        ])
        const env = { ...modelEnv(standin.url), SKALD_TIC_INTERVAL: "0.5", SKALD_TIC_LEASE: "2" }
        const first = yield* Effect.promise(() => startServe(home, env))
        yield* standin.awaitRequests(1).pipe(Effect.timeout("60 seconds"), Effect.orDie)
        const exited = new Promise((resolve) => first.child.once("exit", resolve))
        first.child.kill("SIGKILL")
        yield* Effect.promise(() => exited)
        assert.strictEqual((yield* withRepo(home, (repo) => repo.list({ pending: true }))).length, 3)

        const second = yield* Effect.acquireRelease(
          Effect.promise(() => startServe(home, env)),
          (s) => Effect.promise(() => stopProcess(s.child))
        )
        const rows = yield* eventuallyEffect(
          withRepo(home, (repo) => repo.list()),
          (l) => l.every((e) => e.status === "processed"),
          "the events processed after the restart",
          "60 seconds"
        )
        assert.strictEqual(rows.length, 3)
        assert.strictEqual(standin.requests.length, 3)
        // The same batch both times: the dead host's turn, then the new host's.
        for (const i of [0, 1]) {
          const text = userText(standin.requests[i]!)
          assert.include(text, "Pending events: 3")
          for (const n of [1, 2, 3]) assert.include(text, `message ${n}`)
        }
        const client = yield* RpcHost.connectTo(second.url, undefined)
        const items = yield* client.Inbox.List()
        assert.deepStrictEqual(
          items.map((i) => i._tag === "Notification" ? [i.title, i.body] : [i._tag]),
          [["New mail", "Three new emails; message 2 needs an answer."]]
        )
        const listed = yield* Effect.promise(() => runSkald(["inbox", "--home", home]))
        assert.strictEqual(listed.status, 0, listed.stderr)
        assert.include(listed.stdout, "New mail")
        // Never again: a tick now, through the host, finds nothing and asks the model nothing.
        const run = yield* Effect.promise(() => runSkald(["tic", "run", "--json", "--home", home]))
        assert.strictEqual(run.status, 0, run.stderr)
        const report = JSON.parse(run.stdout)
        assert.strictEqual(report.outcome, "idle")
        assert.strictEqual(report.pending, 0)
        assert.strictEqual(standin.requests.length, 3)
      }),
    { timeout: 180_000 }
  )

  it.scopedLive(
    "without a host: two `skald tic run` at once take disjoint batches; text output names what was done",
    () =>
      Effect.gen(function*() {
        const home = makeHome()
        yield* withRepo(home, (repo) => repo.insertAll([1, 2, 3, 4, 5, 6].map(event)))
        const standin = yield* ModelStandin.start(() => ({
          ...ModelStandin.text(["Nothing ", "needs ", "the ", "person."]),
          eventDelay: 150
        }))
        const env = { ...modelEnv(standin.url), SKALD_TIC_BATCH_EVENTS: "3" }
        const [a, b] = yield* Effect.promise(() =>
          Promise.all([
            runSkald(["tic", "run", "--json", "--home", home], { env }),
            runSkald(["tic", "run", "--json", "--home", home], { env })
          ])
        )
        assert.strictEqual(a.status, 0, a.stderr)
        assert.strictEqual(b.status, 0, b.stderr)
        const ra = JSON.parse(a.stdout)
        const rb = JSON.parse(b.stdout)
        assert.strictEqual(ra.outcome, "done")
        assert.strictEqual(rb.outcome, "done")
        assert.strictEqual(ra.processed.length, 3)
        assert.strictEqual(rb.processed.length, 3)
        const all = [...ra.processed, ...rb.processed]
        assert.strictEqual(new Set(all).size, 6, "no event in both batches")
        assert.strictEqual((yield* withRepo(home, (repo) => repo.list({ pending: true }))).length, 0)

        const requests = standin.requests.length
        // Nothing pending: nothing starts and the model is not asked (none is even needed).
        const idle = yield* Effect.promise(() =>
          runSkald(["tic", "run", "--home", home], { env: { SKALD_LLM_MODEL: "" } })
        )
        assert.strictEqual(idle.status, 0, idle.stderr)
        assert.strictEqual(idle.stdout, "nothing to process: no pending events\n")
        assert.strictEqual(standin.requests.length, requests)
      }),
    { timeout: 120_000 }
  )
})
