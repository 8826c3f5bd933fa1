/**
 * The HTTP transport against real and hostile servers: `@modelcontextprotocol/server-everything`
 * over streamable HTTP and over the legacy HTTP+SSE transport (the fallback); the headers the
 * client sends, seen off the wire by a recording fixture; session expiry; a dropped SSE stream
 * resumed with Last-Event-ID; DELETE on close; every kind of bad answer as a typed error; and the
 * `skald` CLI's `--http` / `--api-key-env`. Every server listens on 127.0.0.1 (server-everything
 * on every interface, but only its loopback URL is used).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { McpError } from "@skald/domain"
import { McpClient } from "@skald/mcp"
import { Effect, Exit, Fiber, Layer } from "effect"
import { execFile } from "node:child_process"
import * as Http from "node:http"
import * as Path from "node:path"
import { PNG_SIGNATURE } from "./fixtures/media-bytes.js"
import {
  connectHttp,
  freePort,
  hostileHttp,
  httpClientLayer,
  httpFixture,
  startEverything,
  startHttpFixture
} from "./http-support.js"
import {
  eventually,
  expectJson,
  expectMedia,
  expectText,
  makeLogCapture,
  readRecords,
  tempRecordFile
} from "./support.js"

type Rec = Record<string, unknown>

/** A hostile fixture in `mode` with a record file; `records()` reads what it saw so far. */
const startHostile = (mode: string, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const file = yield* tempRecordFile(`hostile-http-${mode}`)
    const server = yield* startHttpFixture(hostileHttp(mode, { FIXTURE_RECORD: file, ...env }))
    const records = (): Array<Rec> => readRecords(file)
    const ofEvent = (event: string) => records().filter((r) => r.event === event)
    return { url: server.url, records, ofEvent }
  })

const methodsOf = (r: Rec) => (r.messages as Array<{ method?: string }>).map((m) => m.method)

/** An McpHttpError, or a failed assertion naming what came instead. */
const expectHttpError = (error: unknown): McpError.McpHttpError => {
  if (!(error instanceof McpError.McpHttpError)) return assert.fail(`expected McpHttpError, got ${String(error)}`)
  return error
}

// --- server-everything -------------------------------------------------------------------

const everythingLayer = (transport: "streamableHttp" | "sse") =>
  Layer.unwrapScoped(Effect.map(startEverything(transport), (server) => httpClientLayer("everything", server.url)))

for (const transport of ["streamableHttp", "sse"] as const) {
  layer(everythingLayer(transport), { excludeTestServices: true })(`server-everything over ${transport}`, (it) => {
    it.effect("initializes and lists its tools", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        assert.strictEqual(client.identity.protocolVersion, "2025-11-25")
        assert.isString(client.identity.serverInfo.name)
        const names = (yield* client.tools).map((t) => t.name)
        assert.includeMembers(names, ["echo", "get-structured-content", "get-tiny-image"])
      }))

    it.effect("get-structured-content is a Json result", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const outcome = yield* client.callTool("get-structured-content", { location: "New York" })
        const json = expectJson(outcome.result)
        const value = json.value as { temperature?: unknown; conditions?: unknown }
        assert.isNumber(value.temperature)
        assert.isString(value.conditions)
        assert.isFalse(json.isError)
      }))

    it.effect("get-tiny-image is Media with PNG bytes", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const media = expectMedia((yield* client.callTool("get-tiny-image")).result)
        const image = media.items.find((i) => i._tag === "Inline" && i.kind === "image")
        if (image === undefined || image._tag !== "Inline") return assert.fail("no inline image")
        assert.strictEqual(image.mimeType, "image/png")
        assert.deepStrictEqual(Array.from(image.data.subarray(0, 8)), [...PNG_SIGNATURE])
      }))

    it.effect("echo answers through the same session", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const outcome = yield* client.callTool("echo", { message: "over HTTP" })
        assert.strictEqual(expectText(outcome.result).text, "Echo: over HTTP")
      }))
  })
}

describe("server-everything: the legacy fallback", () => {
  it.live("an initialize answered 404 falls back to HTTP+SSE, says so, and works", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const text = yield* Effect.scoped(
        Effect.gen(function*() {
          const server = yield* startEverything("sse")
          const client = yield* connectHttp("legacy", server.url)
          return expectText((yield* client.callTool("echo", { message: "legacy" })).result).text
        })
      ).pipe(logs.provide)
      assert.strictEqual(text, "Echo: legacy")
      const lifecycle = logs.withTag("lifecycle")
      assert.include(lifecycle, "initialize got HTTP 404: trying the legacy HTTP+SSE transport")
      assert.isTrue(
        lifecycle.some((l) =>
          /^legacy HTTP\+SSE transport: posting to http:\/\/127\.0\.0\.1:\d+\/message\?sessionId=/.test(l)
        ),
        lifecycle.join("\n")
      )
    }))
})

// --- headers, seen off the wire ---------------------------------------------------------------

describe("headers", () => {
  it.live("Mcp-Session-Id after initialize; MCP-Protocol-Version on every request after initialize, never on it", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("normal")
      yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connectHttp("headers", hostile.url)
          yield* client.callTool("echo", { message: "one" })
          yield* client.callTool("echo", { message: "two" })
          // The GET stream is opened once initialized went through.
          yield* eventually(() => hostile.records().some((r) => r.method === "GET"), "the GET stream was tried")
        })
      ).pipe(Effect.scoped)
      const requests = hostile.ofEvent("request")
      const [first, ...rest] = requests
      assert.deepStrictEqual(methodsOf(first!), ["initialize"])
      assert.isUndefined(first!.protocolVersion)
      assert.isUndefined(first!.sessionId)
      assert.isUndefined(first!.authorization)
      assert.include(String(first!.accept), "application/json")
      assert.include(String(first!.accept), "text/event-stream")
      assert.isAtLeast(rest.length, 5)
      for (const r of rest) {
        assert.strictEqual(r.sessionId, "session-1", JSON.stringify(r))
        assert.strictEqual(r.protocolVersion, "2025-11-25", JSON.stringify(r))
        assert.isUndefined(r.authorization)
      }
      const posted = rest.filter((r) => r.method === "POST").flatMap(methodsOf)
      assert.deepStrictEqual(posted, ["notifications/initialized", "tools/list", "tools/call", "tools/call"])
      assert.strictEqual(rest.at(-1)!.method, "DELETE")
    }).pipe(Effect.scoped))

  it.scopedLive("an apiKey is sent as Authorization: Bearer on every request", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("normal")
      yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connectHttp("bearer", hostile.url, { transport: { apiKey: "s3cret-token" } })
          yield* client.callTool("echo", { message: "x" })
        })
      )
      const requests = hostile.ofEvent("request")
      assert.isAtLeast(requests.length, 4)
      for (const r of requests) assert.strictEqual(r.authorization, "Bearer s3cret-token", JSON.stringify(r))
    }))

  it.scopedLive("closing the scope sends DELETE with the session id, and nothing after it", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("normal")
      yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connectHttp("delete", hostile.url)
          yield* client.callTool("echo", { message: "x" })
          yield* eventually(() => hostile.records().some((r) => r.method === "GET"), "the GET stream was tried")
          assert.deepStrictEqual(hostile.ofEvent("delete"), [])
        })
      )
      assert.deepStrictEqual(hostile.ofEvent("delete"), [{ event: "delete", sessionId: "session-1" }])
      assert.strictEqual(hostile.ofEvent("request").at(-1)!.method, "DELETE")
    }))

  it.scopedLive("the SDK server with a required token: the right key works, a missing or wrong one is a 401 naming the api key", () =>
    Effect.gen(function*() {
      const file = yield* tempRecordFile("http-token")
      // (The wrong key is distinctive, so the message can be checked for it.)
      const server = yield* startHttpFixture(
        httpFixture("echo", "stateful", { FIXTURE_TOKEN: "t0ken", FIXTURE_RECORD: file })
      )
      const text = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connectHttp("token", server.url, { transport: { apiKey: "t0ken" } })
          return expectText((yield* client.callTool("echo", { message: "authorized" })).result).text
        })
      )
      assert.strictEqual(text, "authorized")
      assert.deepStrictEqual(readRecords(file).filter((r) => r.event === "unauthorized"), [])

      for (const apiKey of [undefined, "wr0ng-key-1234"]) {
        const error = expectHttpError(
          yield* Effect.flip(Effect.scoped(connectHttp("token", server.url, { transport: { apiKey } })))
        )
        assert.strictEqual(readRecords(file).at(-1)?.event, "unauthorized")
        assert.strictEqual(error.status, 401)
        assert.strictEqual(error.url, server.url)
        assert.include(error.message, "api key")
        assert.include(error.message, "initialize")
        // Never the key itself.
        assert.notInclude(error.message, "wr0ng-key-1234")
      }
    }))
})

// --- session expiry and resumption ------------------------------------------------------------

describe("session expiry", () => {
  it.scopedLive("a 404 on the session starts exactly one new session, transparently, and the call succeeds", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("expire", { FIXTURE_EXPIRE_AFTER: "2" })
      const logs = makeLogCapture()
      const text = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connectHttp("expire", hostile.url)
          yield* client.tools // POST 2 on session-1: the next one expires it
          return expectText((yield* client.callTool("echo", { message: "still here" })).result).text
        })
      ).pipe(logs.provide)
      assert.strictEqual(text, "still here")
      assert.deepStrictEqual(hostile.ofEvent("initialize").map((r) => r.sessionId), ["session-1", "session-2"])
      assert.deepStrictEqual(hostile.ofEvent("expired"), [{
        event: "expired",
        sessionId: "session-1",
        method: "tools/call"
      }])
      const posts = hostile.ofEvent("request").filter((r) => r.method === "POST")
      const afterExpiry = posts.slice(
        posts.findIndex((r) => r.sessionId === "session-1" && methodsOf(r)[0] === "tools/call") + 1
      )
      const reinit = afterExpiry[0]!
      assert.deepStrictEqual(methodsOf(reinit), ["initialize"])
      assert.isUndefined(reinit.sessionId)
      assert.isUndefined(reinit.protocolVersion)
      assert.deepStrictEqual(
        afterExpiry.slice(1).map((r) => [methodsOf(r)[0], r.sessionId]),
        [["notifications/initialized", "session-2"], ["tools/call", "session-2"]]
      )
      assert.deepStrictEqual(hostile.ofEvent("delete"), [{ event: "delete", sessionId: "session-2" }])
      assert.include(logs.withTag("lifecycle"), "the session expired (HTTP 404): starting a new one")
    }))

  it.scopedLive("twenty calls that all hit the expired session share one new session", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("expire", { FIXTURE_EXPIRE_AFTER: "2" })
      const client = yield* connectHttp("expire-many", hostile.url)
      yield* client.tools
      const messages = Array.from({ length: 20 }, (_, i) => `call ${i}`)
      const answers = yield* Effect.forEach(
        messages,
        (message) => Effect.map(client.callTool("echo", { message }), (o) => expectText(o.result).text),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(answers, messages)
      assert.strictEqual(hostile.ofEvent("initialize").length, 2)
    }))

  it.scopedLive("a session that expires on notifications/initialized is replaced before the first call", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("expire", { FIXTURE_EXPIRE_AFTER: "0" })
      const client = yield* connectHttp("expire-now", hostile.url)
      assert.strictEqual(expectText((yield* client.callTool("echo", { message: "ok" })).result).text, "ok")
      assert.deepStrictEqual(hostile.ofEvent("expired").map((r) => r.method), ["notifications/initialized"])
      assert.strictEqual(hostile.ofEvent("initialize").length, 2)
    }))

  it.scopedLive("when the new session expires at once too, the request fails with a typed 404 — no loop", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("expire", { FIXTURE_EXPIRE_AFTER: "1", FIXTURE_EXPIRE_EVERY: "1" })
      const client = yield* connectHttp("expire-always", hostile.url)
      // session-1: initialized (1), tools/list → 404; session-2: initialized (1), tools/list again → 404.
      const error = expectHttpError(yield* Effect.flip(client.callTool("echo", { message: "x" })))
      assert.strictEqual(error.status, 404)
      assert.include(error.message, "tools/list failed")
      assert.deepStrictEqual(hostile.ofEvent("initialize").map((r) => r.sessionId), ["session-1", "session-2"])
      assert.deepStrictEqual(hostile.ofEvent("expired").map((r) => r.sessionId), ["session-1", "session-2"])
    }))
})

describe("tasks across a session expiry", () => {
  it.scopedLive(
    "a task of the expired session fails with a typed error that says so, not a retry against the new one",
    () =>
      Effect.gen(function*() {
        // session-1 carries initialized, tools/list and the task's tools/call; its first tasks/get finds it gone.
        const hostile = yield* startHostile("expire", { FIXTURE_EXPIRE_AFTER: "3" })
        const client = yield* connectHttp("expire-task", hostile.url, {
          client: { pollIntervalBounds: { min: "100 millis", max: "1 second" } }
        }).pipe(makeLogCapture().provide)
        const error = expectHttpError(yield* Effect.flip(client.callTool("task", {})))
        assert.include(error.message, "task task-1 belonged to a session that expired")
        assert.deepStrictEqual(hostile.ofEvent("initialize").map((r) => r.sessionId), ["session-1", "session-2"])
        // The stale task was never asked about on the new session.
        const onNewSession = hostile.ofEvent("request").filter((r) => r.sessionId === "session-2").flatMap(methodsOf)
        assert.notInclude(onNewSession, "tasks/get")
      }),
    { timeout: 30_000 }
  )
})

describe("session expiry on the SDK server", () => {
  for (const mode of ["stateful", "json"] as const) {
    it.scopedLive(`${mode}: after a transparent new session, the call succeeds and the server can still reach the client`, () =>
      Effect.gen(function*() {
        const file = yield* tempRecordFile(`sdk-expire-${mode}`)
        const records = () => readRecords(file)
        const server = yield* startHttpFixture(
          httpFixture("echo", mode, { FIXTURE_SESSION_REQUESTS: "2", FIXTURE_RECORD: file })
        )
        const client = yield* connectHttp("sdk-expire", server.url, { client: { callTimeout: "5 seconds" } })
        yield* client.tools // POST 2 on the first session: the next one finds it gone
        assert.strictEqual(expectText((yield* client.callTool("echo", { message: "again" })).result).text, "again")
        const sessions = records().filter((r) => r.event === "initialize").map((r) => r.sessionId)
        assert.strictEqual(sessions.length, 2)
        assert.deepStrictEqual(records().filter((r) => r.event === "session-dropped").map((r) => r.sessionId), [
          sessions[0]
        ])
        // ping_client makes the server ping the client on its GET stream (the stream of no request):
        // the new session needs one too.
        const outcome = yield* client.callTool("ping_client")
        assert.strictEqual(expectText(outcome.result).text, "the client answered ping with {}")
      }))
  }
})

describe("stateless SDK server", () => {
  it.scopedLive("no session: no Mcp-Session-Id is sent, the refused GET is tried once, and no DELETE", () =>
    Effect.gen(function*() {
      const file = yield* tempRecordFile("stateless")
      const server = yield* startHttpFixture(httpFixture("echo", "stateless", { FIXTURE_RECORD: file }))
      const logs = makeLogCapture()
      yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connectHttp("stateless", server.url)
          yield* client.callTool("echo", { message: "x" })
          yield* eventually(() => readRecords(file).some((r) => r.method === "GET"), "the GET stream was tried")
          yield* client.callTool("echo", { message: "y" })
        })
      ).pipe(logs.provide)
      const requests = readRecords(file).filter((r) => r.event === "request")
      assert.isTrue(requests.every((r) => r.sessionId === undefined))
      assert.deepStrictEqual(requests.filter((r) => r.method !== "POST").map((r) => r.method), ["GET"])
      assert.include(logs.withTag("lifecycle"), "the server offers no GET stream")
    }))
})

describe("message size counts bytes", () => {
  for (const mode of ["stateful", "json"] as const) {
    it.scopedLive(`${mode}: an answer of multi-byte characters over maxMessageBytes (in bytes) fails with McpMessageTooLarge`, () =>
      Effect.gen(function*() {
        const server = yield* startHttpFixture(httpFixture("echo", mode))
        const client = yield* connectHttp("bytes", server.url, { transport: { maxMessageBytes: 64 * 1024 } })
        // 40,000 characters, 120,000 bytes of UTF-8: under the limit in characters, over it in bytes.
        const outcome = yield* Effect.either(client.callTool("echo", { message: "€".repeat(40_000) }))
        if (outcome._tag === "Right") {
          return assert.fail("the answer (over 120,000 bytes of UTF-8, under 65,536 characters) was accepted")
        }
        assert.instanceOf(outcome.left, McpError.McpMessageTooLarge)
      }))
  }
})

describe("resumption on the SDK server", () => {
  it.scopedLive("a stream the server closes (closeSSEStream) is resumed with Last-Event-ID and the call succeeds", () =>
    Effect.gen(function*() {
      const file = yield* tempRecordFile("sdk-resume")
      const records = () => readRecords(file)
      const server = yield* startHttpFixture(httpFixture("resumable", "stateful", { FIXTURE_RECORD: file }))
      const logs = makeLogCapture()
      const text = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connectHttp("sdk-resume", server.url, { client: { callTimeout: "10 seconds" } })
          return expectText((yield* client.callTool("drop_then_answer", { message: "came back" })).result).text
        })
      ).pipe(logs.provide)
      assert.strictEqual(text, "came back")
      assert.strictEqual(records().filter((r) => r.event === "stream-closed").length, 1)
      const resumes = records().filter((r) =>
        r.event === "request" && r.method === "GET" && r.lastEventId !== undefined
      )
      assert.isAtLeast(resumes.length, 1)
      const fromServer = logs.lines.filter((l) => l.text.startsWith("fixture: ")).map((l) => l.text)
      assert.deepStrictEqual(fromServer, ["fixture: before the drop", "fixture: after the drop"])
    }))
})

describe("message size", () => {
  for (const mode of ["stateful", "json"] as const) {
    it.scopedLive(`${mode}: an answer over maxMessageBytes fails with McpMessageTooLarge`, () =>
      Effect.gen(function*() {
        const server = yield* startHttpFixture(httpFixture("echo", mode))
        const client = yield* connectHttp("too-large", server.url, { transport: { maxMessageBytes: 64 * 1024 } })
        const ok = yield* client.callTool("echo", { message: "x".repeat(60 * 1024) })
        assert.strictEqual(expectText(ok.result).text.length, 60 * 1024)
        const error = yield* Effect.flip(client.callTool("echo", { message: "x".repeat(256 * 1024) }))
        assert.instanceOf(error, McpError.McpMessageTooLarge)
        assert.strictEqual(error.limitBytes, 64 * 1024)
      }))
  }
})

describe("resumption", () => {
  it.scopedLive("a dropped SSE answer is resumed with Last-Event-ID and the call succeeds", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("drop")
      const logs = makeLogCapture()
      const text = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connectHttp("drop", hostile.url)
          return expectText((yield* client.callTool("echo", { message: "resumed" })).result).text
        })
      ).pipe(logs.provide)
      assert.strictEqual(text, "resumed")
      assert.deepStrictEqual(hostile.ofEvent("resume"), [{ event: "resume", lastEventId: "ev-1" }])
      const get = hostile.ofEvent("request").find((r) => r.lastEventId === "ev-1")!
      assert.strictEqual(get.method, "GET")
      assert.strictEqual(get.sessionId, "session-1")
      assert.strictEqual(get.protocolVersion, "2025-11-25")
      assert.include(String(get.accept), "text/event-stream")
      // Both halves of the stream reached the client.
      const fromServer = logs.withTag("info").filter((l) => l.startsWith("hostile: "))
      assert.deepStrictEqual(fromServer, ["hostile: the first half", "hostile: the second half"])
    }))
})

describe("resumption refused", () => {
  it.scopedLive("a dropped stream whose resumption is refused fails the call with a typed error", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("drop", { FIXTURE_RESUME: "refuse" })
      const client = yield* connectHttp("no-resume", hostile.url)
      const error = expectHttpError(yield* Effect.flip(client.callTool("echo", { message: "x" })))
      assert.strictEqual(error.status, 400)
      assert.include(error.reason, "refused to resume")
      assert.deepStrictEqual(hostile.ofEvent("resume"), [{ event: "resume", lastEventId: "ev-1" }])
    }))
})

// --- bad answers --------------------------------------------------------------------------------

describe("bad answers are typed errors", () => {
  const badCall = (mode: string) =>
    Effect.gen(function*() {
      const hostile = yield* startHostile(mode)
      const client = yield* connectHttp(mode, hostile.url)
      const error = expectHttpError(yield* Effect.flip(client.callTool("echo", { message: "x" })))
      assert.strictEqual(error.server, mode)
      assert.strictEqual(error.url, hostile.url)
      assert.include(error.message, hostile.url)
      // The connection is still usable afterwards.
      assert.deepStrictEqual((yield* client.refreshTools).tools.map((t) => t.name), ["echo", "wait", "task"])
      return error
    })

  it.scopedLive("a body that is not JSON, labelled application/json", () =>
    Effect.gen(function*() {
      const error = yield* badCall("not-json")
      assert.include(error.reason, "not JSON")
    }))

  it.scopedLive("a wrong content type (text/html)", () =>
    Effect.gen(function*() {
      const error = yield* badCall("wrong-type")
      assert.include(error.reason, "text/html")
      assert.include(error.reason, "not JSON or SSE")
    }))

  it.scopedLive("an SSE stream that ends before the answer (no event ids to resume from)", () =>
    Effect.gen(function*() {
      const error = yield* badCall("sse-close")
      assert.include(error.reason, "closed the stream before it answered")
    }))

  it.scopedLive("HTTP 500 with a body: the status and the body", () =>
    Effect.gen(function*() {
      const error = yield* badCall("status-500")
      assert.strictEqual(error.status, 500)
      assert.include(error.message, "tools/call failed")
      assert.include(error.message, "internal kaboom: the database is down")
    }))

  it.live("HTTP 401: connecting fails with a message about the api key", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("unauthorized")
      const error = expectHttpError(yield* Effect.flip(Effect.scoped(connectHttp("unauthorized", hostile.url))))
      assert.strictEqual(error.status, 401)
      assert.include(error.message, "the api key is missing or wrong")
      // The error names no flag; the command line says which of its own to use (below).
      assert.notInclude(error.message, "--api-key")
    }).pipe(Effect.scoped))

  it.live("HTTP 500 on initialize: connecting fails with the status (no legacy fallback)", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("status-500", { FIXTURE_ON: "initialize" })
      const error = expectHttpError(yield* Effect.flip(Effect.scoped(connectHttp("init-500", hostile.url))))
      assert.strictEqual(error.status, 500)
      assert.include(error.message, "initialize failed")
      assert.deepStrictEqual(hostile.ofEvent("request").map((r) => r.method), ["POST"])
    }).pipe(Effect.scoped))

  it.scopedLive("a POST never answered: McpTimeout; the POST is aborted and notifications/cancelled is POSTed", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("never")
      const client = yield* connectHttp("never", hostile.url, { client: { callTimeout: "300 millis" } })
      const error = yield* Effect.flip(client.callTool("echo", { message: "hello?" }))
      assert.instanceOf(error, McpError.McpTimeout)
      assert.strictEqual(error.timeoutMillis, 300)
      const calls = () =>
        hostile.ofEvent("request").flatMap((r) => r.messages as Array<Rec>).filter((m) => m.method === "tools/call")
      yield* eventually(() => calls().length === 1, "the call was POSTed")
      const id = calls()[0]!.id
      yield* eventually(() => hostile.ofEvent("cancelled").length > 0, "notifications/cancelled arrived")
      yield* eventually(() => hostile.ofEvent("post-aborted").length > 0, "the POST was aborted")
      assert.deepStrictEqual(hostile.ofEvent("cancelled"), [{ event: "cancelled", requestId: id, reason: "timeout" }])
      assert.deepStrictEqual(hostile.ofEvent("post-aborted"), [{ event: "post-aborted", ids: [id] }])
    }))

  it.scopedLive("interrupting a call whose POST is never answered aborts it and POSTs notifications/cancelled", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("normal")
      const client = yield* connectHttp("stop", hostile.url)
      const fiber = yield* Effect.fork(client.callTool("wait"))
      const calls = () =>
        hostile.ofEvent("request").flatMap((r) => r.messages as Array<Rec>).filter((m) => m.method === "tools/call")
      yield* eventually(() => calls().length === 1, "the call was POSTed")
      assert.isTrue(Exit.isInterrupted(yield* Fiber.interrupt(fiber)))
      const id = calls()[0]!.id
      yield* eventually(() => hostile.ofEvent("cancelled").length > 0, "notifications/cancelled arrived")
      yield* eventually(() => hostile.ofEvent("post-aborted").length > 0, "the POST was aborted")
      assert.deepStrictEqual(hostile.ofEvent("cancelled"), [
        { event: "cancelled", requestId: id, reason: McpClient.STOP_REASON }
      ])
      assert.deepStrictEqual(hostile.ofEvent("post-aborted"), [{ event: "post-aborted", ids: [id] }])
    }))

  it.live("initialize never answered: McpTimeout from the start timeout", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("never", { FIXTURE_ON: "initialize" })
      const error = yield* Effect.flip(
        Effect.scoped(connectHttp("never-init", hostile.url, { client: { startTimeout: "300 millis" } }))
      )
      assert.instanceOf(error, McpError.McpTimeout)
      assert.strictEqual(error.method, "initialize")
      yield* eventually(() => hostile.ofEvent("post-aborted").length > 0, "the initialize POST was aborted")
    }).pipe(Effect.scoped))

  it.live("a URL that serves neither transport (POST 404, GET 404): a typed error", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("normal")
      const url = hostile.url.replace(/\/mcp$/, "/elsewhere")
      const error = expectHttpError(yield* Effect.flip(Effect.scoped(connectHttp("nowhere", url))))
      assert.strictEqual(error.status, 404)
      assert.include(error.message, "neither streamable HTTP nor the legacy SSE transport is served here")
      assert.deepStrictEqual(hostile.ofEvent("request").map((r) => [r.method, r.path]), [
        ["POST", "/elsewhere"],
        ["GET", "/elsewhere"]
      ])
    }).pipe(Effect.scoped))

  for (const mode of ["endless-json", "endless-sse"]) {
    it.scopedLive(`${mode}: a body that never ends fails with McpMessageTooLarge once past the limit, not a timeout`, () =>
      Effect.gen(function*() {
        const hostile = yield* startHostile(mode)
        const client = yield* connectHttp(mode, hostile.url, {
          transport: { maxMessageBytes: 64 * 1024 },
          client: { callTimeout: "5 seconds" }
        })
        const error = yield* Effect.flip(client.callTool("echo", { message: "x" }))
        assert.instanceOf(error, McpError.McpMessageTooLarge)
        assert.strictEqual(error.limitBytes, 64 * 1024)
      }))
  }

  it.live("connection refused: a typed error telling to check the URL", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const url = `http://127.0.0.1:${port}/mcp`
      const error = expectHttpError(yield* Effect.flip(Effect.scoped(connectHttp("refused", url))))
      assert.isUndefined(error.status)
      assert.strictEqual(error.url, url)
      assert.include(error.message, "could not reach the server")
      assert.include(error.message, "check the URL and that the server is running")
    }))
})

// --- the CLI --------------------------------------------------------------------------------

const root = Path.resolve(import.meta.dirname, "..")
const skald = Path.join(root, "packages/server/bin/skald.js")

interface Run {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the built `skald`; a run that has not exited after 30 s is killed and reported (status null). */
const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.async<Run>((resume) => {
    const child = execFile(
      process.execPath,
      [skald, ...args],
      { cwd: root, env: { ...process.env, ...env }, timeout: 30_000, killSignal: "SIGKILL" },
      (error, stdout, stderr) => {
        const killed = error !== null && error.killed === true
        resume(Effect.succeed({
          status: error ? (typeof error.code === "number" ? error.code : null) : 0,
          stdout,
          stderr: killed ? `[skald did not exit within 30 s and was killed]\n${stderr}` : stderr
        }))
      }
    )
    return Effect.sync(() => void child.kill("SIGKILL"))
  })

describe("skald CLI over --http", () => {
  it.scopedLive("call get-structured-content against server-everything prints the structured JSON", () =>
    Effect.gen(function*() {
      const server = yield* startEverything("streamableHttp")
      const r = yield* run([
        "call",
        "get-structured-content",
        "--http",
        server.url,
        "--args",
        "{\"location\":\"New York\"}"
      ])
      assert.strictEqual(r.status, 0, r.stderr)
      const value = JSON.parse(r.stdout) as { temperature: unknown }
      assert.isNumber(value.temperature)
      assert.isTrue(r.stdout.includes("\n  \""), "pretty-printed")
    }))

  it.scopedLive("tools --http URL --api-key-env VAR sends the bearer token on every request", () =>
    Effect.gen(function*() {
      const file = yield* tempRecordFile("cli-token")
      const server = yield* startHttpFixture(
        httpFixture("echo", "stateful", { FIXTURE_TOKEN: "cli-t0ken", FIXTURE_RECORD: file })
      )
      const r = yield* run(["tools", "--http", server.url, "--api-key-env", "SKALD_TEST_KEY"], {
        SKALD_TEST_KEY: "cli-t0ken"
      })
      assert.strictEqual(r.status, 0, r.stderr)
      assert.deepStrictEqual(r.stdout.trim().split("\n").map((l) => l.split(" ")[0]), [
        "echo",
        "fail",
        "log",
        "ping_client",
        "ask_roots"
      ])
      const requests = readRecords(file).filter((r) => r.event === "request")
      assert.isAtLeast(requests.length, 3)
      for (const q of requests) assert.strictEqual(q.authorization, "Bearer cli-t0ken", JSON.stringify(q))
      assert.notInclude(r.stderr, "cli-t0ken")
    }))

  it.scopedLive("call over --http prints the answer and ends the session with a DELETE", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("normal")
      const r = yield* run(["call", "echo", "--http", hostile.url, "--args", "{\"message\":\"hi there\"}"])
      assert.strictEqual(r.status, 0, r.stderr)
      assert.strictEqual(r.stdout, "hi there\n")
      assert.deepStrictEqual(hostile.ofEvent("delete"), [{ event: "delete", sessionId: "session-1" }])
    }))

  it.scopedLive("tools over --http to a legacy SSE endpoint (server-everything sse)", () =>
    Effect.gen(function*() {
      const server = yield* startEverything("sse")
      const r = yield* run(["tools", "--http", server.url])
      assert.strictEqual(r.status, 0, r.stderr)
      const names = r.stdout.trim().split("\n").map((l) => l.split(" ")[0])
      assert.includeMembers(names, ["echo", "get-structured-content", "get-tiny-image"])
    }))

  it.scopedLive("call over --http that never gets an answer exits 2 after --timeout with a timeout message", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("never")
      const r = yield* run(["call", "echo", "--timeout", "1", "--http", hostile.url, "--args", "{\"message\":\"x\"}"])
      assert.strictEqual(r.status, 2, r.stderr)
      assert.strictEqual(r.stdout, "")
      assert.match(r.stderr.split("\n")[0]!, /did not answer tools\/call within 1 s/)
      yield* eventually(() => hostile.ofEvent("cancelled").length === 1, "notifications/cancelled arrived", "5 seconds")
      assert.strictEqual(hostile.ofEvent("cancelled")[0]!.reason, "timeout")
    }))

  it.scopedLive("call over --http answered HTTP 500 exits 2 naming the status and the body", () =>
    Effect.gen(function*() {
      const hostile = yield* startHostile("status-500")
      const r = yield* run(["call", "echo", "--http", hostile.url, "--args", "{\"message\":\"x\"}"])
      assert.strictEqual(r.status, 2, r.stderr)
      const first = r.stderr.split("\n")[0]!
      assert.include(first, "HTTP 500")
      assert.include(first, "internal kaboom")
    }))

  it.scopedLive("tools --http without the key exits 2 and says the api key is missing or wrong", () =>
    Effect.gen(function*() {
      const server = yield* startHttpFixture(httpFixture("echo", "stateful", { FIXTURE_TOKEN: "cli-t0ken" }))
      const r = yield* run(["tools", "--http", server.url])
      assert.strictEqual(r.status, 2, r.stderr)
      assert.strictEqual(r.stdout, "")
      assert.include(r.stderr.split("\n")[0]!, "api key")
      // The command line's hint, on the next line: which of its flags gives the key.
      assert.strictEqual(
        r.stderr.split("\n")[1],
        "skald: pass the api key with --api-key-env VAR; a registered server is given a new one with " +
          "`skald mcp add NAME --replace --http URL --api-key-env VAR` (or --api-key KEY)"
      )
    }))
})

describe("closing is bounded", () => {
  it.scopedLive(
    "a server that never answers the closing DELETE does not hold the scope past closeTimeout",
    () =>
      Effect.gen(function*() {
        // A minimal server on loopback: initialize answered, notifications accepted, DELETE never answered.
        const deletes: Array<string | undefined> = []
        const server = Http.createServer((req, res) => {
          if (req.method === "DELETE") return void deletes.push(req.headers["mcp-session-id"] as string | undefined)
          if (req.method === "GET") return void res.writeHead(405).end()
          let body = ""
          req.on("data", (c) => (body += String(c)))
          req.on("end", () => {
            const m = JSON.parse(body) as { id?: number; params?: { protocolVersion?: string } }
            if (m.id === undefined) return void res.writeHead(202).end()
            res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s-1" }).end(JSON.stringify({
              jsonrpc: "2.0",
              id: m.id,
              result: {
                protocolVersion: m.params?.protocolVersion,
                capabilities: {},
                serverInfo: { name: "mute-delete" }
              }
            }))
          })
        })
        yield* Effect.acquireRelease(
          Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
          () => Effect.sync(() => server.closeAllConnections()).pipe(Effect.zipRight(Effect.sync(() => server.close())))
        )
        const { port } = server.address() as { port: number }
        yield* Effect.scoped(connectHttp("mute-delete", `http://127.0.0.1:${port}/mcp`, {
          transport: { closeTimeout: "300 millis" }
        }))
        // The scope above closed although the DELETE was never answered (the test's timeout would catch a hang).
        assert.deepStrictEqual(deletes, ["s-1"])
      }),
    { timeout: 15_000 }
  )
})
