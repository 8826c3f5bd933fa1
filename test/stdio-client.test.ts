/**
 * McpClient over StdioTransport against fixture servers built on the official SDK's server API:
 * result classification, structured output checks, pagination, tool-list changes, logs.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { McpError } from "@skald/domain"
import { McpClient, StdioTransport } from "@skald/mcp"
import { Effect, Option, Stream } from "effect"
import * as Crypto from "node:crypto"
import { fixture } from "./fixtures/fixtures.js"
import { BLOB, BLOB_URI, LINK_URI, PNG, WAV } from "./fixtures/media-bytes.js"
import { bytes, clientLayer, connect, expectJson, expectMedia, expectText, makeLogCapture } from "./support.js"

/** Waits (bounded) until the client's tool list contains `name`; returns that list's names. */
const awaitToolInList = (
  changes: Stream.Stream<{ readonly tools: ReadonlyArray<{ readonly name: string }> }>,
  name: string
) =>
  changes.pipe(
    Stream.map((list) => list.tools.map((t) => t.name)),
    Stream.filter((names) => names.includes(name)),
    Stream.runHead,
    Effect.timeoutFail({ duration: "15 seconds", onTimeout: () => new Error(`the tool list never contained ${name}`) }),
    Effect.map(Option.getOrThrow)
  )

layer(clientLayer("echo", fixture("echo")), { excludeTestServices: true })(
  "echo fixture (one shared connection)",
  (it) => {
    it.effect("initializes with the current protocol version and lists the tools", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        assert.strictEqual(client.identity.protocolVersion, "2025-11-25")
        assert.strictEqual(client.identity.serverInfo.name, "fixture-echo")
        assert.strictEqual(client.identity.instructions, "Say something and it is said back.")
        assert.deepStrictEqual(client.identity.capabilities.logging, {})
        const tools = yield* client.tools
        assert.deepStrictEqual(tools.map((t) => t.name), ["echo", "fail", "log", "ping_client", "ask_roots"])
        const echo = tools[0]!
        assert.strictEqual(echo.taskSupport, "forbidden")
        assert.deepStrictEqual(echo.inputSchema.required, ["message"])
      }))
  }
)

describe("echo fixture", () => {
  it.live("stderr lines reach the log sink tagged stderr, with lifecycle lines", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("echo-logs", fixture("echo"))
          yield* client.callTool("echo", { message: "12345" })
        })
      ).pipe(logs.provide)
      const stderr = logs.withTag("stderr")
      assert.include(stderr, "echo fixture: ready")
      assert.include(stderr, "echo fixture: echoing 5 chars")
      assert.isTrue(logs.lines.every((l) => l.server === "echo-logs"))
      const lifecycle = logs.withTag("lifecycle")
      assert.isTrue(lifecycle.some((l) => l.startsWith("started (pid ")), lifecycle.join("\n"))
      assert.isTrue(lifecycle.some((l) => l.startsWith("connected: fixture-echo")), lifecycle.join("\n"))
      assert.isTrue(lifecycle.some((l) => l === "exited with code 0"), lifecycle.join("\n"))
      assert.isFalse(lifecycle.some((l) => l.includes("SIGTERM")), lifecycle.join("\n"))
      assert.deepStrictEqual(logs.withTag("warning"), [])
    }))

  it.live("notifications/message reaches the log sink at its level, with its logger", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("echo-mcp-log", fixture("echo"))
          yield* client.callTool("log", { level: "warning", message: "disk almost full" })
          yield* client.callTool("log", { level: "debug", message: { structured: [1, 2] } })
          yield* client.callTool("log", { level: "error", message: "it broke" })
        })
      ).pipe(logs.provide)
      const fromServer = logs.lines.filter((l) => l.text.startsWith("fixture: "))
      assert.deepStrictEqual(fromServer.map((l) => ({ ...l })), [
        { server: "echo-mcp-log", tag: "warning", text: "fixture: disk almost full" },
        { server: "echo-mcp-log", tag: "debug", text: "fixture: {\"structured\":[1,2]}" },
        { server: "echo-mcp-log", tag: "error", text: "fixture: it broke" }
      ])
    }))
})

describe("structured output fixture", () => {
  it.live("structuredContent that matches its outputSchema is a Json result, without warnings", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const outcome = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("structured", fixture("structured"))
          const tools = yield* client.tools
          const weather = tools.find((t) => t.name === "weather")
          assert.isDefined(weather?.outputSchema)
          return yield* client.callTool("weather", { city: "Lisbon" })
        })
      ).pipe(logs.provide)
      const json = expectJson(outcome.result)
      assert.deepStrictEqual(json.value, { city: "Lisbon", temperature: 21.5, conditions: "sunny" })
      assert.isFalse(json.isError)
      assert.deepStrictEqual(logs.withTag("warning"), [])
    }))

  it.live("structuredContent that violates its outputSchema logs a warning and the call still succeeds", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const outcome = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("structured", fixture("structured"))
          return yield* client.callTool("weather_bad", {})
        })
      ).pipe(logs.provide)
      const json = expectJson(outcome.result)
      assert.deepStrictEqual(json.value, { city: "Oslo", temperature: "cold" })
      assert.isFalse(json.isError)
      const warnings = logs.withTag("warning")
      assert.strictEqual(warnings.length, 1, warnings.join("\n"))
      assert.match(warnings[0]!, /^tool weather_bad: structuredContent does not match its outputSchema: /)
      // Names the failing locations, never the values.
      assert.include(warnings[0]!, "/temperature")
      assert.notInclude(warnings[0]!, "cold")
    }))
})

layer(clientLayer("media", fixture("media")), { excludeTestServices: true })(
  "media fixture (one shared connection)",
  (it) => {
    it.effect("an image block is Media with the PNG's bytes", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const media = expectMedia((yield* client.callTool("image")).result)
        assert.strictEqual(media.text, "a tiny image")
        assert.isFalse(media.isError)
        assert.strictEqual(media.items.length, 1)
        const item = media.items[0]!
        if (item._tag !== "Inline") return assert.fail("expected inline media")
        assert.strictEqual(item.kind, "image")
        assert.strictEqual(item.mimeType, "image/png")
        assert.deepStrictEqual(bytes(item.data), bytes(PNG))
      }))

    it.effect("an audio block is Media with the WAV's bytes", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const media = expectMedia((yield* client.callTool("audio")).result)
        assert.strictEqual(media.text, "")
        const item = media.items[0]!
        if (item._tag !== "Inline") return assert.fail("expected inline media")
        assert.strictEqual(item.kind, "audio")
        assert.strictEqual(item.mimeType, "audio/wav")
        assert.deepStrictEqual(bytes(item.data), bytes(WAV))
        assert.strictEqual(Buffer.from(item.data.subarray(0, 4)).toString("ascii"), "RIFF")
      }))

    it.effect("an embedded resource blob is Media with its uri and decoded bytes", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const media = expectMedia((yield* client.callTool("blob")).result)
        assert.strictEqual(media.text, "an embedded blob")
        assert.strictEqual(media.items.length, 1)
        const item = media.items[0]!
        if (item._tag !== "Inline") return assert.fail("expected inline media")
        assert.strictEqual(item.kind, "resource")
        assert.strictEqual(item.uri, BLOB_URI)
        assert.strictEqual(item.mimeType, "application/octet-stream")
        assert.deepStrictEqual(bytes(item.data), bytes(BLOB))
      }))

    it.effect("a resource_link is Media with a Link item", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const media = expectMedia((yield* client.callTool("link")).result)
        assert.deepStrictEqual(media.items.map((i) => ({ ...i })), [
          { _tag: "Link", uri: LINK_URI, name: "report.pdf", mimeType: "application/pdf" }
        ])
      }))
  }
)

describe("pagination fixture", () => {
  it.live("a cursor that never clears stops at 50 pages with a warning and keeps what it read", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const list = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("endless", fixture("paginated", { FIXTURE_ENDLESS: "1" }))
          return yield* client.refreshTools
        })
      ).pipe(logs.provide)
      assert.strictEqual(list.tools.length, 50 * 100)
      assert.strictEqual(list.tools[4999]?.name, "tool-04999")
      assert.deepStrictEqual(logs.withTag("warning"), [
        "tools/list still had a nextCursor after 50 pages; kept the 5000 tools read so far"
      ])
    }))

  it.live("maxToolPages bounds the pages followed", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const list = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("endless", fixture("paginated", { FIXTURE_ENDLESS: "1", FIXTURE_PAGE: "7" }), {
            client: { maxToolPages: 3 }
          })
          return yield* client.refreshTools
        })
      ).pipe(logs.provide)
      assert.strictEqual(list.tools.length, 21)
      assert.deepStrictEqual(logs.withTag("warning"), [
        "tools/list still had a nextCursor after 3 pages; kept the 21 tools read so far"
      ])
    }))
})

describe("list_changed fixture", () => {
  it.scopedLive("a tool registered after initialize is seen once the server announces it", () =>
    Effect.gen(function*() {
      const client = yield* connect("late", fixture("list-changed", { FIXTURE_LATE_MS: "300" }))
      const first = yield* client.tools
      assert.include(first.map((t) => t.name), "first")
      const names = yield* awaitToolInList(client.toolListChanges, "late")
      assert.includeMembers(names, ["first", "add", "add_silently", "late"])
      assert.include((yield* client.tools).map((t) => t.name), "late")
      const outcome = yield* client.callTool("late")
      assert.strictEqual(expectText(outcome.result).text, "late here")
    }))

  it.scopedLive("notifications/tools/list_changed refreshes the cached list", () =>
    Effect.gen(function*() {
      const client = yield* connect("announce", fixture("list-changed", { FIXTURE_LATE_MS: "-1" }))
      const before = (yield* client.tools).map((t) => t.name)
      assert.deepStrictEqual(before, ["first", "add", "add_silently"])
      yield* client.callTool("add", { name: "announced" })
      // Nothing but the announcement makes the client list again.
      const names = yield* awaitToolInList(client.toolListChanges, "announced")
      assert.deepStrictEqual(names, ["first", "add", "add_silently", "announced"])
    }))

  it.scopedLive("calling a tool not seen yet refreshes the list once first", () =>
    Effect.gen(function*() {
      const client = yield* connect("silent-add", fixture("list-changed", { FIXTURE_LATE_MS: "-1" }))
      yield* client.callTool("add_silently", { name: "hidden" })
      // Not announced: the cached list does not have it...
      assert.notInclude((yield* client.tools).map((t) => t.name), "hidden")
      // ...but calling it lists again before giving up.
      const outcome = yield* client.callTool("hidden")
      assert.strictEqual(expectText(outcome.result).text, "hidden here")
      assert.include((yield* client.tools).map((t) => t.name), "hidden")
      const error = yield* Effect.flip(client.callTool("still-missing"))
      assert.instanceOf(error, McpError.McpUnknownTool)
      assert.deepStrictEqual([...error.available], ["first", "add", "add_silently", "hidden"])
    }))
})

describe("the server's environment", () => {
  const digestOf = (client: McpClient.Service, name: string) =>
    Effect.map(
      client.callTool("env_digest", { name }),
      (outcome) => (outcome.result._tag === "Text" ? outcome.result.text : "?")
    )
  const sha = (s: string) => Crypto.createHash("sha256").update(s).digest("hex")

  it.scopedLive("inherits this process's by default, with env merged over it; with inheritEnv false, env alone", () =>
    Effect.gen(function*() {
      const parentOnly = `parent-${Crypto.randomUUID()}`
      process.env.SKALD_TEST_PARENT_ONLY = parentOnly
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env.SKALD_TEST_PARENT_ONLY))
      const command = fixture("host", { GIVEN: "given" })

      const inheriting = yield* StdioTransport.client({ server: "inheriting", ...command })
      assert.strictEqual(yield* digestOf(inheriting, "SKALD_TEST_PARENT_ONLY"), sha(parentOnly))
      assert.strictEqual(yield* digestOf(inheriting, "GIVEN"), sha("given"))

      const isolated = yield* StdioTransport.client({ server: "isolated", ...command, inheritEnv: false })
      assert.strictEqual(yield* digestOf(isolated, "SKALD_TEST_PARENT_ONLY"), "unset")
      assert.strictEqual(yield* digestOf(isolated, "PATH"), "unset")
      assert.strictEqual(yield* digestOf(isolated, "GIVEN"), sha("given"))
    }))
})
