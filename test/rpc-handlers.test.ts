/**
 * The RPC handlers through `RpcTest.makeClient` (issue 22): the groups over a real manager with
 * real fixture servers and a scripted model — a turn calling a real MCP tool, the history with
 * `resultType` and media URLs, a client going away mid-turn (the turn goes on) and attaching
 * again from an index (missing nothing), two readers of one turn, stop, the groups' errors, MCP
 * administration, and a host without a model. The per-turn log's bound is tested on its own.
 */
import * as RpcTest from "@effect/rpc/RpcTest"
import { assert, describe, it } from "@effect/vitest"
import { InboxItem, type TurnEvent } from "@skald/domain"
import { EventRepo } from "@skald/server"
import { Agent } from "@skald/server/agent/Agent"
import { ChatStore } from "@skald/server/agent/ChatStore"
import { ModelSettings } from "@skald/server/agent/llm/ModelSettings"
import * as TurnLog from "@skald/server/agent/TurnLog"
import * as Approvals from "@skald/server/inbox/Approvals"
import { Inbox } from "@skald/server/inbox/Inbox"
import * as AgentSource from "@skald/server/rpc/AgentSource"
import { HostInfo } from "@skald/server/rpc/HostHandlers"
import * as RpcServer from "@skald/server/rpc/RpcServer"
import * as Tic from "@skald/server/tic/Tic"
import { Chunk, Context, Deferred, Effect, FastCheck as fc, Fiber, Layer, Stream } from "effect"
import { fixture } from "./fixtures/fixtures.js"
import { fixtureEntry, makeHome, startManager, waitForState } from "./host-support.js"
import { startHttpFixture } from "./http-support.js"
import { eventuallyEffect } from "./support.js"
import { agentOver } from "./support/agent.js"
import * as Scripted from "./support/scripted-model.js"

const info = Layer.succeed(HostInfo, { version: "test", bindHost: "127.0.0.1", port: 1, tokenRequired: false })

const tags = (events: ReadonlyArray<TurnEvent.TurnEvent>) => events.map((e) => e._tag)

/** A client of every group over a fresh home with the echo and media fixtures and a model playing `script`. */
const clientFor = (script: ReadonlyArray<Scripted.Round>, options: { readonly turnEvents?: number } = {}) =>
  Effect.gen(function*() {
    const { context, manager } = yield* startManager(makeHome())
    yield* Effect.orDie(manager.register(fixtureEntry("echo", "echo")))
    yield* Effect.orDie(manager.register(fixtureEntry("media", "media")))
    yield* waitForState(manager, "echo", "connected")
    yield* waitForState(manager, "media", "connected")
    const { agent, model } = yield* agentOver(context, script, options)
    const built = yield* Layer.build(RpcServer.handlers.pipe(
      Layer.provideMerge(
        Layer.mergeAll(
          AgentSource.layer,
          info,
          ChatStore.Default,
          ModelSettings.Default,
          Inbox.Default,
          Tic.Tic.Default({ interval: 0 }).pipe(Layer.provide(Tic.agentLayer))
        )
      ),
      Layer.provide(Layer.succeedContext(Context.add(context, Agent, agent)))
    ))
    const client = yield* RpcTest.makeClient(RpcServer.Rpcs).pipe(Effect.provide(built))
    /** Another client of the same handlers (another connection). */
    const another = RpcTest.makeClient(RpcServer.Rpcs).pipe(Effect.provide(built))
    return { client, another, manager, model, inbox: Context.get(built, Inbox) }
  })

const collect = <A, E, R>(stream: Stream.Stream<A, E, R>) => Effect.map(Stream.runCollect(stream), Chunk.toArray)

describe("RPC handlers", () => {
  it.scopedLive("a turn calling real MCP tools: its events, then the history with result types and media URLs", () =>
    Effect.gen(function*() {
      const { client } = yield* clientFor([
        Scripted.calls([
          { id: "c1", name: "mcp__echo__echo", params: { message: "hi there" } },
          { id: "c2", name: "mcp__media__image" }
        ]),
        Scripted.answer("done")
      ])
      const events = yield* collect(client.Agent.Send({ message: "go", agent: "main" }))
      assert.strictEqual(events[0]!._tag, "TurnStarted")
      assert.strictEqual(events[events.length - 1]!._tag, "TurnDone")
      assert.deepStrictEqual(tags(events).slice(1, -1).sort(), [
        "TextDelta",
        "ToolDone",
        "ToolDone",
        "ToolStarted",
        "ToolStarted"
      ])
      const started = events[0] as TurnEvent.TurnStarted
      const done = events.filter((e): e is TurnEvent.ToolDone => e._tag === "ToolDone")
      assert.deepStrictEqual(done.map((d) => d.status).sort(), ["done", "done"])
      const history = yield* client.Agent.History({ sessionId: started.sessionId })
      assert.strictEqual(history.session.running, false)
      const calls = history.messages.flatMap((m) => m.calls)
      const echo = calls.find((c) => c.name === "mcp__echo__echo")!
      assert.strictEqual(echo.status, "done")
      assert.strictEqual(echo.resultType, "string")
      assert.include(echo.result ?? "", "hi there")
      const image = calls.find((c) => c.name === "mcp__media__image")!
      assert.strictEqual(image.mediaUrls.length, 1)
      assert.match(image.mediaUrls[0]!, /\/api\/mcp-media\/[A-Za-z0-9_-]+\.png$/)
      const sessions = yield* client.Agent.Sessions()
      assert.deepStrictEqual(sessions.map((s) => s.id), [started.sessionId])
    }))

  it.scopedLive("a sub-agent's session is not among the sessions: its parent's history lists it, and it goes with it", () =>
    Effect.gen(function*() {
      const { client } = yield* clientFor([
        Scripted.calls([{ id: "d1", name: "dispatch_agent", params: { agent: "main", task: "say hi" } }]),
        Scripted.answer("hi from the sub-agent"),
        Scripted.answer("done")
      ])
      const events = yield* collect(client.Agent.Send({ message: "delegate", agent: "main" }))
      assert.strictEqual(events.at(-1)!._tag, "TurnDone")
      const sessionId = (events[0] as TurnEvent.TurnStarted).sessionId
      assert.deepStrictEqual((yield* client.Agent.Sessions()).map((s) => s.id), [sessionId])
      const history = yield* client.Agent.History({ sessionId })
      assert.isUndefined(history.session.parent)
      const subs = history.subAgents ?? []
      assert.strictEqual(subs.length, 1)
      assert.deepStrictEqual([subs[0]!.agent, subs[0]!.parent, subs[0]!.title, subs[0]!.running], [
        "main",
        sessionId,
        "say hi",
        false
      ])
      const sub = yield* client.Agent.History({ sessionId: subs[0]!.id })
      assert.strictEqual(sub.session.parent, sessionId)
      assert.deepStrictEqual(sub.messages.map((m) => m.text), ["say hi", "hi from the sub-agent"])
      yield* client.Agent.DeleteSession({ sessionId })
      const gone = yield* Effect.flip(client.Agent.History({ sessionId: subs[0]!.id }))
      assert.strictEqual(gone._tag, "SessionNotFound")
    }))

  it.scopedLive("a client that goes away does not stop the turn; attaching from an index misses nothing; two readers see the same", () =>
    Effect.gen(function*() {
      const { client } = yield* clientFor([
        Scripted.hang(Scripted.text("one ", "two ")),
        Scripted.answer("unused")
      ])
      // The first client reads three events (TurnStarted and two deltas), then goes away.
      const first = yield* client.Agent.Send({ message: "go" }).pipe(Stream.take(3), collect)
      assert.deepStrictEqual(tags(first), ["TurnStarted", "TextDelta", "TextDelta"])
      const sessionId = (first[0] as TurnEvent.TurnStarted).sessionId
      // The turn still runs: two readers attach from index 1 and from 3; a stop ends it for both.
      const a = yield* Effect.fork(collect(client.Agent.Attach({ sessionId, fromIndex: 1 })))
      const b = yield* Effect.fork(collect(client.Agent.Attach({ sessionId, fromIndex: 3 })))
      const sessions = yield* client.Agent.Sessions()
      assert.isTrue(sessions.find((s) => s.id === sessionId)!.running)
      assert.deepStrictEqual(yield* client.Agent.Stop({ sessionId }), { stopped: true })
      const fromOne = yield* Fiber.join(a)
      const fromThree = yield* Fiber.join(b)
      assert.deepStrictEqual(tags(fromOne), ["TextDelta", "TextDelta", "TurnStopped"])
      assert.deepStrictEqual(fromThree, fromOne.slice(2))
      assert.strictEqual((fromOne[2] as TurnEvent.TurnStopped).text, "one two ")
      // After the end the last turn stays readable from any index.
      const again = yield* collect(client.Agent.Attach({ sessionId, fromIndex: 0 }))
      assert.deepStrictEqual(again, [...first, ...fromThree])
      assert.deepStrictEqual(yield* client.Agent.Stop({ sessionId }), { stopped: false })
    }))

  it.scopedLive("a stalled reader holds back neither the turn nor another reader; released, it gets everything", () =>
    Effect.gen(function*() {
      const pieces = Array.from({ length: 200 }, (_, i) => `p${i} `)
      const { another, client } = yield* clientFor([Scripted.hang(Scripted.text(...pieces)), Scripted.answer("x")])
      const second = yield* another
      const first = yield* client.Agent.Send({ message: "go" }).pipe(Stream.take(1), collect)
      const sessionId = (first[0] as TurnEvent.TurnStarted).sessionId
      // The stalled client reads one event, then stops reading (no acks) until released.
      const release = yield* Deferred.make<void>()
      const stalled = yield* Effect.fork(collect(
        client.Agent.Attach({ sessionId, fromIndex: 0 }).pipe(
          Stream.tap((event) => event._tag === "TurnStarted" ? Deferred.await(release) : Effect.void)
        )
      ))
      // The other client reads every delta the model streamed, while the first is stalled.
      const fast = yield* second.Agent.Attach({ sessionId, fromIndex: 0 }).pipe(Stream.take(1 + pieces.length), collect)
      assert.deepStrictEqual(
        fast.slice(1).map((e) => (e as TurnEvent.TextDelta).text),
        pieces
      )
      // The turn is not held back either: it stops at once.
      assert.deepStrictEqual(yield* second.Agent.Stop({ sessionId }), { stopped: true })
      yield* Deferred.succeed(release, undefined)
      const late = yield* Fiber.join(stalled)
      assert.deepStrictEqual(late.slice(0, fast.length), fast)
      assert.strictEqual(late[late.length - 1]!._tag, "TurnStopped")
    }))

  it.scopedLive("the groups' errors: unknown session, no turn, busy, unknown server, taken name, bad entry", () =>
    Effect.gen(function*() {
      const { client } = yield* clientFor([Scripted.hang()])
      const missing = yield* Effect.flip(client.Agent.History({ sessionId: "nope" }))
      assert.strictEqual(missing._tag, "SessionNotFound")
      assert.include(missing.message, "no chat session has the id nope")
      const noTurn = yield* Effect.flip(collect(client.Agent.Attach({ sessionId: "nope", fromIndex: 0 })))
      assert.strictEqual(noTurn._tag, "TurnNotFound")
      const unknownAgent = yield* Effect.flip(collect(client.Agent.Send({ message: "x", agent: "../etc" })))
      assert.strictEqual(unknownAgent._tag, "AgentNotFound")
      const first = yield* client.Agent.Send({ message: "go" }).pipe(Stream.take(1), collect)
      const sessionId = (first[0] as TurnEvent.TurnStarted).sessionId
      const busy = yield* Effect.flip(collect(client.Agent.Send({ message: "again", sessionId })))
      assert.strictEqual(busy._tag, "SessionBusy")
      const busyDelete = yield* Effect.flip(client.Agent.DeleteSession({ sessionId }))
      assert.strictEqual(busyDelete._tag, "SessionBusy")
      yield* client.Agent.Stop({ sessionId })
      yield* client.Agent.DeleteSession({ sessionId })
      assert.strictEqual((yield* Effect.flip(client.Agent.DeleteSession({ sessionId })))._tag, "SessionNotFound")
      assert.strictEqual((yield* Effect.flip(client.Mcp.Show({ name: "ghost" })))._tag, "ServerNotFound")
      assert.strictEqual((yield* Effect.flip(client.Mcp.Restart({ name: "not a name" })))._tag, "ServerNotFound")
      const taken = yield* Effect.flip(client.Mcp.Add({ name: "echo", transport: { _tag: "stdio", command: "node" } }))
      assert.strictEqual(taken._tag, "ServerExists")
      assert.notInclude(taken.message, "--")
      const bad = yield* Effect.flip(client.Mcp.Add({ name: "a__b", transport: { _tag: "stdio", command: "node" } }))
      assert.strictEqual(bad._tag, "InvalidServer")
    }))

  it.scopedLive("Mcp.Login: the URL, then Authorized and the server connected; typed failures for the rest", () =>
    Effect.gen(function*() {
      const { client, manager } = yield* clientFor([])
      const server = yield* startHttpFixture(fixture("oauth-http"))
      yield* client.Mcp.Add({ name: "guarded", transport: { _tag: "http", url: server.url } })
      // The host has no one to ask: it fails until authorized.
      yield* waitForState(manager, "guarded", "failed")
      const steps = yield* client.Mcp.Login({ name: "guarded" }).pipe(
        // A browser: the authorization server approves at once and redirects to the host's listener.
        Stream.tap((step) =>
          step._tag === "Open" ? Effect.promise(() => fetch(step.url).then((r) => r.text())) : Effect.void
        ),
        collect
      )
      assert.deepStrictEqual(steps.map((s) => s._tag), ["Open", "Authorized"])
      assert.match((steps[0] as { url: string }).url, /^http:\/\/127\.0\.0\.1:\d+\/authorize\?/)
      yield* waitForState(manager, "guarded", "connected")
      // A stdio server cannot be authorized; an unknown one is not found; nothing is opened for either.
      const stdio = yield* Effect.flip(collect(client.Mcp.Login({ name: "echo" })))
      assert.strictEqual(stdio._tag, "AuthorizationFailed")
      assert.include(stdio.message, "it is a stdio server")
      assert.strictEqual((yield* Effect.flip(collect(client.Mcp.Login({ name: "ghost" }))))._tag, "ServerNotFound")
      assert.strictEqual((yield* Effect.flip(collect(client.Mcp.Login({ name: "not a name" }))))._tag, "ServerNotFound")
    }))

  it.scopedLive("MCP administration: list with status, show, tools, disable/enable, restart, logs, events, add and remove", () =>
    Effect.gen(function*() {
      const { client, manager } = yield* clientFor([])
      const listed = yield* client.Mcp.List()
      assert.deepStrictEqual(listed.map((s) => [s.name, s.state]), [["echo", "connected"], ["media", "connected"]])
      const shown = yield* client.Mcp.Show({ name: "echo" })
      assert.strictEqual(shown.transport, "stdio")
      const tools = yield* client.Mcp.Tools({ name: "echo" })
      assert.include(tools.map((t) => t.name), "mcp__echo__echo")
      assert.isTrue(tools.every((t) => t.server === "echo"))
      // Each tool also exactly as the server sent it (what `skald mcp tools --json` prints).
      assert.isTrue(tools.every((t) => t.wire?.name === t.tool.name && "inputSchema" in t.wire))
      yield* client.Mcp.SetEnabled({ name: "media", enabled: false })
      yield* waitForState(manager, "media", "disabled")
      yield* client.Mcp.SetEnabled({ name: "media", enabled: true })
      yield* waitForState(manager, "media", "connected")
      yield* client.Mcp.Restart({ name: "echo" })
      yield* waitForState(manager, "echo", "connected")
      const log = (yield* collect(client.Mcp.Logs({ name: "echo" }))).join("")
      assert.include(log, "echo fixture: ready")
      assert.deepStrictEqual(yield* client.Mcp.Events({}), [])
      const added = yield* client.Mcp.Add({
        name: "echo2",
        transport: { _tag: "stdio", command: shown.command!, args: shown.args!, secretEnv: { TOKEN: "s3cret" } }
      })
      assert.deepStrictEqual(added, { replaced: false, storedSecrets: ["MCP_ECHO2__TOKEN"], droppedSecrets: [] })
      yield* waitForState(manager, "echo2", "connected")
      assert.notInclude(JSON.stringify(yield* client.Mcp.Show({ name: "echo2" })), "s3cret")
      assert.deepStrictEqual(yield* client.Mcp.Remove({ name: "echo2" }), { removedSecrets: ["MCP_ECHO2__TOKEN"] })
      yield* waitForState(manager, "echo2", "absent")
      // The log of a server removed since is still given; a name with neither is ServerNotFound.
      assert.include((yield* collect(client.Mcp.Logs({ name: "echo2" }))).join(""), "echo fixture: ready")
      assert.strictEqual((yield* Effect.flip(collect(client.Mcp.Logs({ name: "never" }))))._tag, "ServerNotFound")
      const version = yield* client.Host.Version()
      assert.strictEqual(version.version, "test")
    }))

  it.scopedLive("a host without a model: Send fails with ModelUnavailable, the settings say so, the rest works", () =>
    Effect.gen(function*() {
      const { context } = yield* startManager(makeHome())
      const built = yield* Layer.build(RpcServer.handlers.pipe(
        Layer.provide(
          Layer.mergeAll(Tic.Tic.Default({ interval: 0 }).pipe(Layer.provide(AgentSource.ticAgent)), info)
        ),
        Layer.provideMerge(AgentSource.layerFromSettings()),
        Layer.provide(Approvals.unattended("allow")),
        Layer.provideMerge(Layer.mergeAll(ChatStore.Default, ModelSettings.Default, Inbox.Default)),
        Layer.provide(Layer.succeedContext(context))
      ))
      const client = yield* RpcTest.makeClient(RpcServer.Rpcs).pipe(Effect.provide(built))
      const failed = yield* Effect.flip(collect(client.Agent.Send({ message: "hi" })))
      assert.strictEqual(failed._tag, "ModelUnavailable")
      assert.include(failed.message, "no model is configured")
      const settings = yield* client.Host.Settings()
      assert.strictEqual(settings.model.configured, false)
      assert.strictEqual(settings.bindHost, "127.0.0.1")
      assert.deepStrictEqual(yield* client.Agent.Sessions(), [])
      // A tick with pending events fails the same way, and leaves them pending and free.
      const events = Context.get(context, EventRepo.EventRepo)
      yield* events.insertAll([{ server: "demo", method: "event/x", params: {}, receivedAt: "2026-12-02T00:00:00Z" }])
      const tick = yield* Effect.flip(client.Tic.Run())
      assert.strictEqual(tick._tag, "ModelUnavailable")
      const free = yield* events.claim({ token: "probe", limit: 10, leaseMillis: 1000 })
      assert.strictEqual(free.length, 1)
    }))
})

describe("Inbox over RPC", () => {
  it.scopedLive("every client's watch sees an item; a second client answers it; the asker gets the answer", () =>
    Effect.gen(function*() {
      const { another, client, inbox } = yield* clientFor([])
      const second = yield* another
      const watchOne = yield* Effect.fork(collect(client.Inbox.Watch().pipe(Stream.take(2))))
      const watchTwo = yield* Effect.fork(collect(second.Inbox.Watch().pipe(Stream.take(2))))
      const asked = yield* Effect.fork(inbox.ask({
        _tag: "Approval",
        origin: { server: "echo", tool: "mcp__echo__echo" },
        tool: "mcp__echo__echo",
        arguments: { message: "hi" },
        annotations: {},
        reason: "not marked read-only"
      }))
      const [pending] = yield* eventuallyEffect(client.Inbox.List(), (items) => items.length > 0, "an inbox item")
      assert.strictEqual(pending!._tag, "Approval")
      // The wrong kind of answer is refused with the group's error; the item stays pending.
      const mismatch = yield* Effect.flip(second.Inbox.Resolve({ id: pending!.id, answer: InboxItem.Accept.make({}) }))
      assert.strictEqual(mismatch._tag, "InboxAnswerMismatch")
      yield* second.Inbox.Resolve({ id: pending!.id, answer: InboxItem.Approve.make({ always: false }) })
      const answer = yield* Fiber.join(asked)
      assert.strictEqual(answer._tag, "Approve")
      for (const seen of [yield* Fiber.join(watchOne), yield* Fiber.join(watchTwo)]) {
        assert.deepStrictEqual(seen.map((c) => c._tag), ["ItemAdded", "ItemResolved"])
        assert.deepStrictEqual(seen[1], InboxItem.ItemResolved.make({ id: pending!.id, outcome: "approved" }))
      }
      const gone = yield* Effect.flip(client.Inbox.Resolve({ id: pending!.id, answer: InboxItem.Deny.make({}) }))
      assert.strictEqual(gone._tag, "InboxItemNotFound")
      assert.deepStrictEqual(yield* client.Inbox.List(), [])
    }))
})

describe("TurnLog", () => {
  const event = (i: number) => ({ _tag: "TextDelta", text: String(i) }) as unknown as TurnEvent.TurnEvent

  it.effect.prop(
    "from any index: exactly the events from there on while kept (at least `capacity`), else EventsLost",
    [fc.nat({ max: 60 }), fc.nat({ max: 60 }), fc.integer({ min: 1, max: 40 })],
    ([count, from, capacity]) =>
      Effect.gen(function*() {
        const log = yield* TurnLog.make(capacity)
        // A reader waiting from the start sees every event as it comes, whatever the capacity.
        const live = yield* Effect.fork(collect(log.from(0)))
        yield* Effect.yieldNow()
        for (let i = 0; i < count; i++) {
          yield* log.append(event(i))
          yield* Effect.yieldNow()
        }
        yield* log.end
        assert.deepStrictEqual(yield* Fiber.join(live), Array.from({ length: count }, (_, i) => event(i)))
        // The model of what is kept: the oldest `capacity` go when twice that are held.
        let held = 0
        let base = 0
        for (let i = 0; i < count; i++) {
          held++
          if (held >= 2 * capacity) {
            held -= capacity
            base += capacity
          }
        }
        assert.isAtLeast(held, Math.min(count, capacity))
        const got = yield* Effect.either(collect(log.from(from)))
        if (from >= base) {
          assert.deepStrictEqual(
            got._tag === "Right" ? got.right : got,
            Array.from({ length: Math.max(0, count - from) }, (_, i) => event(from + i))
          )
        } else {
          assert.isTrue(got._tag === "Left")
          if (got._tag === "Left") {
            assert.deepStrictEqual([got.left.fromIndex, got.left.firstKept], [from, base])
          }
        }
      })
  )

  it.effect("a reader further behind than the log keeps gets EventsLost naming the first kept index", () =>
    Effect.gen(function*() {
      const log = yield* TurnLog.make(4)
      for (let i = 0; i < 8; i++) yield* log.append(event(i))
      yield* log.end
      const lost = yield* Effect.flip(collect(log.from(2)))
      assert.deepStrictEqual({ fromIndex: lost.fromIndex, firstKept: lost.firstKept }, { fromIndex: 2, firstKept: 4 })
      assert.deepStrictEqual(yield* collect(log.from(4)), [4, 5, 6, 7].map(event))
    }))
})
