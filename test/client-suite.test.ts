/**
 * One client suite, run over every transport: stdio, and streamable HTTP against the same SDK
 * fixture servers (servers.ts) in three server modes — stateful with SSE answers, stateless, and
 * stateful with plain JSON answers. The cases are the same everywhere: identity, text, isError,
 * unknown tools, structured output, media bytes, pagination, concurrency, server notifications
 * and requests, the call timeout and interruption (each sends one `notifications/cancelled`; over
 * HTTP the abandoned POST is aborted too, as the fixture sees off the wire).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { McpError } from "@skald/domain"
import { McpClient } from "@skald/mcp"
import { Context, Effect, Exit, Fiber, Layer } from "effect"
import type { Scope } from "effect"
import { fixture } from "./fixtures/fixtures.js"
import { BLOB, BLOB_URI, LINK_URI, PNG, WAV } from "./fixtures/media-bytes.js"
import { httpClientLayer, httpFixture, startHttpFixture } from "./http-support.js"
import {
  bytes,
  clientLayer,
  eventually,
  expectJson,
  expectMedia,
  expectText,
  makeLogCapture,
  readRecords,
  tempRecordFile
} from "./support.js"

type Env = Readonly<Record<string, string>>

interface Target {
  readonly name: string
  readonly http: boolean
  /** The server instance that receives `notifications/cancelled` is the one running the call. */
  readonly sameServer: boolean
  /**
   * The server can send its own requests (ping, roots/list) and get the answers: not a stateless
   * HTTP server, whose answer POST reaches a fresh server instance that never asked.
   */
  readonly serverRequests: boolean
  /**
   * The server can send notifications while a call runs: not an SDK server answering with plain
   * JSON bodies (`enableJsonResponse` drops them; it has no stream to put them on).
   */
  readonly notificationsDuringCall: boolean
  /** A client of fixture `kind` (echo, cancel, structured, media, paginated). */
  readonly layer: (
    kind: string,
    env?: Env,
    client?: McpClient.Options
  ) => Layer.Layer<McpClient.McpClient, McpError.McpError | Error>
}

const overHttp = (mode: "stateful" | "stateless" | "json"): Target => ({
  name: `http (${mode})`,
  http: true,
  sameServer: mode !== "stateless",
  serverRequests: mode !== "stateless",
  notificationsDuringCall: mode !== "json",
  layer: (kind, env, client) =>
    Layer.unwrapScoped(
      Effect.map(startHttpFixture(httpFixture(kind, mode, env)), (server) =>
        httpClientLayer(kind, server.url, client === undefined ? {} : { client }))
    )
})

const targets: ReadonlyArray<Target> = [
  {
    name: "stdio",
    http: false,
    sameServer: true,
    serverRequests: true,
    notificationsDuringCall: true,
    layer: (kind, env, client) => clientLayer(kind, fixture(kind, env), client === undefined ? {} : { client })
  },
  overHttp("stateful"),
  overHttp("stateless"),
  overHttp("json")
]

const connect = (
  target: Target,
  kind: string,
  env?: Env,
  client?: McpClient.Options
): Effect.Effect<McpClient.Service, McpError.McpError | Error, Scope.Scope> =>
  Layer.build(target.layer(kind, env, client)).pipe(Effect.map(Context.get(McpClient.McpClient)))

const echoTools = ["echo", "fail", "log", "ping_client", "ask_roots"]

for (const target of targets) {
  layer(target.layer("echo"), { excludeTestServices: true })(
    `${target.name}: echo fixture (one shared connection)`,
    (it) => {
      it.effect("initializes with the current protocol version and the server's identity", () =>
        Effect.gen(function*() {
          const client = yield* McpClient.McpClient
          assert.strictEqual(client.identity.protocolVersion, "2025-11-25")
          assert.strictEqual(client.identity.serverInfo.name, "fixture-echo")
          assert.strictEqual(client.identity.instructions, "Say something and it is said back.")
          assert.deepStrictEqual(client.identity.capabilities.logging, {})
          const tools = yield* client.tools
          assert.deepStrictEqual(tools.map((t) => t.name), echoTools)
          assert.deepStrictEqual(tools[0]!.inputSchema.required, ["message"])
        }))

      it.effect("echo answers a Text result", () =>
        Effect.gen(function*() {
          const client = yield* McpClient.McpClient
          const outcome = yield* client.callTool("echo", { message: "hello, ünïcode ✓" })
          const text = expectText(outcome.result)
          assert.strictEqual(text.text, "hello, ünïcode ✓")
          assert.isFalse(text.isError)
          assert.deepStrictEqual(outcome.wire.content, [{ type: "text", text: "hello, ünïcode ✓" }])
        }))

      it.effect("an isError result succeeds and keeps isError", () =>
        Effect.gen(function*() {
          const client = yield* McpClient.McpClient
          const outcome = yield* client.callTool("fail", { why: "on purpose" })
          const text = expectText(outcome.result)
          assert.isTrue(text.isError)
          assert.strictEqual(text.text, "the tool failed: on purpose")
          assert.strictEqual(outcome.wire.isError, true)
        }))

      it.effect("an unknown tool fails with McpUnknownTool naming the tools on offer", () =>
        Effect.gen(function*() {
          const client = yield* McpClient.McpClient
          const error = yield* Effect.flip(client.callTool("no-such-tool", {}))
          assert.instanceOf(error, McpError.McpUnknownTool)
          assert.strictEqual(error.tool, "no-such-tool")
          assert.strictEqual(error.server, "echo")
          assert.deepStrictEqual([...error.available], echoTools)
        }))

      it.effect("100 concurrent calls each get their own answer", () =>
        Effect.gen(function*() {
          const client = yield* McpClient.McpClient
          const messages = Array.from({ length: 100 }, (_, i) => `message #${i} ${"·".repeat(i % 17)}`)
          const answers = yield* Effect.forEach(
            messages,
            (message) => Effect.map(client.callTool("echo", { message }), (o) => expectText(o.result).text),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual(answers, messages)
        }))

      it.effect("a 1 MiB answer of multi-byte characters arrives intact", () =>
        Effect.gen(function*() {
          const client = yield* McpClient.McpClient
          const message = "é✓😀 line\r\n".repeat(Math.ceil((1024 * 1024) / 15))
          const outcome = yield* client.callTool("echo", { message })
          const text = expectText(outcome.result).text
          assert.strictEqual(text.length, message.length)
          assert.isTrue(text === message)
        }))

      if (target.serverRequests) {
        it.effect("answers a server request it has no handler for with method not found", () =>
          Effect.gen(function*() {
            const client = yield* McpClient.McpClient
            const outcome = yield* client.callTool("ask_roots")
            assert.strictEqual(expectText(outcome.result).text, "roots/list failed with code -32601")
          }))

        it.effect("answers the server's ping", () =>
          Effect.gen(function*() {
            const client = yield* McpClient.McpClient
            const outcome = yield* client.callTool("ping_client")
            assert.strictEqual(expectText(outcome.result).text, "the client answered ping with {}")
          }))
      }
    }
  )

  describe(`${target.name}: one connection each`, () => {
    if (target.notificationsDuringCall) {
      it.live("notifications/message sent during a call reaches the log sink at its level", () =>
        Effect.gen(function*() {
          const logs = makeLogCapture()
          yield* Effect.scoped(
            Effect.gen(function*() {
              const client = yield* connect(target, "echo")
              yield* client.callTool("log", { level: "warning", message: "disk almost full" })
              yield* client.callTool("log", { level: "error", message: { structured: [1, 2] } })
            })
          ).pipe(logs.provide)
          const fromServer = logs.lines.filter((l) => l.text.startsWith("fixture: "))
          assert.deepStrictEqual(fromServer.map((l) => ({ ...l })), [
            { server: "echo", tag: "warning", text: "fixture: disk almost full" },
            { server: "echo", tag: "error", text: "fixture: {\"structured\":[1,2]}" }
          ])
        }))
    }

    it.live("structuredContent matching its outputSchema is Json; a violation warns and still succeeds", () =>
      Effect.gen(function*() {
        const logs = makeLogCapture()
        const [good, bad] = yield* Effect.scoped(
          Effect.gen(function*() {
            const client = yield* connect(target, "structured")
            const good = yield* client.callTool("weather", { city: "Lisbon" })
            const bad = yield* client.callTool("weather_bad", {})
            return [good, bad] as const
          })
        ).pipe(logs.provide)
        assert.deepStrictEqual(expectJson(good.result).value, {
          city: "Lisbon",
          temperature: 21.5,
          conditions: "sunny"
        })
        assert.deepStrictEqual(expectJson(bad.result).value, { city: "Oslo", temperature: "cold" })
        const warnings = logs.withTag("warning")
        assert.strictEqual(warnings.length, 1, warnings.join("\n"))
        assert.match(warnings[0]!, /^tool weather_bad: structuredContent does not match its outputSchema: /)
        assert.include(warnings[0]!, "/temperature")
      }))

    it.scopedLive("media results carry the exact bytes: image, audio, embedded blob, resource link", () =>
      Effect.gen(function*() {
        const client = yield* connect(target, "media")
        const inline = (name: string) =>
          Effect.map(client.callTool(name), (outcome) => {
            const media = expectMedia(outcome.result)
            const item = media.items[0]!
            if (item._tag !== "Inline") return assert.fail(`expected inline media from ${name}`)
            return { media, item }
          })
        const image = yield* inline("image")
        assert.strictEqual(image.media.text, "a tiny image")
        assert.strictEqual(image.item.kind, "image")
        assert.strictEqual(image.item.mimeType, "image/png")
        assert.deepStrictEqual(bytes(image.item.data), bytes(PNG))
        const audio = yield* inline("audio")
        assert.strictEqual(audio.item.mimeType, "audio/wav")
        assert.deepStrictEqual(bytes(audio.item.data), bytes(WAV))
        const blob = yield* inline("blob")
        assert.strictEqual(blob.item.uri, BLOB_URI)
        assert.deepStrictEqual(bytes(blob.item.data), bytes(BLOB))
        const link = expectMedia((yield* client.callTool("link")).result)
        assert.deepStrictEqual(link.items.map((i) => ({ ...i })), [
          { _tag: "Link", uri: LINK_URI, name: "report.pdf", mimeType: "application/pdf" }
        ])
      }))

    it.scopedLive("follows nextCursor through 50 pages and returns all 5,000 tools", () =>
      Effect.gen(function*() {
        const client = yield* connect(target, "paginated")
        const list = yield* client.refreshTools
        assert.strictEqual(list.wire.length, 5000)
        assert.deepStrictEqual(
          list.tools.map((t) => t.name),
          Array.from({ length: 5000 }, (_, i) => `tool-${String(i).padStart(5, "0")}`)
        )
        const outcome = yield* client.callTool("tool-04999")
        assert.strictEqual(expectText(outcome.result).text, "called tool-04999")
      }))
  })

  describe(`${target.name}: cancellation`, () => {
    const connectRecording = Effect.gen(function*() {
      const file = yield* tempRecordFile("suite-cancel")
      const client = yield* connect(target, "cancel", { FIXTURE_RECORD: file })
      const records = () => readRecords(file)
      const startedWait = () => records().filter((r) => r.event === "started" && r.tool === "wait")
      const ofEvent = (event: string) => records().filter((r) => r.event === event)
      return { client, records, startedWait, ofEvent }
    })

    /** What the server saw of an abandoned call with id `id`, waited for (bounded). */
    const expectCancelled = (
      rec: Effect.Effect.Success<typeof connectRecording>,
      id: unknown,
      reason: string
    ) =>
      Effect.gen(function*() {
        yield* eventually(() => rec.ofEvent("cancelled").length > 0, "notifications/cancelled arrived")
        if (target.http) {
          // The POST that carried the abandoned request was aborted.
          yield* eventually(
            () => rec.ofEvent("post-aborted").some((r) => (r.ids as Array<unknown>).includes(id)),
            "the call's POST was aborted"
          )
        }
        if (target.sameServer) {
          // The SDK aborted the handler with that reason.
          yield* eventually(() => rec.ofEvent("aborted").length > 0, "the handler was aborted")
          assert.deepStrictEqual(rec.ofEvent("aborted"), [{ event: "aborted", requestId: id, reason }])
        }
        assert.deepStrictEqual(rec.ofEvent("cancelled"), [{ event: "cancelled", requestId: id, reason }])
      })

    it.scopedLive("a call timeout fails with McpTimeout and the server gets notifications/cancelled (timeout)", () =>
      Effect.gen(function*() {
        const rec = yield* connectRecording
        const error = yield* Effect.flip(rec.client.callTool("wait", {}, { timeout: "300 millis" }))
        assert.instanceOf(error, McpError.McpTimeout)
        assert.strictEqual(error.method, "tools/call")
        assert.strictEqual(error.timeoutMillis, 300)
        yield* eventually(() => rec.startedWait().length > 0, "the wait tool started")
        const started = rec.startedWait()
        assert.strictEqual(started.length, 1)
        yield* expectCancelled(rec, started[0]!.requestId, McpClient.TIMEOUT_REASON)
        // The connection is still usable.
        assert.strictEqual(expectText((yield* rec.client.callTool("mark")).result).text, "mark done")
      }))

    it.scopedLive("interrupting a call sends notifications/cancelled with the stop reason", () =>
      Effect.gen(function*() {
        const rec = yield* connectRecording
        const fiber = yield* Effect.fork(rec.client.callTool("wait"))
        yield* eventually(() => rec.startedWait().length === 1, "the wait tool started")
        const exit = yield* Fiber.interrupt(fiber)
        assert.isTrue(Exit.isInterrupted(exit))
        yield* expectCancelled(rec, rec.startedWait()[0]!.requestId, McpClient.STOP_REASON)
        assert.strictEqual(expectText((yield* rec.client.callTool("mark")).result).text, "mark done")
      }))

    it.scopedLive("closing the scope with a call in flight tells the server: notifications/cancelled (stop)", () =>
      Effect.gen(function*() {
        const file = yield* tempRecordFile("suite-close")
        const records = () => readRecords(file)
        yield* Effect.scoped(
          Effect.gen(function*() {
            const client = yield* connect(target, "cancel", { FIXTURE_RECORD: file })
            yield* Effect.forkScoped(client.callTool("wait"))
            yield* eventually(() => records().some((r) => r.event === "started"), "the wait tool started")
          })
        )
        // The scope closed the client before the server (stdio: waited for its exit; HTTP: the
        // fixture is killed after the client's finalizers), so the record is complete.
        const id = records().find((r) => r.event === "started")!.requestId
        assert.deepStrictEqual(records().filter((r) => r.event === "cancelled"), [
          { event: "cancelled", requestId: id, reason: McpClient.STOP_REASON }
        ])
      }))

    it.scopedLive("answered calls send no notifications/cancelled and abort nothing", () =>
      Effect.gen(function*() {
        const rec = yield* connectRecording
        const outcome = yield* rec.client.callTool("quick", {}, { timeout: "30 seconds" })
        assert.strictEqual(expectText(outcome.result).text, "quick done")
        assert.strictEqual(expectText((yield* rec.client.callTool("mark")).result).text, "mark done")
        assert.deepStrictEqual(rec.records().filter((r) => r.event === "started").map((r) => r.tool), ["quick", "mark"])
        assert.deepStrictEqual(rec.ofEvent("cancelled"), [])
        assert.deepStrictEqual(rec.ofEvent("post-aborted"), [])
      }))
  })
}
