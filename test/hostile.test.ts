/**
 * Hostile raw servers (no SDK): garbage on stdout, an oversized message, a crash mid-call, a
 * server that never answers, unsupported and older protocol versions, a missing command.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpError } from "@skald/domain"
import { Effect } from "effect"
import { fixture } from "./fixtures/fixtures.js"
import { connect, expectText, makeLogCapture } from "./support.js"

const hostile = (mode: string, env?: Record<string, string>) => fixture("hostile", env, [mode])

describe("hostile servers", () => {
  it.live("garbage, blank and CRLF lines are ignored with warnings; the valid messages still work", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const text = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("garbage", hostile("garbage"))
          assert.strictEqual(client.identity.serverInfo.name, "fixture-hostile-garbage")
          const first = yield* client.callTool("echo", { message: "still works" })
          const second = yield* client.callTool("echo", { message: "twice" })
          return [expectText(first.result).text, expectText(second.result).text]
        })
      ).pipe(logs.provide)
      assert.deepStrictEqual(text, ["still works", "twice"])

      const warnings = logs.withTag("warning")
      const notJson = warnings.filter((w) => w.startsWith("ignored a stdout line that is not JSON: "))
      const notRpc = warnings.filter((w) => w.startsWith("ignored a stdout line that is not a JSON-RPC 2.0 message: "))
      const unknownId = warnings.filter((w) => w === "dropped a response to unknown request id 987654")
      // The garbage block is printed once at startup and twice around each of 4 answers
      // (initialize, tools/list, 2 × tools/call): 9 times in all.
      assert.strictEqual(notJson.length, 2 * 9, notJson.join("\n"))
      assert.strictEqual(notRpc.length, 3 * 9, notRpc.join("\n"))
      assert.strictEqual(unknownId.length, 4)
      assert.strictEqual(warnings.length, notJson.length + notRpc.length + unknownId.length, warnings.join("\n"))
      assert.include(notJson, "ignored a stdout line that is not JSON: \"this is not json at all\"")
      assert.include(notRpc, "ignored a stdout line that is not a JSON-RPC 2.0 message: \"[1,2,3]\"")
      assert.include(notRpc, "ignored a stdout line that is not a JSON-RPC 2.0 message: \"42\"")
    }))

  it.live("an oversized message fails the pending call with McpMessageTooLarge and closes the connection", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const [first, second] = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("oversized", hostile("oversized", { FIXTURE_SIZE: String(1024 * 1024) }), {
            transport: { maxMessageBytes: 64 * 1024 }
          })
          const first = yield* Effect.flip(client.callTool("echo", { message: "x" }))
          // The connection is closed: the next call fails at once with the same reason.
          const second = yield* Effect.flip(client.callTool("echo", { message: "x" }))
          return [first, second] as const
        })
      ).pipe(logs.provide)
      assert.instanceOf(first, McpError.McpMessageTooLarge)
      assert.strictEqual(first.limitBytes, 64 * 1024)
      assert.strictEqual(first.server, "oversized")
      assert.instanceOf(second, McpError.McpMessageTooLarge)
      assert.include(logs.withTag("lifecycle"), "closed the connection: a message exceeded 65536 bytes")
    }))

  it.scopedLive("a message just under the limit is accepted", () =>
    Effect.gen(function*() {
      const client = yield* connect("under-limit", hostile("oversized", { FIXTURE_SIZE: String(60 * 1024) }), {
        transport: { maxMessageBytes: 64 * 1024 }
      })
      const outcome = yield* client.callTool("echo", {})
      assert.strictEqual(expectText(outcome.result).text.length, 60 * 1024)
    }))

  it.scopedLive("a crash mid-call fails it with McpServerExited, the exit code and the stderr tail", () =>
    Effect.gen(function*() {
      const client = yield* connect("crash", hostile("crash"))
      const error = yield* Effect.flip(client.callTool("echo", { message: "boom" }))
      assert.instanceOf(error, McpError.McpServerExited)
      assert.strictEqual(error.code, 3)
      assert.strictEqual(error.signal, null)
      assert.deepStrictEqual([...error.stderrTail], [
        "fatal: something went badly wrong",
        "fatal: giving up with code 3"
      ])
      assert.include(error.message, "exited with code 3")
      assert.include(error.message, "fatal: giving up with code 3")
      // The connection is over: the next request fails at once with the same reason.
      const again = yield* Effect.flip(client.callTool("echo", { message: "again" }))
      assert.instanceOf(again, McpError.McpServerExited)
      assert.strictEqual(again.code, 3)
    }))

  it.scopedLive("a server that never answers tools/call fails it with McpTimeout", () =>
    Effect.gen(function*() {
      const client = yield* connect("silent", hostile("silent"))
      const error = yield* Effect.flip(client.callTool("echo", { message: "hello?" }, { timeout: "300 millis" }))
      assert.instanceOf(error, McpError.McpTimeout)
      assert.strictEqual(error.method, "tools/call")
      assert.strictEqual(error.timeoutMillis, 300)
      // The connection is still usable.
      assert.strictEqual((yield* client.tools).length, 2)
    }))

  it.live("the client's callTimeout applies when a call gives none", () =>
    Effect.gen(function*() {
      const error = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("silent", hostile("silent"), { client: { callTimeout: "250 millis" } })
          return yield* Effect.flip(client.callTool("echo", {}))
        })
      )
      assert.instanceOf(error, McpError.McpTimeout)
      assert.strictEqual(error.timeoutMillis, 250)
    }))

  it.live("an unsupported protocol version fails the layer with McpUnsupportedProtocolVersion", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.scoped(connect("old", hostile("version", { FIXTURE_VERSION: "1999-01-01" })))
      )
      assert.instanceOf(error, McpError.McpUnsupportedProtocolVersion)
      assert.strictEqual(error.received, "1999-01-01")
      assert.strictEqual(error.requested, "2025-11-25")
      assert.deepStrictEqual([...error.supported], [
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
        "2024-10-07"
      ])
      assert.include(error.message, "1999-01-01")
      assert.include(error.message, "2025-11-25")
    }))

  it.live("protocol version 2025-06-18 connects with a warning", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const [version, text] = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("older", hostile("version", { FIXTURE_VERSION: "2025-06-18" }))
          const outcome = yield* client.callTool("echo", { message: "works" })
          return [client.identity.protocolVersion, expectText(outcome.result).text] as const
        })
      ).pipe(logs.provide)
      assert.strictEqual(version, "2025-06-18")
      assert.strictEqual(text, "works")
      assert.deepStrictEqual(logs.withTag("warning"), [
        "the server negotiated protocol version 2025-06-18 (asked for 2025-11-25)"
      ])
    }))

  it.live("a command that does not exist fails with McpSpawnError", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.scoped(
          connect("missing", { command: "/nonexistent/skald-no-such-server", args: ["--flag"], cwd: process.cwd() })
        )
      )
      assert.instanceOf(error, McpError.McpSpawnError)
      assert.strictEqual(error.reason, "command not found")
      assert.strictEqual(error.command, "/nonexistent/skald-no-such-server --flag")
      assert.strictEqual(error.server, "missing")
    }))

  it.live("an image block that is not base64 is dropped with a warning", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      const outcome = yield* Effect.scoped(
        Effect.gen(function*() {
          const client = yield* connect("bad-media", hostile("silent"))
          return yield* client.callTool("bad_image")
        })
      ).pipe(logs.provide)
      const text = expectText(outcome.result)
      assert.strictEqual(text.text, "broken")
      assert.deepStrictEqual(logs.withTag("warning"), [
        "tool bad_image: an image block had no valid base64 data and was dropped"
      ])
    }))
})
