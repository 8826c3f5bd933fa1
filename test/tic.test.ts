/**
 * The TIC agent in-process (issue 24): a real home (SQLite), the real turn loop with the `tic`
 * agent's prompt, a scripted model. TestClock drives the interval; the model's `notify` lands in
 * the inbox and the batch is processed; `notify` is the tic agent's only; 10,000 pending events
 * drain in batches bounded by count, and by tokens; events of a server that is not registered are
 * processed like the others; the demo server's ticking events and the Google Calendar server's
 * poller (against its stand-in) feed a tick.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import { EventRepo, type McpManager } from "@skald/server"
import { Agent } from "@skald/server/agent/Agent"
import * as Batch from "@skald/server/tic/Batch"
import * as Tic from "@skald/server/tic/Tic"
import { Context, Effect, Layer, Stream, TestClock } from "effect"
import { countTokens } from "gpt-tokenizer"
import { makeHome, startManager, waitForState } from "./host-support.js"
import { demoCommand } from "./servers/demo-support.js"
import { awaitPolls, pollRequests, secretsDir, serverCommand, standIn, writeCreds } from "./servers/gcal-support.js"
import { eventuallyEffect } from "./support.js"
import { agentOver, events as turnEvents } from "./support/agent.js"
import * as Scripted from "./support/scripted-model.js"

const event = (server: string, i: number, params: unknown = { i }) => ({
  server,
  method: "event/test",
  params,
  receivedAt: "2026-12-02T00:00:00.000Z"
})

/** A home, its manager, the loop over `script`, and a TIC over them. */
const ticOver = (
  script: ReadonlyArray<Scripted.Round>,
  options: Tic.Options = {},
  managerOptions: Partial<McpManager.Options> = {}
) =>
  Effect.gen(function*() {
    const { context, manager } = yield* startManager(makeHome(), managerOptions)
    const { agent, inbox, model } = yield* agentOver(context, script, { alwaysOffered: [] })
    const built = yield* Layer.build(
      Tic.Tic.Default({ interval: 0, ...options }).pipe(
        Layer.provide(Tic.agentLayer),
        Layer.provide(Layer.succeedContext(Context.add(context, Agent, agent)))
      )
    )
    return {
      tic: Context.get(built, Tic.Tic),
      repo: Context.get(context, EventRepo.EventRepo),
      agent,
      inbox,
      model,
      manager
    }
  })

/** Yields until `probe` passes (fibers the TestClock released do their work), a bounded number of times. */
const settled = <A, E>(probe: Effect.Effect<A, E>, ok: (a: A) => boolean, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 10_000; i++) {
      const a = yield* probe
      if (ok(a)) return a
      yield* Effect.yieldNow()
    }
    return assert.fail(`never settled: ${what}`)
  })

const notifyCall = (briefing: string, title?: string) =>
  Scripted.calls([{ id: "n1", name: "notify", params: title === undefined ? { briefing } : { briefing, title } }])

describe("the TIC agent", () => {
  it.scoped("TestClock drives the interval: nothing before it, then one tick notifies and processes the batch", () =>
    Effect.gen(function*() {
      const { inbox, model, repo } = yield* ticOver(
        [
          notifyCall("Ana asks to move Monday's planning to 10:00.\nAnswer her today.", "Planning moved?"),
          Scripted.answer("Read 2 events; notified 1.")
        ],
        { interval: "15 minutes" },
        { watchInterval: "1 day", heartbeatInterval: "1 day" }
      )
      yield* repo.insertAll([event("mail", 1, { from: "ana", subject: "planning" }), event("gone", 2)])
      yield* TestClock.adjust("14 minutes")
      yield* Effect.yieldNow()
      assert.strictEqual(yield* model.rounds, 0, "no tick before the interval")
      assert.strictEqual((yield* repo.list({ pending: true })).length, 2)

      yield* TestClock.adjust("1 minute")
      const items = yield* settled(inbox.list, (l) => l.length === 1, "the notification")
      const item = items[0]!
      assert.strictEqual(item._tag, "Notification")
      if (item._tag !== "Notification") return
      assert.strictEqual(item.title, "Planning moved?")
      assert.strictEqual(item.body, "Ana asks to move Monday's planning to 10:00.\nAnswer her today.")
      assert.strictEqual(item.origin.tool, "notify")
      yield* settled(repo.list({ pending: true }), (l) => l.length === 0, "the batch processed")
      // The turn's message was the batch; `notify` was offered to the tic agent.
      const first = (yield* model.recorded)[0]!
      assert.include(first.tools, "notify")
      const text = JSON.stringify(first.messages)
      assert.include(text, "Pending events: 2")
      assert.include(text, `mail event/test {\\"from\\":\\"ana\\",\\"subject\\":\\"planning\\"}`)
      // The system prompt is agents/tic/AGENT.md's, with the servers list.
      assert.include(JSON.stringify(first.messages[0]), "tic agent")
      // The next interval finds nothing: no turn.
      yield* TestClock.adjust("15 minutes")
      yield* Effect.yieldNow()
      assert.strictEqual(yield* model.rounds, 2)
    }))

  it.scoped("notify is offered to the tic agent only; a failed turn leaves its events pending and free", () =>
    Effect.gen(function*() {
      const { agent, model, repo, tic } = yield* ticOver([
        Scripted.answer("Hello."),
        Scripted.fail("the model server answered 503")
      ])
      yield* turnEvents(agent.run({ message: "hi" }))
      assert.notInclude((yield* model.recorded)[0]!.tools, "notify")
      yield* repo.insertAll([event("s", 1)])
      const report = yield* tic.tick
      assert.strictEqual(report.outcome, "failed")
      assert.include(report.problem ?? "", "503")
      assert.deepStrictEqual(report.processed, [])
      assert.strictEqual(report.pending, 1)
      // Released: another claimer takes it at once.
      assert.strictEqual((yield* repo.claim({ token: "x", limit: 10, leaseMillis: 1000 })).length, 1)
    }))

  it.scoped("10,000 pending events drain in batches bounded by count", () =>
    Effect.gen(function*() {
      const ticks = 10_000 / 400
      const { repo, tic } = yield* ticOver(
        Array.from({ length: ticks }, () => Scripted.answer("Nothing to do.")),
        { batchEvents: 400, batchTokens: 1_000_000 }
      )
      yield* repo.insertAll(Array.from({ length: 10_000 }, (_, i) => event(i % 3 === 0 ? "gone" : "demo", i)))
      const reports = []
      for (let n = 0; n <= ticks; n++) {
        const report = yield* tic.tick
        if (report.outcome === "idle") break
        reports.push(report)
      }
      assert.strictEqual(reports.length, ticks)
      for (const r of reports) {
        assert.strictEqual(r.outcome, "done")
        assert.strictEqual(r.claimed.length, 400)
        assert.deepStrictEqual(r.processed, r.claimed)
      }
      const all = reports.flatMap((r) => r.processed)
      assert.strictEqual(new Set(all).size, 10_000)
      assert.deepStrictEqual(all, [...all].sort((a, b) => a - b), "oldest first")
      assert.strictEqual((yield* repo.list({ pending: true })).length, 0)
      assert.strictEqual(reports.at(-1)!.pending, 0)
    }), { timeout: 120_000 })

  it.scoped(
    "batches bounded by tokens: each fits the budget (a lone event over it is cut); the rest waits",
    () =>
      Effect.gen(function*() {
        const budget = 600
        const { model, repo, tic } = yield* ticOver(
          Array.from({ length: 40 }, () => Scripted.answer("Nothing to do.")),
          { batchEvents: 1000, batchTokens: budget }
        )
        const words = (n: number) => Array.from({ length: n }, (_, k) => `word${k}`).join(" ")
        yield* repo.insertAll([
          ...Array.from({ length: 30 }, (_, i) => event("mail", i, { body: words(20 + (i % 7) * 5) })),
          event("mail", 99, { body: words(2000) })
        ])
        const stored = yield* repo.list()
        const byId = new Map(stored.map((e) => [e.id, e]))
        const sizes: Array<number> = []
        for (let n = 0; n < 40; n++) {
          const report = yield* tic.tick
          if (report.outcome === "idle") break
          const tokens = report.claimed.reduce((sum, id) => sum + countTokens(Batch.lineOf(byId.get(id)!)) + 1, 0)
          if (report.claimed.length > 1) assert.isAtMost(tokens, budget)
          sizes.push(report.claimed.length)
        }
        assert.isAbove(sizes.length, 2, "more than one batch")
        assert.strictEqual(sizes.reduce((a, b) => a + b, 0), 31)
        assert.strictEqual(sizes.at(-1), 1, "the oversized event alone, last")
        const last = JSON.stringify((yield* model.recorded).at(-1)!.messages)
        assert.include(last, "more tokens]")
        assert.isAtMost(countTokens(last), budget * 3)
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "the demo server's ticks and the Calendar poller's new event feed a tick; notify lands in the inbox",
    () =>
      Effect.gen(function*() {
        const google = yield* standIn()
        const dir = yield* secretsDir
        writeCreds(dir, google)
        const { inbox, manager, model, repo, tic } = yield* ticOver([
          Scripted.calls([{ id: "a1", name: "notify", params: { briefing: "New calendar event: Planning." } }]),
          Scripted.answer("Read the ticks and one calendar event; notified 1.")
        ])
        const demo = demoCommand(undefined, ["--tick-seconds", "0.2"])
        const gcal = serverCommand(google, dir, { GCAL_POLL_SECONDS: "0.2" })
        for (const [name, c] of [["demo", demo], ["gcal", gcal]] as const) {
          yield* Effect.orDie(manager.register(McpServerEntry.McpServerEntry.make({
            name: ServerName.make(name),
            config: ServerConfig.StdioServerConfig.make({ command: c.command, args: [...c.args], env: { ...c.env } }),
            enabled: true
          })))
          yield* waitForState(manager, name, "connected")
        }
        yield* awaitPolls(google, 0, 1, "the baseline poll")
        google.addEvent("primary", {
          summary: "Planning",
          start: { dateTime: "2038-02-01T09:00:00+01:00" },
          end: { dateTime: "2038-02-01T10:00:00+01:00" }
        })
        const pending = yield* eventuallyEffect(
          repo.list({ pending: true }),
          (l) =>
            l.some((e) => e.method === "event/new_calendar_event") &&
            l.filter((e) => e.method === "event/demo_tick").length >= 2,
          "demo ticks and a calendar event",
          "30 seconds"
        )
        assert.isAbove(pollRequests(google).length, 0)
        const report = yield* tic.tick
        assert.strictEqual(report.outcome, "done")
        assert.includeMembers([...report.claimed], pending.map((e) => e.id))
        assert.deepStrictEqual(report.processed, report.claimed)
        assert.strictEqual(report.notified.length, 1)
        assert.strictEqual(report.notified[0]!.body, "New calendar event: Planning.")
        const message = JSON.stringify((yield* model.recorded)[0]!.messages)
        assert.include(message, "demo event/demo_tick")
        assert.include(message, "gcal event/new_calendar_event")
        assert.include(message, "Planning")
        const items = yield* inbox.list
        assert.deepStrictEqual(items.map((i) => i._tag === "Notification" ? i.body : i._tag), [
          "New calendar event: Planning."
        ])
        const rows = yield* repo.list()
        for (const id of report.processed) assert.strictEqual(rows.find((r) => r.id === id)!.status, "processed")
        const drained = yield* Stream.runCollect(Stream.take(inbox.watch, 1))
        assert.strictEqual(drained.length, 1)
      }),
    { timeout: 90_000 }
  )
})
