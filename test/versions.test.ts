/**
 * Servers where they are: older protocol versions (2024-11-05, 2024-10-07, 2025-03-26, 2025-06-18)
 * over stdio, streamable HTTP and the legacy HTTP+SSE transport — a hand-written server of the
 * 2024-11-05 generation (fixtures/legacy.mjs) and the official SDK's server pinned to an older
 * version — with the per-version rules (no `MCP-Protocol-Version` header before 2025-06-18, no
 * task augmentation before 2025-11-25); an unsupported version refused naming both versions and
 * the server; and calls to tools the server did not list.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpError } from "@skald/domain"
import { Effect } from "effect"
import { runSkald } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import { connectHttp, hostileHttp, httpFixture, startHttpFixture } from "./http-support.js"
import { connect, expectText, makeLogCapture, readRecords, tempFile, tempRecordFile } from "./support.js"

type Rec = Record<string, unknown>

const legacy = (transport: "stdio" | "sse", env: Record<string, string> = {}) => fixture("legacy", env, [transport])

/** The legacy fixture over stdio with a record file. */
const legacyStdio = (env: Record<string, string> = {}) => {
  const file = tempFile("legacy")
  return { command: legacy("stdio", { FIXTURE_RECORD: file, ...env }), records: (): Array<Rec> => readRecords(file) }
}

const negotiated = (version: string) => `the server negotiated protocol version ${version} (asked for 2025-11-25)`

describe("older protocol versions over stdio", () => {
  for (const version of ["2024-11-05", "2024-10-07"]) {
    it.live(`a hand-written ${version} server connects with a warning, lists and calls`, () =>
      Effect.gen(function*() {
        const logs = makeLogCapture()
        const server = legacyStdio({ FIXTURE_VERSION: version })
        const [identity, names, text] = yield* Effect.scoped(
          Effect.gen(function*() {
            const client = yield* connect("legacy", server.command)
            const tools = yield* client.tools
            const outcome = yield* client.callTool("echo", { message: "old but fine" })
            return [client.identity, tools.map((t) => t.name), expectText(outcome.result).text] as const
          })
        ).pipe(logs.provide)
        assert.strictEqual(identity.protocolVersion, version)
        assert.strictEqual(identity.serverInfo.name, "fixture-legacy")
        assert.deepStrictEqual(names, ["echo", "progress"])
        assert.strictEqual(text, "old but fine")
        assert.deepStrictEqual(logs.withTag("warning"), [negotiated(version)])
        const call = server.records().find((r) => r.method === "tools/call")!
        assert.deepStrictEqual((call.params as Rec).name, "echo")
        assert.notProperty(call.params as Rec, "task")
      }))
  }

  it.live("the official SDK server answering 2024-11-05 connects with a warning, lists and calls", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const [version, text] = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("sdk-old", fixture("echo", { FIXTURE_ANSWER_VERSION: "2024-11-05" }))
          assert.include((yield* client.tools).map((t) => t.name), "echo")
          const outcome = yield* client.callTool("echo", { message: "from the SDK" })
          return [client.identity.protocolVersion, expectText(outcome.result).text] as const
        })
      ).pipe(logs.provide)
      assert.strictEqual(version, "2024-11-05")
      assert.strictEqual(text, "from the SDK")
      assert.deepStrictEqual(logs.withTag("warning"), [negotiated("2024-11-05")])
    }))

  it.live("an unsupported version closes the connection with an error naming both versions and the server", () =>
    Effect.gen(function*() {
      const server = legacyStdio({ FIXTURE_VERSION: "2023-01-01" })
      const error = yield* Effect.flip(Effect.scoped(connect("registered-name", server.command)))
      assert.instanceOf(error, McpError.McpUnsupportedProtocolVersion)
      assert.strictEqual(error.server, "registered-name")
      assert.strictEqual(error.received, "2023-01-01")
      assert.strictEqual(error.requested, "2025-11-25")
      assert.deepStrictEqual([...error.supported], [
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
        "2024-10-07"
      ])
      assert.include(error.message, "MCP server 'registered-name' answered protocol version 2023-01-01")
      assert.include(error.message, "asked for 2025-11-25")
      // Nothing follows initialize: no notifications/initialized, no tools/list.
      assert.deepStrictEqual(server.records().map((r) => r.method), ["initialize"])
    }))

  it.live("nameFromServerInfo: errors name the server by its serverInfo.name", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(Effect.scoped(
        connect("node legacy.mjs", legacy("stdio", { FIXTURE_VERSION: "2023-01-01" }), {
          client: { nameFromServerInfo: true }
        })
      ))
      assert.strictEqual(refused.server, "fixture-legacy")
      const [server, timeout] = yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* connect("node legacy.mjs", legacy("stdio"), { client: { nameFromServerInfo: true } })
        return [
          client.server,
          yield* Effect.flip(client.callTool("progress", { steps: 1, intervalMs: 5000 }, { timeout: "100 millis" }))
        ] as const
      }))
      assert.strictEqual(server, "fixture-legacy")
      assert.instanceOf(timeout, McpError.McpTimeout)
      assert.strictEqual(timeout.server, "fixture-legacy")
      // An error the transport raises (the process exited) is relabelled too.
      const exited = yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* connect("node hostile.mjs", fixture("hostile", undefined, ["crash"]), {
          client: { nameFromServerInfo: true }
        })
        return yield* Effect.flip(client.callTool("echo", { message: "boom" }))
      }))
      assert.instanceOf(exited, McpError.McpServerExited)
      assert.strictEqual(exited.server, "fixture-hostile-crash")
      assert.strictEqual(exited.code, 3)
      assert.include(exited.message, "MCP server 'fixture-hostile-crash' exited with code 3")
    }))
})

describe("older protocol versions over HTTP", () => {
  const headersOf = (records: Array<Rec>, method: string) =>
    records.filter((r) => r.method === method).map((r) => r.protocolVersionHeader)

  it.scopedLive("a 2024-11-05 server on the legacy HTTP+SSE transport connects with a warning, lists and calls, without MCP-Protocol-Version", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const file = yield* tempRecordFile("legacy-sse")
      const text = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* startHttpFixture(legacy("sse", { FIXTURE_RECORD: file }))
        const client = yield* connectHttp("legacy-sse", server.url)
        assert.strictEqual(client.identity.protocolVersion, "2024-11-05")
        assert.deepStrictEqual((yield* client.tools).map((t) => t.name), ["echo", "progress"])
        return expectText((yield* client.callTool("echo", { message: "over sse" })).result).text
      })).pipe(logs.provide)
      assert.strictEqual(text, "over sse")
      assert.deepStrictEqual(logs.withTag("warning"), [negotiated("2024-11-05")])
      assert.include(logs.withTag("lifecycle"), "initialize got HTTP 405: trying the legacy HTTP+SSE transport")
      const records = readRecords(file)
      assert.deepStrictEqual(records.map((r) => r.method), [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call"
      ])
      assert.isTrue(records.every((r) => r.protocolVersionHeader === null), JSON.stringify(records))
    }))

  it.scopedLive("a 2025-06-18 server gets MCP-Protocol-Version on every request after initialize", () =>
    Effect.gen(function*() {
      const file = yield* tempRecordFile("legacy-sse-0618")
      yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* startHttpFixture(legacy("sse", { FIXTURE_RECORD: file, FIXTURE_VERSION: "2025-06-18" }))
        const client = yield* connectHttp("sse-0618", server.url)
        yield* client.callTool("echo", { message: "x" })
      }))
      const records = readRecords(file)
      assert.deepStrictEqual(headersOf(records, "initialize"), [null])
      assert.deepStrictEqual(headersOf(records, "tools/call"), ["2025-06-18"])
      assert.deepStrictEqual(headersOf(records, "notifications/initialized"), ["2025-06-18"])
    }))

  it.scopedLive("streamable HTTP at 2025-03-26: no MCP-Protocol-Version header, and no task augmentation despite the capability", () =>
    Effect.gen(function*() {
      const file = yield* tempRecordFile("hostile-0326")
      const logs = makeLogCapture()
      const error = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* startHttpFixture(
          hostileHttp("normal", { FIXTURE_RECORD: file, FIXTURE_VERSION: "2025-03-26" })
        )
        const client = yield* connectHttp("h-0326", server.url)
        assert.strictEqual(expectText((yield* client.callTool("echo", { message: "hi" })).result).text, "hi")
        // `task` requires task execution; the server declares tasks, but 2025-03-26 has none.
        return yield* Effect.flip(client.callTool("task", {}))
      })).pipe(logs.provide)
      assert.instanceOf(error, McpError.McpTaskUnsupported)
      const requests = readRecords(file).filter((r) => r.event === "request" && r.method === "POST")
      assert.isAbove(requests.length, 2)
      assert.isTrue(requests.every((r) => r.protocolVersion === undefined), JSON.stringify(requests))
      assert.deepStrictEqual(logs.withTag("warning"), [negotiated("2025-03-26")])
    }))

  it.live("the official SDK's streamable HTTP server answering 2024-11-05 lists and calls", () =>
    Effect.gen(function*() {
      const text = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* startHttpFixture(
          httpFixture("echo", "stateful", { FIXTURE_ANSWER_VERSION: "2024-11-05" })
        )
        const client = yield* connectHttp("sdk-http-old", server.url)
        assert.strictEqual(client.identity.protocolVersion, "2024-11-05")
        assert.include((yield* client.tools).map((t) => t.name), "echo")
        return expectText((yield* client.callTool("echo", { message: "sdk over http" })).result).text
      }))
      assert.strictEqual(text, "sdk over http")
    }))
})

describe("calling what was not listed", () => {
  const listings = (records: Array<Rec>) => records.filter((r) => r.method === "tools/list").length

  it.live("a hidden tool is called after one refresh of the list, and again without one; a listed tool never refreshes", () =>
    Effect.gen(function*() {
      const server = legacyStdio()
      const [first, second] = yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* connect("hiding", server.command)
        yield* client.callTool("echo", { message: "listed" })
        yield* client.callTool("echo", { message: "listed again" })
        assert.strictEqual(listings(server.records()), 1)
        const first = expectText((yield* client.callTool("hidden", { message: "found" })).result).text
        assert.strictEqual(listings(server.records()), 2)
        const second = expectText((yield* client.callTool("hidden", { message: "again" })).result).text
        assert.strictEqual(listings(server.records()), 2)
        return [first, second] as const
      }))
      assert.strictEqual(first, "hidden: found")
      assert.strictEqual(second, "hidden: again")
      const calls = server.records().filter((r) => r.method === "tools/call").map((r) => (r.params as Rec).name)
      assert.deepStrictEqual(calls, ["echo", "echo", "hidden", "hidden"])
    }))

  for (
    const [mode, how] of [
      ["rpc", "a JSON-RPC error -32602"],
      ["internal", "a JSON-RPC error -32603 naming it (server-github)"],
      ["iserror", "an isError result"]
    ] as const
  ) {
    it.live(`the server's "unknown tool" as ${how} is McpUnknownTool with the names it lists`, () =>
      Effect.gen(function*() {
        const server = legacyStdio({ FIXTURE_UNKNOWN: mode })
        const error = yield* Effect.scoped(Effect.gen(function*() {
          const client = yield* connect("unknowing", server.command)
          return yield* Effect.flip(client.callTool("no-such-tool", {}))
        }))
        assert.instanceOf(error, McpError.McpUnknownTool)
        assert.strictEqual(error.tool, "no-such-tool")
        assert.strictEqual(error.server, "unknowing")
        assert.deepStrictEqual([...error.available], ["echo", "progress"])
        assert.include(error.message, "has no tool 'no-such-tool'; it offers: echo, progress")
        // The call did go out: the server decides what it has.
        assert.deepStrictEqual(
          server.records().filter((r) => r.method === "tools/call").map((r) => (r.params as Rec).name),
          ["no-such-tool"]
        )
      }))
  }

  it.live("another error of an unlisted tool stays the server's error", () =>
    Effect.gen(function*() {
      const error = yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* connect("invalid", legacy("stdio", { FIXTURE_UNKNOWN: "invalid" }))
        return yield* Effect.flip(client.callTool("no-such-tool", {}))
      }))
      assert.instanceOf(error, McpError.McpRequestError)
      assert.strictEqual(error.code, -32602)
      assert.strictEqual(error.reason, "Invalid arguments")
    }))
})

describe("the CLI names the server", () => {
  it("by its executable and first argument before initialize, by serverInfo.name after", async () => {
    const missing = await runSkald(["tools", "--", "/nonexistent/skald-no-such-npx", "@scope/server-x"])
    assert.strictEqual(missing.status, 2)
    assert.match(missing.stderr, /MCP server 'skald-no-such-npx @scope\/server-x' could not be started/)
    const cmd = legacy("stdio", { FIXTURE_VERSION: "2023-01-01" })
    const refused = await runSkald(["tools", "--", cmd.command, ...cmd.args], {
      env: { FIXTURE_VERSION: "2023-01-01" }
    })
    assert.strictEqual(refused.status, 2)
    assert.match(
      refused.stderr,
      /MCP server 'fixture-legacy' answered protocol version 2023-01-01, but Skald asked for 2025-11-25/
    )
    const old = await runSkald(["call", "echo", "--args", "{\"message\":\"hi\"}", "--", cmd.command, ...cmd.args], {
      env: { FIXTURE_VERSION: "2024-11-05" }
    })
    assert.strictEqual(old.status, 0, old.stderr)
    assert.strictEqual(old.stdout, "hi\n")
  })
})
