/**
 * Property tests of the turn loop's stop and lock, with a scripted model and (for the calls) the
 * real cancel fixture through the manager:
 * - any interleaving of a stop with the tool calls' completions leaves a valid history (every
 *   assistant tool call has exactly one result, in order), no call `running`, every abandoned
 *   request cancelled on the server;
 * - replay equals live: the next turn's prompt, rebuilt from the rows, is what was sent live;
 * - the session's lock is released on every exit — an answer, a failed model, a stop, the
 *   consumer going away — and a turn on a busy session is refused with `SessionBusy`.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import type { TurnEvent } from "@skald/domain"
import type { McpManager, McpServerRepo, Registration, SecretStore } from "@skald/server"
import { SessionBusy } from "@skald/server/agent/Agent"
import * as History from "@skald/server/agent/History"
import { Context, Effect, FastCheck as fc, Fiber, Layer, Ref, Schedule, Stream } from "effect"
import { fixtureEntry, makeHome, startManager, waitForState } from "./host-support.js"
import { readRecords, tempFile } from "./support.js"
import { agentOver, encoded, events, startAgent } from "./support/agent.js"
import * as Scripted from "./support/scripted-model.js"

const last = <A>(list: ReadonlyArray<A>): A => list[list.length - 1]!

/** One manager with the cancel fixture, shared by the runs (each run has its own sessions and model). */
class Shared extends Context.Tag("test/agent-stop/Shared")<Shared, {
  readonly context: Context.Context<
    | McpManager.McpManager
    | SqlClient.SqlClient
    | McpServerRepo.McpServerRepo
    | Registration.Registration
    | SecretStore.SecretStore
  >
  readonly record: string
  readonly mark: Effect.Effect<void>
}>() {}

const SharedLive = Layer.scoped(
  Shared,
  Effect.gen(function*() {
    const record = tempFile("agent-stop")
    const { context, manager } = yield* startManager(makeHome())
    yield* Effect.orDie(manager.register(fixtureEntry("cancel", "cancel", { FIXTURE_RECORD: record })))
    yield* waitForState(manager, "cancel", "connected")
    return {
      context,
      record,
      mark: Effect.asVoid(Effect.orDie(manager.call("mcp__cancel__mark")))
    }
  })
)

const callKind = fc.constantFrom("quick" as const, "wait" as const)
const scenario = fc.record({
  kinds: fc.array(callKind, { minLength: 1, maxLength: 4 }),
  say: fc.array(fc.constantFrom("a", "bc", "déf "), { maxLength: 3 }),
  stopAfter: fc.nat({ max: 40 })
})

layer(SharedLive, { excludeTestServices: true })("agent stop", (it) => {
  it.scoped.prop(
    "any interleaving of a stop with tool completions leaves a valid history",
    [scenario],
    ([{ kinds, say, stopAfter }]) =>
      Effect.gen(function*() {
        const shared = yield* Shared
        const calls = kinds.map((kind, i) => ({ id: `call-${i}`, name: `mcp__cancel__${kind}` }))
        const { agent, store } = yield* agentOver(shared.context, [
          [...(say.length === 0 ? [] : Scripted.text(...say)), ...Scripted.calls(calls)],
          Scripted.answer("all done")
        ])
        const hangs = kinds.includes("wait")
        // The events a turn shows before it can only wait (when a call hangs), or all of them.
        const reachable = 1 + say.length + kinds.length + kinds.filter((k) => k === "quick").length
        const stopAt = hangs ? 1 + (stopAfter % reachable) : 1 + stopAfter

        const seen = yield* Ref.make<ReadonlyArray<TurnEvent.TurnEvent>>([])
        const stopper = yield* Ref.make<Fiber.RuntimeFiber<boolean> | undefined>(undefined)
        yield* Stream.runForEach(agent.run({ message: "go" }), (event) =>
          Effect.gen(function*() {
            const all = yield* Ref.updateAndGet(seen, (list) => [...list, event])
            if (all.length === stopAt) {
              const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
              yield* Ref.set(stopper, yield* Effect.fork(agent.stop(sessionId)))
            }
          }))
        const all = yield* Ref.get(seen)
        const fiber = yield* Ref.get(stopper)
        if (fiber !== undefined) yield* Fiber.join(fiber)
        const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
        const end = last(all)

        assert.include(["TurnDone", "TurnStopped"], end._tag)
        if (hangs) assert.strictEqual(end._tag, "TurnStopped")
        assert.isFalse(yield* agent.isBusy(sessionId))
        // Every started call ended exactly once.
        const started = all.flatMap((e) => (e._tag === "ToolStarted" ? [e.callId] : []))
        const ended = all.flatMap((e) => (e._tag === "ToolDone" ? [e.callId] : []))
        assert.deepStrictEqual([...ended].sort(), [...started].sort())

        const rows = yield* store.history(sessionId)
        const stored = rows.flatMap((r) => r.calls)
        assert.isTrue(stored.every((c) => c.status !== "running"), "no call is left running")
        // Every call that started is stored with its message (written while the calls run, stopped or not).
        const storedIds = new Set(stored.map((c) => c.callId))
        assert.isTrue(started.every((id) => storedIds.has(id)), `started ${started} but stored ${[...storedIds]}`)
        for (const c of stored) {
          if (c.name === "mcp__cancel__wait") assert.strictEqual(c.status, "cancelled")
          else assert.include(["done", "cancelled"], c.status)
        }
        assert.strictEqual(History.problemOf(History.replay(rows)), undefined)

        // Every wait the server started was cancelled (it is told, in order, before `mark` answers).
        yield* shared.mark
        const records = readRecords(shared.record)
        const waits = records.filter((r) => r.event === "started" && r.tool === "wait").map((r) => r.requestId)
        const cancelled = new Set(records.filter((r) => r.event === "cancelled").map((r) => r.requestId))
        assert.isTrue(waits.every((id) => cancelled.has(id)), "every started wait was cancelled")
      }),
    { fastCheck: { numRuns: 40 } }
  )

  const round = fc.record({
    say: fc.string({ unit: "grapheme", maxLength: 12 }),
    quick: fc.integer({ min: 1, max: 3 })
  })

  it.scoped.prop(
    "the next turn's prompt, replayed from the rows, is exactly what the last round was sent live, plus its answer",
    [fc.array(round, { minLength: 1, maxLength: 4 }), fc.string({ unit: "grapheme", maxLength: 12 })],
    ([rounds, final]) =>
      Effect.gen(function*() {
        const shared = yield* Shared
        let n = 0
        const script: Array<Scripted.Round> = rounds.map((r) => [
          ...(r.say.length === 0 ? [] : Scripted.text(r.say)),
          ...Scripted.calls(Array.from({ length: r.quick }, () => ({ id: `q${n++}`, name: "mcp__cancel__quick" })))
        ])
        script.push(final.length === 0 ? [Scripted.finish()] : Scripted.answer(final), Scripted.answer("bye"))
        const { agent, model } = yield* agentOver(shared.context, script)
        const first = yield* events(agent.run({ message: "one" }))
        assert.strictEqual(last(first)._tag, "TurnDone")
        const sessionId = (first[0] as TurnEvent.TurnStarted).sessionId
        yield* events(agent.run({ sessionId, message: "two" }))
        const asked = yield* model.recorded
        // Every round but the last calls a tool: turn one played the whole script but "bye".
        assert.strictEqual(asked.length, script.length)
        const played = asked.length - 1
        const answer = History.assistant(final, [])
        const expected = [
          ...asked[played - 1]!.messages,
          ...encoded(answer === undefined ? [] : [answer]),
          ...encoded([History.user("two")])
        ]
        assert.deepStrictEqual(asked[played]!.messages, expected)
        assert.strictEqual(History.problemOf(asked[played]!.prompt.content), undefined)
      }),
    { fastCheck: { numRuns: 25 } }
  )
})

const action = fc.constantFrom("answer" as const, "fail" as const, "stop" as const, "drop" as const)

describe("agent session lock", () => {
  it.scopedLive.prop(
    "the lock is released on every exit, and a turn on a busy session is refused",
    [fc.array(action, { minLength: 1, maxLength: 6 })],
    ([actions]) =>
      Effect.gen(function*() {
        const script = [
          ...actions.map((a): Scripted.Round =>
            a === "answer" ? Scripted.answer("yes") : a === "fail" ? Scripted.fail() : Scripted.hang(Scripted.text("…"))
          ),
          Scripted.answer("finally")
        ]
        const { agent } = yield* startAgent([], script)
        let sessionId: string | undefined
        const input = (message: string) => ({ ...(sessionId === undefined ? {} : { sessionId }), message })
        for (const a of actions) {
          if (a === "answer" || a === "fail") {
            const all = yield* events(agent.run(input(a)))
            sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
            assert.strictEqual(last(all)._tag, a === "answer" ? "TurnDone" : "TurnFailed")
          } else if (a === "drop") {
            // The consumer takes the first two events (started, a delta) and goes away.
            const two = yield* agent.run(input(a)).pipe(Stream.take(2), Stream.runCollect)
            sessionId = (two.pipe((c) => [...c])[0] as TurnEvent.TurnStarted).sessionId
          } else {
            const seen = yield* Ref.make<ReadonlyArray<TurnEvent.TurnEvent>>([])
            const fiber = yield* Stream.runForEach(agent.run(input(a)), (e) => Ref.update(seen, (l) => [...l, e])).pipe(
              Effect.fork
            )
            const first = yield* Ref.get(seen).pipe(
              Effect.filterOrFail((l) => l.some((e) => e._tag === "TextDelta")),
              Effect.retry({ schedule: Schedule.spaced("10 millis"), times: 1000 }),
              Effect.orDie
            )
            sessionId = (first[0] as TurnEvent.TurnStarted).sessionId
            assert.isTrue(yield* agent.isBusy(sessionId))
            const refused = yield* Effect.flip(events(agent.run({ sessionId, message: "meanwhile" })))
            assert.instanceOf(refused, SessionBusy)
            assert.isTrue(yield* agent.stop(sessionId))
            yield* Fiber.join(fiber)
            assert.strictEqual(last(yield* Ref.get(seen))._tag, "TurnStopped")
          }
          assert.isFalse(yield* agent.isBusy(sessionId), `the lock is free after ${a}`)
        }
        const final = yield* events(agent.run(input("last")))
        assert.strictEqual(last(final)._tag, "TurnDone")
      }),
    { fastCheck: { numRuns: 15 } }
  )
})
