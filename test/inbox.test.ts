/**
 * The Inbox service (inbox/Inbox.ts) on a real SQLite file: asking and answering each kind, answers
 * that do not fit, deadlines under TestClock, askers going away, watchers (the snapshot, then live;
 * a watcher that never reads does not hold the inbox up), the outcome log — and, as a property,
 * exactly one resolution per item whatever races: an answer, the deadline, the asker interrupted.
 */
import { assert, describe, it } from "@effect/vitest"
import { InboxItem } from "@skald/domain"
import { Inbox, WATCH_BUFFER } from "@skald/server/inbox/Inbox"
import { InboxLog } from "@skald/server/inbox/InboxLog"
import { Chunk, Duration, Effect, Exit, FastCheck as fc, Fiber, Layer, Ref, Schema, Stream, TestClock } from "effect"
import { servicesLayer, tempHome } from "./host-support.js"

/** The inbox over a fresh home's database (the layer is built in the test's scope). */
const inboxLayer = Layer.unwrapScoped(
  Effect.map(
    tempHome,
    (home) => Layer.provideMerge(Inbox.Default, Layer.provideMerge(InboxLog.Default, servicesLayer(home)))
  )
)

const origin = { sessionId: "s1", server: "ssh", tool: "mcp__ssh__exec", callId: "c1" }

const approval = {
  _tag: "Approval" as const,
  origin,
  tool: "mcp__ssh__exec",
  arguments: { command: "rm -rf /tmp/x" },
  annotations: { destructiveHint: true },
  reason: "not marked read-only"
}

const form = {
  _tag: "Elicitation" as const,
  origin,
  mode: "form" as const,
  message: "Enter the sudo password",
  fields: [
    { name: "password", required: true, masked: true, kind: "string" as const, minLength: 4 },
    { name: "remember", required: false, masked: false, kind: "boolean" as const, default: false }
  ],
  confirmation: false
}

/** Waits until the inbox lists an item, and returns it. */
const pendingItem = Effect.gen(function*() {
  const inbox = yield* Inbox
  for (;;) {
    const items = yield* inbox.list
    if (items.length > 0) return items[0]!
    yield* Effect.yieldNow()
  }
})

/**
 * Every change, collected by a watcher subscribed when this returns; `settle` posts a marker and
 * waits for it (the changes are FIFO), so every change before it has been seen.
 */
const collectChanges = Effect.gen(function*() {
  const inbox = yield* Inbox
  const seen = yield* Ref.make<Array<InboxItem.InboxChange>>([])
  yield* inbox.watch.pipe(
    Stream.tap((change) => Ref.update(seen, (all) => [...all, change])),
    Stream.runDrain,
    Effect.forkScoped
  )
  const markers = new Set<string>()
  const settle = Effect.gen(function*() {
    const marker = yield* inbox.notify({ origin: {}, title: "marker", body: "" })
    markers.add(marker)
    for (;;) {
      const all = yield* Ref.get(seen)
      if (all.some((c) => c._tag === "ItemAdded" && c.item.id === marker)) break
      yield* Effect.yieldNow()
    }
    yield* inbox.resolve(marker, new InboxItem.Dismiss())
    return (yield* Ref.get(seen)).filter((c) => !markers.has(c._tag === "ItemAdded" ? c.item.id : c.id))
  })
  // Once the first marker is seen, the watcher is subscribed.
  yield* settle
  return { settle }
})

const logRows = (id: string) =>
  Effect.map(Effect.flatMap(InboxLog, (l) => l.list), (rows) => rows.filter((r) => r.id === id))

describe("Inbox", () => {
  it.scoped("an approval waits for its answer; the answer, one ItemResolved and one log row agree", () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox
      const { settle } = yield* collectChanges
      const asker = yield* Effect.fork(inbox.ask(approval))
      const item = yield* pendingItem
      assert.strictEqual(item._tag, "Approval")
      assert.deepStrictEqual(item.origin, origin)
      assert.isUndefined(item.deadline)
      yield* inbox.resolve(item.id, new InboxItem.Approve({ always: true }))
      assert.deepStrictEqual(yield* Fiber.join(asker), new InboxItem.Approve({ always: true }))
      assert.deepStrictEqual(yield* inbox.list, [])
      const changes = yield* settle
      assert.deepStrictEqual(changes.map((c) => c._tag), ["ItemAdded", "ItemResolved"])
      assert.deepStrictEqual(changes[1], new InboxItem.ItemResolved({ id: item.id, outcome: "approved" }))
      const rows = yield* logRows(item.id)
      assert.strictEqual(rows.length, 1)
      assert.deepInclude(rows[0], {
        kind: "approval",
        session_id: "s1",
        server: "ssh",
        tool: "mcp__ssh__exec",
        call_id: "c1",
        deadline: null,
        outcome: "approved"
      })
      // A second answer finds nothing pending.
      const again = yield* Effect.flip(inbox.resolve(item.id, new InboxItem.Deny()))
      assert.strictEqual(again._tag, "InboxItemNotFound")
    }).pipe(Effect.provide(inboxLayer)))

  it.scoped("an elicitation refuses content outside its form and stays pending; a fitting answer gets defaults", () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox
      const asker = yield* Effect.fork(inbox.ask(form))
      const item = yield* pendingItem
      const short = yield* Effect.flip(
        inbox.resolve(item.id, new InboxItem.Accept({ content: { password: "abc" } }))
      )
      assert.strictEqual(short._tag, "InboxAnswerInvalid")
      const extra = yield* Effect.flip(
        inbox.resolve(item.id, new InboxItem.Accept({ content: { password: "s3cret-value", port: 22 } }))
      )
      assert.strictEqual(extra._tag, "InboxAnswerInvalid")
      assert.include(extra.message, "'port' is not a field")
      assert.notInclude(extra.message, "s3cret-value")
      const missing = yield* Effect.flip(inbox.resolve(item.id, new InboxItem.Accept({})))
      assert.include(missing.message, "'password' is required")
      const mismatch = yield* Effect.flip(inbox.resolve(item.id, new InboxItem.Approve({ always: false })))
      assert.strictEqual(mismatch._tag, "InboxAnswerMismatch")
      assert.include(mismatch.message, "Accept, Decline or Cancel")
      assert.deepStrictEqual((yield* inbox.list).map((i) => i.id), [item.id])
      yield* inbox.resolve(item.id, new InboxItem.Accept({ content: { password: "s3cret-value" } }))
      assert.deepStrictEqual(
        yield* Fiber.join(asker),
        new InboxItem.Accept({ content: { password: "s3cret-value", remember: false } })
      )
      const rows = yield* logRows(item.id)
      assert.deepStrictEqual(rows.map((r) => [r.kind, r.outcome]), [["elicitation", "accepted"]])
    }).pipe(Effect.provide(inboxLayer)))

  it.scoped("URL mode takes consent only; decline and cancel end an elicitation as said", () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox
      const url = { ...form, mode: "url" as const, fields: [], url: "http://127.0.0.1:1/page" }
      const first = yield* Effect.fork(inbox.ask(url))
      const a = yield* pendingItem
      yield* inbox.resolve(a.id, new InboxItem.Accept({ content: { ignored: true } }))
      assert.deepStrictEqual(yield* Fiber.join(first), new InboxItem.Accept({}))
      for (
        const [answer, outcome] of [[new InboxItem.Decline(), "declined"], [
          new InboxItem.Cancel(),
          "cancelled"
        ]] as const
      ) {
        const asker = yield* Effect.fork(inbox.ask(form))
        const item = yield* pendingItem
        yield* inbox.resolve(item.id, answer)
        assert.deepStrictEqual(yield* Fiber.join(asker), answer)
        assert.deepStrictEqual((yield* logRows(item.id)).map((r) => r.outcome), [outcome])
      }
    }).pipe(Effect.provide(inboxLayer)))

  it.scoped("the deadline (TestClock) expires an item: an elicitation's asker gets Cancel, an approval's Deny", () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox
      const elicitation = yield* Effect.fork(inbox.ask(form, { deadline: "5 minutes" }))
      const approvalAsker = yield* Effect.fork(inbox.ask(approval, { deadline: "1 minute" }))
      for (;;) {
        if ((yield* inbox.list).length === 2) break
        yield* Effect.yieldNow()
      }
      const [e, a] = yield* inbox.list
      assert.strictEqual(e!.deadline, e!.createdAt + Duration.toMillis("5 minutes"))
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(yield* Fiber.join(approvalAsker), new InboxItem.Deny())
      assert.deepStrictEqual((yield* inbox.list).map((i) => i.id), [e!.id])
      yield* TestClock.adjust("4 minutes")
      assert.deepStrictEqual(yield* Fiber.join(elicitation), new InboxItem.Cancel())
      assert.deepStrictEqual((yield* logRows(a!.id)).map((r) => r.outcome), ["expired"])
      assert.deepStrictEqual((yield* logRows(e!.id)).map((r) => r.outcome), ["expired"])
      assert.isNotNull((yield* logRows(e!.id))[0]!.deadline)
      const late = yield* Effect.flip(inbox.resolve(e!.id, new InboxItem.Decline()))
      assert.strictEqual(late._tag, "InboxItemNotFound")
    }).pipe(Effect.provide(inboxLayer)))

  it.scoped("an asker that goes away (its fiber interrupted) withdraws its item", () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox
      const { settle } = yield* collectChanges
      const asker = yield* Effect.fork(inbox.ask(form, { deadline: "5 minutes" }))
      const item = yield* pendingItem
      yield* Fiber.interrupt(asker)
      assert.deepStrictEqual(yield* inbox.list, [])
      const changes = yield* settle
      assert.deepStrictEqual(changes[1], new InboxItem.ItemResolved({ id: item.id, outcome: "withdrawn" }))
      assert.deepStrictEqual((yield* logRows(item.id)).map((r) => r.outcome), ["withdrawn"])
    }).pipe(Effect.provide(inboxLayer)))

  it.scoped("a notification waits for Dismiss and takes no other answer", () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox
      const id = yield* inbox.notify({ origin: { server: "tic" }, title: "Briefing", body: "3 new mails" })
      const item = (yield* inbox.list)[0]!
      assert.strictEqual(item._tag, "Notification")
      assert.deepStrictEqual(item._tag === "Notification" ? [item.id, item.title, item.body] : [], [
        id,
        "Briefing",
        "3 new mails"
      ])
      const wrong = yield* Effect.flip(inbox.resolve(id, new InboxItem.Accept({})))
      assert.strictEqual(wrong._tag, "InboxAnswerMismatch")
      assert.strictEqual(wrong._tag === "InboxAnswerMismatch" ? wrong.expected : "", "Dismiss")
      yield* inbox.resolve(id, new InboxItem.Dismiss())
      assert.deepStrictEqual((yield* logRows(id)).map((r) => [r.kind, r.server, r.outcome]), [
        ["notification", "tic", "dismissed"]
      ])
    }).pipe(Effect.provide(inboxLayer)))

  it.scoped("a watcher first gets the pending items, then live changes; the changes decode back", () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox
      const first = yield* inbox.notify({ origin: {}, title: "one", body: "" })
      const second = yield* inbox.notify({ origin: {}, title: "two", body: "" })
      const got = yield* Ref.make(0)
      const watched = yield* inbox.watch.pipe(
        Stream.take(4),
        Stream.tap(() => Ref.update(got, (n) => n + 1)),
        Stream.runCollect,
        Effect.fork
      )
      // Once the snapshot is in, live changes follow it in order.
      while ((yield* Ref.get(got)) < 2) yield* Effect.yieldNow()
      yield* inbox.resolve(first, new InboxItem.Dismiss())
      const third = yield* inbox.notify({ origin: {}, title: "three", body: "" })
      const changes = Chunk.toArray(yield* Fiber.join(watched))
      assert.deepStrictEqual(changes.map((c) => (c._tag === "ItemAdded" ? `+${c.item.id}` : `-${c.id}`)), [
        `+${first}`,
        `+${second}`,
        `-${first}`,
        `+${third}`
      ])
      const wire = yield* Effect.forEach(changes, (c) =>
        Effect.flatMap(
          Schema.encode(InboxItem.InboxChange)(c),
          (json) => Schema.decodeUnknown(InboxItem.InboxChange)(JSON.parse(JSON.stringify(json)))
        ))
      assert.deepStrictEqual(wire, changes)
    }).pipe(Effect.provide(inboxLayer)))

  it.scoped(`a watcher that never reads does not hold the inbox up (it loses the oldest beyond ${WATCH_BUFFER})`, () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox
      const stalled = yield* Effect.makeLatch(false)
      const got = yield* Ref.make<Array<InboxItem.InboxChange>>([])
      // Reads the first change, then stalls until released.
      yield* inbox.watch.pipe(
        Stream.tap((change) => Effect.zipRight(Ref.update(got, (all) => [...all, change]), stalled.await)),
        Stream.runDrain,
        Effect.forkScoped
      )
      const first = yield* inbox.notify({ origin: {}, title: "first", body: "" })
      while ((yield* Ref.get(got)).length === 0) yield* Effect.yieldNow()
      // 4 × WATCH_BUFFER changes while it stalls: the inbox goes on.
      const ids: Array<string> = []
      for (let i = 0; i < WATCH_BUFFER * 2; i++) ids.push(yield* inbox.notify({ origin: {}, title: `n${i}`, body: "" }))
      for (const id of ids) yield* inbox.resolve(id, new InboxItem.Dismiss())
      assert.deepStrictEqual((yield* inbox.list).map((i) => i.id), [first])
      assert.strictEqual((yield* Effect.flatMap(InboxLog, (l) => l.list)).length, WATCH_BUFFER * 2)
      yield* stalled.open
      const last = new InboxItem.ItemResolved({ id: ids[ids.length - 1]!, outcome: "dismissed" })
      while (!(yield* Ref.get(got)).some((c) => c._tag === "ItemResolved" && c.id === last.id)) yield* Effect.yieldNow()
      // It kept the newest changes and lost the oldest.
      const all = yield* Ref.get(got)
      assert.deepStrictEqual(all[all.length - 1], last)
      assert.isAtMost(all.length, 1 + WATCH_BUFFER)
      assert.isFalse(all.some((c) => c._tag === "ItemAdded" && c.item.id === ids[0]))
    }).pipe(Effect.provide(inboxLayer)))

  it.scoped("closing the inbox withdraws what is pending", () =>
    Effect.gen(function*() {
      const id = yield* Effect.scoped(
        Effect.flatMap(Inbox, (inbox) => inbox.notify({ origin: {}, title: "left", body: "" })).pipe(
          Effect.provide(Inbox.Default)
        )
      )
      assert.deepStrictEqual((yield* logRows(id)).map((r) => r.outcome), ["withdrawn"])
    }).pipe(
      Effect.provide(Layer.unwrapScoped(
        Effect.map(tempHome, (home) => Layer.provideMerge(InboxLog.Default, servicesLayer(home)))
      ))
    ))

  it.effect.prop(
    "exactly one resolution per item under any race of answer, deadline and the asker going away",
    {
      answerAt: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
      interruptAt: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
      deadlineAt: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
      answer: fc.constantFrom("accept", "decline", "invalid")
    },
    ({ answer, answerAt, deadlineAt, interruptAt }) =>
      Effect.scoped(
        Effect.gen(function*() {
          const inbox = yield* Inbox
          const { settle } = yield* collectChanges
          const options = deadlineAt === undefined ? {} : { deadline: Duration.seconds(deadlineAt) }
          const asker = yield* Effect.fork(inbox.ask(form, options))
          const item = yield* pendingItem
          const given = answer === "accept"
            ? new InboxItem.Accept({ content: { password: "good-one" } })
            : answer === "decline"
            ? new InboxItem.Decline()
            : new InboxItem.Accept({ content: { password: 7 } })
          const actions: Array<Fiber.RuntimeFiber<unknown, unknown>> = []
          if (answerAt !== undefined) {
            actions.push(
              yield* Effect.fork(
                Effect.zipRight(Effect.sleep(Duration.seconds(answerAt)), Effect.either(inbox.resolve(item.id, given)))
              )
            )
          }
          if (interruptAt !== undefined) {
            actions.push(
              yield* Effect.fork(Effect.zipRight(Effect.sleep(Duration.seconds(interruptAt)), Fiber.interrupt(asker)))
            )
          }
          yield* TestClock.adjust("4 seconds")
          for (const action of actions) yield* Fiber.await(action)
          const ended = answerAt === undefined && interruptAt === undefined && deadlineAt === undefined
            ? false
            : answer === "invalid" && interruptAt === undefined && deadlineAt === undefined
            ? false
            : true
          if (!ended) {
            // Nothing ended it: still pending; withdraw it to finish the run.
            assert.deepStrictEqual((yield* inbox.list).map((i) => i.id), [item.id])
            yield* Fiber.interrupt(asker)
          }
          const exit = yield* Fiber.await(asker)
          const changes = (yield* settle).filter((c) => c._tag === "ItemResolved")
          assert.strictEqual(changes.length, 1)
          const outcome = (changes[0] as InboxItem.ItemResolved).outcome
          const rows = yield* logRows(item.id)
          assert.deepStrictEqual(rows.map((r) => r.outcome), [outcome])
          assert.deepStrictEqual(yield* inbox.list, [])
          // The asker's one answer agrees with the outcome.
          if (Exit.isSuccess(exit)) {
            const expected = outcome === "accepted"
              ? "Accept"
              : outcome === "declined"
              ? "Decline"
              : outcome === "expired"
              ? "Cancel"
              : "none"
            assert.strictEqual(exit.value._tag, expected)
          } else {
            // Interrupted: it got no answer (an answer may have been taken in the same instant).
            assert.isTrue(Exit.isInterrupted(exit))
            assert.isDefined(interruptAt ?? (ended ? undefined : "withdrawn at the end"))
          }
        }).pipe(Effect.provide(inboxLayer))
      ),
    { fastCheck: { numRuns: 40 } }
  )
})
