/**
 * The RPC end to end (issue 22): `@effect/rpc`'s client over a real WebSocket (NodeSocket) against
 * a real `skald serve`, with the stand-in model and a real MCP server registered over the RPC:
 * a turn calling the tool, admin calls, stop, re-attaching after a dropped socket, a server's
 * question answered from a second client through the inbox; and the
 * security rules — an upgrade from another Origin or for another Host is refused (status, no
 * upgrade), a non-loopback bind without a token refuses to start, a host with a token refuses
 * clients without it (and never echoes it).
 */
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as Socket from "@effect/platform/Socket"
import * as RpcClient from "@effect/rpc/RpcClient"
import { assert, describe, it } from "@effect/vitest"
import { InboxItem, RpcProtocol, type TurnEvent } from "@skald/domain"
import * as RpcServer from "@skald/server/rpc/RpcServer"
import { Chunk, Effect, Exit, Fiber, Layer, Queue, Scope, Stream } from "effect"
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import { runSkald, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { makeHome } from "./host-support.js"
import { modelEnv } from "./serve-support.js"
import { eventuallyEffect } from "./support.js"

const TOKEN = "test-token-0123456789abcdef"

/** `skald serve` over a fresh home, stopped with the scope. */
const serve = (env: Record<string, string> = {}, args: ReadonlyArray<string> = [], home = makeHome()) =>
  Effect.acquireRelease(
    Effect.promise(() => startServe(home, env, args)),
    (s) => Effect.promise(() => stopProcess(s.child))
  )

/** An RPC client of every group over a WebSocket to `url` (offering the token's subprotocol when given). */
const connect = (url: string, token?: string) =>
  Layer.build(
    RpcClient.layerProtocolSocket().pipe(
      Layer.provide(
        Layer.scoped(
          Socket.Socket,
          Socket.makeWebSocket(`${url.replace(/^http/, "ws")}${RpcProtocol.PATH}`, {
            protocols: RpcProtocol.protocolsFor(token)
          })
        )
      ),
      Layer.provide(NodeSocket.layerWebSocketConstructor),
      Layer.provide(RpcProtocol.layerSerialization)
    )
  ).pipe(Effect.flatMap((protocol) => RpcClient.make(RpcServer.Rpcs).pipe(Effect.provide(protocol))))

interface Upgrade {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
}

/** A raw WebSocket upgrade request to `/rpc` with the given headers: the status it got (101 = upgraded). */
const upgrade = (url: string, headers: Record<string, string>) =>
  Effect.async<Upgrade>((resume) => {
    const target = new URL(url)
    const req = Http.request({
      host: target.hostname,
      port: target.port,
      path: RpcProtocol.PATH,
      agent: false,
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": Crypto.randomBytes(16).toString("base64"),
        ...headers
      }
    })
    req.on("upgrade", (res, socket) => {
      socket.destroy()
      resume(Effect.succeed({ status: res.statusCode!, headers: res.headers }))
    })
    req.on("response", (res) => {
      res.resume()
      resume(Effect.succeed({ status: res.statusCode!, headers: res.headers }))
    })
    req.on("error", (error) => resume(Effect.die(error)))
    req.end()
  })

const collect = <A, E, R>(stream: Stream.Stream<A, E, R>) => Effect.map(Stream.runCollect(stream), Chunk.toArray)

describe("RPC over skald serve", () => {
  it.scopedLive("admin calls, a turn calling a real MCP tool, stop, and re-attaching after a dropped socket", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([
        ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["echo"] } }]),
        ModelStandin.toolCalls([{ id: "c1", name: "mcp__echo__echo", arguments: { message: "over rpc" } }]),
        ModelStandin.text(["Echoed ", "it."]),
        ModelStandin.hanging(["one ", "two "])
      ])
      // The echo tool is allowed by a rule (approvals over RPC are the next test's).
      const home = makeHome()
      const rule = yield* Effect.promise(() => runSkald(["approvals", "set", "--home", home, "mcp__echo__*", "allow"]))
      assert.strictEqual(rule.status, 0, rule.stderr)
      const host = yield* serve(modelEnv(standin.url), [], home)
      const client = yield* connect(host.url)
      assert.strictEqual((yield* client.Host.Version()).version, "0.1.0")
      const settings = yield* client.Host.Settings()
      assert.deepStrictEqual([
        settings.model.configured,
        settings.model.model,
        settings.bindHost,
        settings.tokenRequired
      ], [
        true,
        "m",
        "127.0.0.1",
        false
      ])
      // Admin: register the echo fixture over the RPC; the host connects it live.
      const echo = fixture("echo")
      yield* client.Mcp.Add({ name: "echo", transport: { _tag: "stdio", command: echo.command, args: echo.args } })
      yield* eventuallyEffect(
        client.Mcp.List(),
        (all) => all.some((s) => s.name === "echo" && s.state === "connected"),
        "echo to connect"
      )
      assert.include((yield* client.Mcp.Tools({ name: "echo" })).map((t) => t.name), "mcp__echo__echo")

      // A turn: the model activates the server's tools, calls echo, answers.
      const events = yield* collect(client.Agent.Send({ message: "echo it" }))
      assert.strictEqual(events[0]!._tag, "TurnStarted")
      const done = events.filter((e): e is TurnEvent.ToolDone => e._tag === "ToolDone")
      assert.deepStrictEqual(done.map((d) => [d.name, d.status, d.result]), [
        ["activate_tools", "done", done[0]!.result],
        ["mcp__echo__echo", "done", "over rpc"]
      ])
      const end = events[events.length - 1] as TurnEvent.TurnDone
      assert.deepStrictEqual([end._tag, end.text], ["TurnDone", "Echoed it."])
      const sessionId = (events[0] as TurnEvent.TurnStarted).sessionId

      // A second turn hangs mid-answer; its client reads three events and its socket drops.
      const dropped = yield* Scope.make()
      const first = yield* Effect.gen(function*() {
        const gone = yield* connect(host.url)
        return yield* gone.Agent.Send({ message: "say more", sessionId }).pipe(Stream.take(3), collect)
      }).pipe(Scope.extend(dropped))
      yield* Scope.close(dropped, Exit.void)
      assert.deepStrictEqual(first.map((e) => e._tag), ["TurnStarted", "TextDelta", "TextDelta"])
      // The turn went on: another client attaches from index 1, sees it running, stops it.
      const rest = yield* Effect.fork(collect(client.Agent.Attach({ sessionId, fromIndex: 1 })))
      const sessions = yield* client.Agent.Sessions()
      assert.isTrue(sessions.find((s) => s.id === sessionId)!.running)
      assert.deepStrictEqual(yield* client.Agent.Stop({ sessionId }), { stopped: true })
      const attached = yield* Fiber.join(rest)
      assert.deepStrictEqual(attached.slice(0, 2), first.slice(1))
      assert.strictEqual(attached[2]!._tag, "TurnStopped")
      assert.strictEqual((attached[2] as TurnEvent.TurnStopped).text, "one two ")
      const history = yield* client.Agent.History({ sessionId })
      // Three rounds of the first turn (the calls' results on their messages), the stopped turn's partial answer kept.
      assert.deepStrictEqual(history.messages.map((m) => m.role), [
        "user",
        "assistant",
        "assistant",
        "assistant",
        "user",
        "assistant"
      ])
      assert.strictEqual(history.messages[5]!.text, "one two ")
      assert.deepStrictEqual(history.messages.flatMap((m) => m.calls.map((c) => [c.name, c.status, c.resultType])), [
        ["activate_tools", "done", "string"],
        ["mcp__echo__echo", "done", "string"]
      ])
    }))

  it.scopedLive(
    "a turn's approval and then its server's question are inbox items every client watches; a second client answers both",
    () =>
      Effect.gen(function*() {
        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["elicit"] } }]),
          ModelStandin.toolCalls([{ id: "c1", name: "mcp__elicit__ask_slowly", arguments: {} }]),
          ModelStandin.text(["Asked."])
        ])
        const host = yield* serve(modelEnv(standin.url))
        const asker = yield* connect(host.url)
        const answerer = yield* connect(host.url)
        const elicit = fixture("elicit")
        yield* asker.Mcp.Add({
          name: "elicit",
          transport: { _tag: "stdio", command: elicit.command, args: elicit.args }
        })
        yield* eventuallyEffect(
          asker.Mcp.List(),
          (all) => all.some((s) => s.name === "elicit" && s.state === "connected"),
          "elicit to connect"
        )
        // Both clients watch; the asker's turn runs. The call is not read-only, so it is first held for
        // approval (serve asks: mode ask); once approved, the server's question follows.
        const watchOfAsker = yield* Effect.fork(collect(asker.Inbox.Watch().pipe(Stream.take(4))))
        const added = yield* Queue.unbounded<InboxItem.InboxItem>()
        yield* answerer.Inbox.Watch().pipe(
          Stream.runForEach((c) => c._tag === "ItemAdded" ? Queue.offer(added, c.item) : Effect.void),
          Effect.forkScoped
        )
        const turn = yield* Effect.fork(collect(asker.Agent.Send({ message: "ask me" })))
        const approval = yield* Queue.take(added)
        assert.strictEqual(approval._tag, "Approval")
        assert.strictEqual((approval as InboxItem.Approval).tool, "mcp__elicit__ask_slowly")
        yield* answerer.Inbox.Resolve({ id: approval.id, answer: InboxItem.Approve.make({ always: false }) })
        const item = yield* Queue.take(added)
        assert.strictEqual(item._tag, "Elicitation")
        assert.strictEqual(item.origin.server, "elicit")
        yield* answerer.Inbox.Resolve({ id: item.id, answer: InboxItem.Accept.make({}) })
        const events = yield* Fiber.join(turn)
        const done = events.filter((e): e is TurnEvent.ToolDone => e._tag === "ToolDone").map((d) => [d.name, d.result])
        assert.deepStrictEqual(done[1], ["mcp__elicit__ask_slowly", "ask_slowly: accept"])
        const seen = yield* Fiber.join(watchOfAsker)
        assert.deepStrictEqual(seen.map((c) => c._tag), ["ItemAdded", "ItemResolved", "ItemAdded", "ItemResolved"])
        assert.deepStrictEqual(
          seen.filter((c): c is InboxItem.ItemResolved => c._tag === "ItemResolved").map((c) => c.outcome),
          ["approved", "accepted"]
        )
      })
  )

  it.scopedLive("an upgrade from another Origin, or for another Host, is refused with its status and no upgrade", () =>
    Effect.gen(function*() {
      const host = yield* serve()
      const own = new URL(host.url).host
      const evilOrigin = yield* upgrade(host.url, { host: own, origin: "http://evil.example" })
      assert.strictEqual(evilOrigin.status, 403)
      const evilHost = yield* upgrade(host.url, { host: "evil.example" })
      assert.strictEqual(evilHost.status, 421)
      const ownOrigin = yield* upgrade(host.url, {
        host: own,
        origin: `http://${own}`,
        "sec-websocket-protocol": "skald-rpc"
      })
      assert.strictEqual(ownOrigin.status, 101)
      assert.strictEqual(ownOrigin.headers["access-control-allow-origin"], undefined)
    }))

  it.scopedLive("a token: a non-loopback bind without one refuses to start; with one, clients without it are refused", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.promise(() =>
        runSkald(["serve", "--home", makeHome()], { env: { SKALD_HOST: "0.0.0.0", SKALD_PORT: "0" } })
      )
      assert.strictEqual(refused.status, 2)
      assert.include(refused.stderr, "needs an access token")
      const weak = yield* Effect.promise(() =>
        runSkald(["serve", "--home", makeHome()], { env: { SKALD_TOKEN: "short", SKALD_PORT: "0" } })
      )
      assert.strictEqual(weak.status, 2)
      assert.include(weak.stderr, "16-256")

      const host = yield* serve({ SKALD_TOKEN: TOKEN })
      const own = new URL(host.url).host
      assert.strictEqual((yield* upgrade(host.url, { host: own, "sec-websocket-protocol": "skald-rpc" })).status, 401)
      const wrong = yield* upgrade(host.url, {
        host: own,
        "sec-websocket-protocol": `skald-rpc, skald-token.${TOKEN}x`
      })
      assert.strictEqual(wrong.status, 401)
      const right = yield* upgrade(host.url, { host: own, "sec-websocket-protocol": `skald-rpc, skald-token.${TOKEN}` })
      assert.strictEqual(right.status, 101)
      // The host selects `skald-rpc`: the token is never echoed.
      assert.strictEqual(right.headers["sec-websocket-protocol"], "skald-rpc")
      const bearer = yield* upgrade(host.url, { host: own, authorization: `Bearer ${TOKEN}` })
      assert.strictEqual(bearer.status, 101)
      // The typed client with the token works; the settings say a token is required.
      const client = yield* connect(host.url, TOKEN)
      assert.isTrue((yield* client.Host.Settings()).tokenRequired)
    }))
})
