/**
 * The Promise face (`@skald/mcp/promise`) against real servers: the SDK's stdio fixtures and its
 * HTTP fixture. Failures reject with the engine's `McpError`s (`_tag` kept); an aborted signal
 * interrupts the call, which sends `notifications/cancelled` (the cancel fixture records it).
 * `@skald/mcp/promise` is the bundle an app loads (packages/mcp/scripts/bundle.js, built by
 * test/globalSetup.ts), not the source.
 */
import { assert, describe, it } from "@effect/vitest"
import * as DomainMcpError from "@skald/domain/McpError"
import { McpClient } from "@skald/mcp"
import type { McpLog } from "@skald/mcp"
// The shipped bundle (vitest.config.ts): its errors are instances of the classes it exports.
import { connect, McpError } from "@skald/mcp/promise"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { fixture, repoRoot } from "./fixtures/fixtures.js"
import { httpFixture, startHttpFixture } from "./http-support.js"
import { readRecords, tempFile } from "./support.js"

/** What `promise` rejected with (fails the test when it resolved). */
const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected a rejection, but it resolved")
}

/** Resolves once `check` holds (polled every 20 ms; a bound against a hang, not a time assertion). */
const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 500; i++) {
    if (check()) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`gave up waiting: ${what}`)
}

const text = (outcome: McpClient.CallOutcome) => {
  assert.strictEqual(outcome.result._tag, "Text")
  return outcome.result._tag === "Text" ? outcome.result.text : ""
}

describe("@skald/mcp/promise over stdio", () => {
  it("connects, lists, calls and closes; the log lines go to onLog", async () => {
    const lines: Array<McpLog.McpLogLine> = []
    const client = await connect({ ...fixture("echo"), server: "echo", onLog: (line) => lines.push(line) })
    try {
      assert.strictEqual(client.server, "echo")
      assert.strictEqual(client.identity.serverInfo.name, "fixture-echo")
      const tools = await client.listTools()
      assert.deepStrictEqual(tools.map((t) => t.name), ["echo", "fail", "log", "ping_client", "ask_roots"])
      assert.strictEqual(text(await client.callTool("echo", { message: "hello" })), "hello")
      const failed = await client.callTool("fail", { why: "asked to" })
      assert.isTrue(failed.result._tag === "Text" && failed.result.isError)
      // 256 calls at once, each its own answer.
      const many = await Promise.all(
        Array.from({ length: 256 }, (_, i) => client.callTool("echo", { message: `m${i}` }).then(text))
      )
      assert.deepStrictEqual(many, Array.from({ length: 256 }, (_, i) => `m${i}`))
    } finally {
      await client.close()
    }
    assert.isTrue(lines.some((l) => l.tag === "stderr" && l.text === "echo fixture: ready"))
    assert.isTrue(lines.some((l) => l.tag === "lifecycle" && l.text.startsWith("exited")))
    // Closed: a call rejects with the engine's error, and close again is the same close.
    const after = await rejection(client.callTool("echo", { message: "late" }))
    assert.instanceOf(after, McpError.McpConnectionClosed)
    await client.close()
  })

  it("rejects with the McpError itself, _tag kept: unknown tool, timeout, spawn failure", async () => {
    const client = await connect({ ...fixture("cancel", { FIXTURE_RECORD: tempFile("promise-errors") }) })
    try {
      const unknown = await rejection(client.callTool("no_such_tool"))
      assert.instanceOf(unknown, McpError.McpUnknownTool)
      assert.strictEqual((unknown as McpError.McpUnknownTool)._tag, "McpUnknownTool")
      assert.include((unknown as McpError.McpUnknownTool).available, "wait")

      const timeout = await rejection(client.callTool("wait", {}, { timeout: 200 }))
      assert.instanceOf(timeout, McpError.McpTimeout)
      assert.strictEqual((timeout as McpError.McpTimeout)._tag, "McpTimeout")
      assert.strictEqual((timeout as McpError.McpTimeout).timeoutMillis, 200)
    } finally {
      await client.close()
    }

    const spawn = await rejection(connect({ command: "/nonexistent/skald-promise-test-server" }))
    assert.instanceOf(spawn, McpError.McpSpawnError)
    assert.strictEqual((spawn as McpError.McpSpawnError)._tag, "McpSpawnError")
    assert.strictEqual((spawn as McpError.McpSpawnError).reason, "command not found")
  })

  it("an aborted signal abandons the call: the server sees notifications/cancelled, the call rejects with the reason", async () => {
    const file = tempFile("promise-cancel")
    const client = await connect(fixture("cancel", { FIXTURE_RECORD: file }))
    const started = () => readRecords(file).filter((r) => r.event === "started" && r.tool === "wait")
    try {
      const controller = new AbortController()
      const call = rejection(client.callTool("wait", {}, { signal: controller.signal }))
      await until(() => started().length === 1, "the wait tool started")
      const reason = new Error("the user stopped it")
      controller.abort(reason)
      assert.strictEqual(await call, reason)
      // After `mark` has answered, everything sent before it has been recorded.
      assert.strictEqual(text(await client.callTool("mark")), "mark done")
      const id = started()[0]!.requestId
      assert.deepStrictEqual(readRecords(file).filter((r) => r.event === "cancelled"), [
        { event: "cancelled", requestId: id, reason: McpClient.STOP_REASON }
      ])

      // A signal already aborted: nothing is sent.
      const before = readRecords(file).length
      const early = await rejection(client.callTool("quick", {}, { signal: AbortSignal.abort("too late") }))
      assert.strictEqual(early, "too late")
      assert.strictEqual(text(await client.callTool("mark")), "mark done")
      assert.deepStrictEqual(readRecords(file).slice(before).map((r) => r.tool), ["mark"])

      // A signal that is never aborted changes nothing, and is let go of once the call is done.
      const kept = new AbortController()
      assert.strictEqual(text(await client.callTool("quick", {}, { signal: kept.signal })), "quick done")
      kept.abort()
      assert.strictEqual(text(await client.callTool("mark")), "mark done")
      assert.strictEqual(readRecords(file).filter((r) => r.event === "cancelled").length, 1)
    } finally {
      await client.close()
      fs.rmSync(file, { force: true })
    }
  })
})

describe("@skald/mcp/promise over streamable HTTP", () => {
  it.scopedLive("connects to a URL and calls", () =>
    Effect.gen(function*() {
      const server = yield* startHttpFixture(httpFixture("echo", "json"))
      const outcome = yield* Effect.promise(async () => {
        const client = await connect({ url: server.url })
        try {
          assert.strictEqual(client.server, server.url)
          assert.include((await client.listTools()).map((t) => t.name), "echo")
          return await client.callTool("echo", { message: "over http" })
        } finally {
          await client.close()
        }
      })
      assert.strictEqual(text(outcome), "over http")
    }))
})

/**
 * Runs `program` (ESM, top-level await) in a node process started in the repository, as an app
 * that depends on `@skald/mcp` would run it, then lists the files it had loaded (the inspector's
 * parsed scripts), relative to packages/mcp/dist/bundle/ (the bundle's own files as `./name`).
 */
const filesLoadedBy = (program: string): ReadonlyArray<string> => {
  const script = `import * as Inspector from "node:inspector"
${program}
const session = new Inspector.Session()
session.connect()
const files = []
session.on("Debugger.scriptParsed", ({ params }) => params.url.startsWith("file:") && files.push(params.url))
session.post("Debugger.enable", () => console.log(JSON.stringify(files)))`
  const bundle = new URL(`file://${fs.realpathSync(repoRoot)}/packages/mcp/dist/bundle/`).href
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: repoRoot, encoding: "utf8" })
  return (JSON.parse(out.trim().split("\n").pop()!) as Array<string>)
    .filter((url) => !url.endsWith("[eval1]"))
    .map((url) => url.startsWith(bundle) ? `./${url.slice(bundle.length).replace(/-[A-Z0-9]+\.js$/, ".js")}` : url)
}

describe("@skald/mcp/promise as shipped", () => {
  it("is one bundle: an app loads its entry and one chunk, not effect's or the engine's modules; HTTP only for a url", () => {
    assert.deepStrictEqual(filesLoadedBy(`await import("@skald/mcp/promise")`), ["./promise.js", "./chunk.js"])
    // Nothing listens on port 1: connect fails once the HTTP transport's chunk has been loaded.
    const http = filesLoadedBy(`const { connect } = await import("@skald/mcp/promise")
await connect({ url: "http://127.0.0.1:1/mcp" }).catch((error) => console.log(error._tag))`)
    assert.deepStrictEqual(http, ["./promise.js", "./chunk.js", "./HttpTransport.js"])
  })

  it("has its own copy of the domain's classes, which it exports: a rejection is an instance of those", () => {
    // These tests run the bundle (vitest.config.ts), not the source.
    assert.notStrictEqual(McpError.McpTimeout, DomainMcpError.McpTimeout)
    assert.strictEqual(new McpError.McpTimeout({ server: "s", method: "m", timeoutMillis: 1 })._tag, "McpTimeout")
  })
})
