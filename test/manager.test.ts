/**
 * The MCP manager against real servers (SDK fixtures and server-everything) on a real SQLite
 * file: live register / call / toggle / delete, failures that never block the others, crash
 * restarts with backoff, and secrets that resolve at connect time and leak nowhere.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpError, McpServerEntry, ServerConfig, ServerName, ToolResult } from "@skald/domain"
import { HostError, SecretStore, StatusRepo } from "@skald/server"
import { Context, Effect, Layer, Logger, LogLevel, Redacted } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runSkald } from "./cli-support.js"
import {
  commandEntry,
  everythingEntry,
  filesUnder,
  fixtureEntry,
  servicesLayer,
  startManager,
  tempHome,
  waitForState
} from "./host-support.js"
import { httpFixture, startEverything, startHttpFixture } from "./http-support.js"
import { eventually, isAlive, processesMatching } from "./support.js"

const text = (result: ToolResult.ToolResult): string => {
  assert.strictEqual(result._tag, "Text")
  return (result as ToolResult.TextResult).text
}

describe("McpManager", () => {
  it.scopedLive("registers, calls, toggles, replaces and deletes servers live", () =>
    Effect.gen(function*() {
      const { manager } = yield* startManager(yield* tempHome)
      yield* manager.register(fixtureEntry("host", "host"))
      yield* manager.register(everythingEntry("everything"))
      const host = yield* waitForState(manager, "host", "connected")
      yield* waitForState(manager, "everything", "connected")
      assert.strictEqual(host?.toolCount, 8)
      assert.isTrue(isAlive(host!.pid!))

      const names = (yield* manager.tools).map((t) => t.name)
      assert.includeMembers(names, ["mcp__host__echo", "mcp__host__env_digest", "mcp__everything__echo"])
      const granted = (yield* manager.toolsFor(["host"])).map((t) => t.name)
      assert.sameMembers(granted, [
        "mcp__host__echo",
        "mcp__host__env_digest",
        "mcp__host__crash",
        "mcp__host__pid",
        "mcp__host__flood",
        "mcp__host__log",
        "mcp__host__burst",
        "mcp__host__chatter"
      ])

      assert.strictEqual(text(yield* manager.call("mcp__host__echo", { message: "hello" })), "hello")
      const structured = yield* manager.call("mcp__everything__get-structured-content", { location: "New York" })
      assert.strictEqual(structured._tag, "Json")
      assert.strictEqual(ToolResult.kind(structured), "json")

      // Disable: the process goes, the status says so, calls fail with a typed error.
      yield* manager.setEnabled(host!.name, false)
      yield* waitForState(manager, "host", "disabled")
      yield* eventually(() => !isAlive(host!.pid!), "the disabled server's process to exit")
      const refused = yield* Effect.flip(manager.call("mcp__host__echo", { message: "x" }))
      assert.instanceOf(refused, HostError.ServerNotConnected)
      assert.include(refused.message, "disabled")

      // Enable: a new process.
      yield* manager.setEnabled(host!.name, true)
      const again = yield* waitForState(manager, "host", "connected")
      assert.notStrictEqual(again?.pid, host?.pid)
      assert.strictEqual(text(yield* manager.call("mcp__host__echo", { message: "back" })), "back")

      // Register under a running name: the old server is replaced.
      const everythingPid = (yield* manager.pids).get("everything")!
      yield* manager.register(fixtureEntry("everything", "host"))
      yield* eventually(() => !isAlive(everythingPid), "the replaced server's process to exit")
      const replaced = yield* waitForState(manager, "everything", "connected")
      assert.strictEqual(replaced?.toolCount, 8)

      // Unregister: the row, the status and the process go.
      yield* manager.unregister(again!.name)
      yield* waitForState(manager, "host", "absent")
      yield* eventually(() => !isAlive(again!.pid!), "the deleted server's process to exit")
      const unknown = yield* Effect.flip(manager.call("mcp__host__echo", { message: "x" }))
      assert.instanceOf(unknown, HostError.ServerNotConnected)
      assert.include(unknown.message, "not registered")
      const missing = yield* Effect.flip(manager.unregister(again!.name))
      assert.instanceOf(missing, HostError.UnknownServer)
      const badName = yield* Effect.flip(manager.call("not_a_qualified_name"))
      assert.instanceOf(badName, HostError.InvalidToolName)
    }))

  it.scopedLive("a bad command and a start timeout are recorded as failures while the others serve", () =>
    Effect.gen(function*() {
      const marker = `skald-never-answers-${Crypto.randomUUID()}`
      // Long enough for the good server to start on a loaded machine; the mute one never will.
      // Failed starts are retried after the backoff: minutes here, so this test sees the first failures.
      const { manager } = yield* startManager(yield* tempHome, {
        startTimeout: "8 seconds",
        restartBase: "10 minutes",
        restartMax: "10 minutes"
      })
      yield* manager.register(commandEntry("bad", "/nonexistent/skald-command", []))
      yield* manager.register(commandEntry("mute", process.execPath, ["-e", "setInterval(() => {}, 1000)", marker]))
      yield* manager.register(fixtureEntry("good", "host"))

      yield* waitForState(manager, "good", "connected")
      assert.strictEqual(text(yield* manager.call("mcp__good__echo", { message: "still here" })), "still here")
      const bad = yield* waitForState(manager, "bad", "failed")
      assert.include(bad?.error, "command not found")
      const mute = yield* waitForState(manager, "mute", "failed")
      assert.include(mute?.error, "did not start within 8 s")
      // The server that never answered was reaped, not left behind.
      yield* eventually(() => processesMatching([marker]).length === 0, "the timed-out server to be reaped")
      // Both are tried again after the backoff, and say when.
      assert.include(bad?.error, "restarting in 10m (attempt 1)")
      assert.include(mute?.error, "restarting in 10m (attempt 1)")
      assert.isString(bad?.nextRetryAt)
      assert.isString(mute?.nextRetryAt)
    }))

  it.scopedLive("a crash mid-call fails that call, restarts the server with backoff and leaves the others alone", () =>
    Effect.gen(function*() {
      const { manager } = yield* startManager(yield* tempHome)
      yield* manager.register(fixtureEntry("fragile", "host"))
      yield* manager.register(fixtureEntry("steady", "host"))
      const fragile = yield* waitForState(manager, "fragile", "connected")
      const steady = yield* waitForState(manager, "steady", "connected")

      const error = yield* Effect.flip(manager.call("mcp__fragile__crash"))
      assert.instanceOf(error, McpError.McpServerExited)
      assert.strictEqual((error as McpError.McpServerExited).code, 7)
      assert.include(error.message, "crashing on purpose")

      // It comes back as a new process; the other server is the same process throughout.
      yield* eventually(() => !isAlive(fragile!.pid!), "the crashed process to be gone")
      const restarted = yield* Effect.gen(function*() {
        while (true) {
          const s = yield* waitForState(manager, "fragile", "connected")
          if (s?.pid !== fragile?.pid) return s
          yield* Effect.sleep("50 millis")
        }
      }).pipe(Effect.timeout("30 seconds"), Effect.orDie)
      assert.notStrictEqual(restarted?.pid, fragile?.pid)
      assert.strictEqual(text(yield* manager.call("mcp__fragile__echo", { message: "recovered" })), "recovered")
      assert.strictEqual((yield* manager.pids).get("steady"), steady?.pid)
      assert.isTrue(isAlive(steady!.pid!))
      assert.strictEqual(text(yield* manager.call("mcp__steady__pid")), String(steady?.pid))
    }))

  it.scopedLive("restart delays grow and are capped; the error says when the next attempt comes", () =>
    Effect.gen(function*() {
      const { manager } = yield* startManager(yield* tempHome, { restartBase: "300 millis", restartMax: "600 millis" })
      yield* manager.register(fixtureEntry("fragile", "host"))
      yield* waitForState(manager, "fragile", "connected")
      const delays: Array<string> = []
      for (let i = 0; i < 3; i++) {
        yield* Effect.flip(manager.call("mcp__fragile__crash"))
        const failed = yield* waitForState(manager, "fragile", "failed")
        delays.push(/restarting in (\S+)/.exec(failed?.error ?? "")?.[1] ?? "?")
        yield* waitForState(manager, "fragile", "connected")
      }
      // Each connection lasted less than stableAfter, so the backoff kept growing, up to the cap.
      assert.deepStrictEqual(delays, ["300ms", "600ms", "600ms"])
    }))

  it.scopedLive("${VAR} resolves from the store, then the environment; an unknown one fails clearly; the secret leaks nowhere", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const secret = `s3cr3t-${Crypto.randomUUID()}`
      const envOnly = `env-only-${Crypto.randomUUID()}`
      process.env.SKALD_TEST_ENV_ONLY = envOnly
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env.SKALD_TEST_ENV_ONLY))
      const lines: Array<string> = []
      const capture = Logger.make(({ annotations, message }) => {
        lines.push(
          `${Array.isArray(message) ? message.join(" ") : String(message)} ${JSON.stringify([...annotations])}`
        )
      })

      yield* Effect.gen(function*() {
        const { context, manager } = yield* startManager(home)
        const store = Context.get(context, SecretStore.SecretStore)
        yield* store.set("DEMO_TOKEN", Redacted.make(secret))
        yield* manager.register(fixtureEntry("vault", "host", {
          TOKEN: "${DEMO_TOKEN}",
          MIXED: "Bearer ${DEMO_TOKEN}!",
          OTHER: "${SKALD_TEST_ENV_ONLY}",
          HOST_FIXTURE_LOG_ENV: "TOKEN"
        }))
        yield* manager.register(fixtureEntry("orphan", "host", { X: "${SKALD_NO_SUCH_SECRET}" }))
        yield* waitForState(manager, "vault", "connected")
        const sha = (s: string) => Crypto.createHash("sha256").update(s).digest("hex")
        assert.strictEqual(text(yield* manager.call("mcp__vault__env_digest", { name: "TOKEN" })), sha(secret))
        assert.strictEqual(
          text(yield* manager.call("mcp__vault__env_digest", { name: "MIXED" })),
          sha(`Bearer ${secret}!`)
        )
        assert.strictEqual(text(yield* manager.call("mcp__vault__env_digest", { name: "OTHER" })), sha(envOnly))

        const orphan = yield* waitForState(manager, "orphan", "failed")
        assert.include(orphan?.error, "${SKALD_NO_SUCH_SECRET}")
        // Neutral of where it is shown; the command line adds what to run (test/retries.test.ts).
        assert.include(orphan?.error, "Store a value for SKALD_NO_SUCH_SECRET in the secret store")
        assert.notInclude(orphan?.error, "skald ")
        assert.deepStrictEqual(orphan?.errorCause, {
          _tag: "UnknownSecretReference",
          server: "orphan",
          variable: "SKALD_NO_SUCH_SECRET"
        })
        const listed = yield* Effect.promise(() => runSkald(["mcp", "list", "--home", home]))
        assert.strictEqual(listed.status, 0, listed.stderr)
        assert.include(listed.stderr, "skald: 'orphan': store it with `skald secret set SKALD_NO_SUCH_SECRET`")
        // The server's stderr reached the logs, so the capture is live.
        assert.isTrue(lines.some((l) => l.includes("TOKEN is set")), "the fixture's stderr was logged")
      }).pipe(
        Effect.scoped,
        Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
        Logger.withMinimumLogLevel(LogLevel.All)
      )

      // The store keeps it private…
      const secretsDir = Path.join(home, "secrets")
      assert.strictEqual(Fs.statSync(secretsDir).mode & 0o777, 0o700)
      assert.strictEqual(Fs.statSync(Path.join(secretsDir, "vars")).mode & 0o777, 0o700)
      assert.strictEqual(Fs.statSync(Path.join(secretsDir, "vars", "DEMO_TOKEN")).mode & 0o777, 0o600)
      // …and it is nowhere else: not in the database (tables, WAL), any other file, or any log line.
      const elsewhere = filesUnder(home, [secretsDir])
      assert.isTrue(elsewhere.some((f) => f.endsWith("skald.db")))
      for (const file of elsewhere) {
        assert.notInclude(Fs.readFileSync(file).toString("latin1"), secret, file)
      }
      assert.isAbove(lines.length, 0)
      for (const line of lines) assert.notInclude(line, secret)
      for (const line of lines) assert.notInclude(line, envOnly)
    }))

  it.scopedLive("stdio servers get the home's environment, not the host's: only what they were given, the basics and the home", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const hostOnly = `host-only-${Crypto.randomUUID()}`
      process.env.SKALD_TEST_HOST_ONLY = hostOnly
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env.SKALD_TEST_HOST_ONLY))
      const { manager } = yield* startManager(home)
      yield* manager.register(fixtureEntry("plain", "host", { GIVEN: "${SKALD_TEST_HOST_ONLY}", LITERAL: "as-is" }))
      yield* waitForState(manager, "plain", "connected")
      const sha = (s: string) => Crypto.createHash("sha256").update(s).digest("hex")
      const digest = (name: string) => Effect.map(manager.call("mcp__plain__env_digest", { name }), text)
      // A host variable reaches a server only when its registration asks for it.
      assert.strictEqual(yield* digest("SKALD_TEST_HOST_ONLY"), "unset")
      assert.strictEqual(yield* digest("GIVEN"), sha(hostOnly))
      assert.strictEqual(yield* digest("LITERAL"), sha("as-is"))
      // What programs need to run, and where the home and its secrets folder are.
      assert.strictEqual(yield* digest("PATH"), sha(process.env.PATH ?? ""))
      assert.strictEqual(yield* digest("SKALD_HOME"), sha(Path.resolve(home)))
      assert.strictEqual(yield* digest("SKALD_SECRETS_DIR"), sha(Path.join(Path.resolve(home), "secrets")))
    }))

  it.scopedLive("HTTP servers: the api key's ${VAR} becomes the bearer token; a refused token is a failure", () =>
    Effect.gen(function*() {
      const token = `tok-${Crypto.randomUUID()}`
      const server = yield* startHttpFixture(httpFixture("echo", "stateful", { FIXTURE_TOKEN: token }))
      const everything = yield* startEverything("streamableHttp")
      const { context, manager } = yield* startManager(yield* tempHome)
      yield* Context.get(context, SecretStore.SecretStore).set("REMOTE_TOKEN", Redacted.make(token))
      const entry = (name: string, url: string, apiKey?: string) =>
        McpServerEntry.McpServerEntry.make({
          name: ServerName.make(name),
          config: ServerConfig.HttpServerConfig.make(apiKey === undefined ? { url } : { url, apiKey }),
          enabled: true
        })
      yield* manager.register(entry("remote", server.url, "${REMOTE_TOKEN}"))
      yield* manager.register(entry("wrong", server.url, "not-the-token"))
      yield* manager.register(entry("everything", everything.url))
      yield* waitForState(manager, "remote", "connected")
      yield* waitForState(manager, "everything", "connected")
      assert.strictEqual(text(yield* manager.call("mcp__remote__echo", { message: "over http" })), "over http")
      const echoed = text(yield* manager.call("mcp__everything__echo", { message: "hi" }))
      assert.include(echoed, "hi")
      const wrong = yield* waitForState(manager, "wrong", "failed")
      assert.include(wrong?.error, "401")
      assert.notInclude(wrong?.error, token)
    }))

  it.scopedLive("one host per database: a live heartbeat of another process refuses a second host", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const statuses = yield* Effect.map(Layer.build(servicesLayer(home)), Context.get(StatusRepo.StatusRepo))
      const now = new Date().toISOString()
      // The parent of this test process is alive: its "heartbeat" stands for another host.
      yield* statuses.beat({ pid: process.ppid, startedAt: now, beatAt: now })
      const error = yield* Effect.flip(startManager(home))
      assert.instanceOf(error, HostError.HostAlreadyRunning)
      assert.include(error.message, `pid ${process.ppid}`)
      // A heartbeat of a dead process does not count.
      yield* statuses.beat({ pid: 2 ** 22 + 1, startedAt: now, beatAt: now })
      yield* startManager(home)
    }))
})
