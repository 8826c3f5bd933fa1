/**
 * Failed servers are tried again: by the capped backoff on their own (a fixture that fails its
 * first starts), and at once when a user acts — `skald secret set` of a secret it refers to,
 * `skald mcp add` again, `skald mcp restart`, `skald mcp enable`, `McpManager.restart` — from
 * another process (the real `skald` binary) while the manager runs. The backoff is set to minutes
 * where the trigger is tested, so only the trigger can explain the retry. `skald mcp list` shows
 * when the next attempt comes.
 */
import { assert, describe, it } from "@effect/vitest"
import { ServerName } from "@skald/domain"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runSkald } from "./cli-support.js"
import { fixture, fixturePath } from "./fixtures/fixtures.js"
import { commandEntry, fixtureEntry, makeHome, startManager, tempHome, waitForState } from "./host-support.js"
import { eventuallyEffect } from "./support.js"

/** The command line of a host fixture that fails its first `failures` starts (counted in `counter`). */
const flaky = (counter: string, failures: number): ReadonlyArray<string> => {
  const host = fixture("host")
  return [process.execPath, fixturePath("flaky"), counter, String(failures), host.command, ...host.args]
}
const starts = (counter: string): number => Number(Fs.readFileSync(counter, "utf8"))

const skald = (home: string, args: ReadonlyArray<string>, input?: string) =>
  Effect.promise(() => runSkald(args, { env: { SKALD_HOME: home }, ...(input === undefined ? {} : { input }) })).pipe(
    Effect.tap((run) => assert.strictEqual(run.status, 0, `skald ${args.join(" ")}: ${run.stderr}`))
  )

describe("retries", () => {
  it.scopedLive("a server that fails its first starts is retried by the backoff on its own and connects", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const counter = Path.join(home, "starts")
      const { manager } = yield* startManager(home)
      const [command, ...args] = flaky(counter, 2)
      yield* manager.register(commandEntry("flaky", command!, args))
      const connected = yield* waitForState(manager, "flaky", "connected")
      assert.strictEqual(starts(counter), 3)
      assert.isNumber(connected?.pid)
      assert.isUndefined(connected?.nextRetryAt)
      const log = Fs.readFileSync(Path.join(home, "logs/mcp/flaky.log"), "utf8")
      assert.strictEqual(log.split("\n").filter((l) => l.includes("[lifecycle]  failed to start:")).length, 2, log)
      assert.include(log, "restarting in 200ms (attempt 1)")
      assert.include(log, "restarting in 400ms (attempt 2)")
    }))

  it.scopedLive("a failed server shows when it is retried; list --json has nextRetryAt", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const { manager } = yield* startManager(home, { restartBase: "10 minutes", restartMax: "10 minutes" })
      yield* manager.register(commandEntry("bad", "/nonexistent/skald-command", []))
      const failed = yield* waitForState(manager, "bad", "failed")
      assert.include(failed?.error, "command not found")
      assert.include(failed?.error, "restarting in 10m (attempt 1)")
      const at = Date.parse(failed!.nextRetryAt!)
      assert.isTrue(at > Date.parse(failed!.since!), `${failed?.nextRetryAt} after ${failed?.since}`)

      const json = yield* skald(home, ["mcp", "list", "--json"])
      const listed = (JSON.parse(json.stdout) as Array<{ name: string; nextRetryAt?: string }>).find((s) =>
        s.name === "bad"
      )
      assert.strictEqual(listed?.nextRetryAt, failed?.nextRetryAt)
      const text = yield* skald(home, ["mcp", "list"])
      assert.include(text.stdout, `(next retry ${failed?.nextRetryAt})`)
    }), 120_000)

  it.scopedLive(
    "secret set, add again, restart and enable retry a failed server at once, from another process",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        // No retry by the backoff while this test runs: only the triggers can bring a server up.
        const { manager } = yield* startManager(home, { restartBase: "10 minutes", restartMax: "10 minutes" })

        // `skald secret set` of the name a failed server's config refers to.
        const token = `NOPE_TOKEN_${Crypto.randomUUID().replaceAll("-", "_")}`
        yield* manager.register(fixtureEntry("needy", "host", { TOKEN: `Bearer \${${token}}` }))
        const missing = yield* waitForState(manager, "needy", "failed")
        // The status says it neutrally; the command line says what to run.
        assert.include(missing?.error, `Store a value for ${token} in the secret store`)
        assert.notInclude(missing?.error, "skald secret set")
        assert.deepStrictEqual(missing?.errorCause, {
          _tag: "UnknownSecretReference",
          server: "needy",
          variable: token
        })
        const listed = yield* skald(home, ["mcp", "list"])
        assert.include(listed.stderr, `skald: 'needy': store it with \`skald secret set ${token}\``)
        const shown = yield* skald(home, ["mcp", "show", "needy"])
        assert.include(shown.stderr, `skald secret set ${token}`)
        yield* skald(home, ["secret", "set", token], "now-present\n")
        yield* waitForState(manager, "needy", "connected")

        // Each of these fails its first start, then works when tried again.
        const cases = [
          ["readd", (cl: ReadonlyArray<string>) => ["mcp", "add", "readd", "--replace", "--", ...cl]],
          ["restart", () => ["mcp", "restart", "restart"]],
          ["enable", () => ["mcp", "enable", "enable"]]
        ] as const
        for (const [name, trigger] of cases) {
          const counter = Path.join(home, `${name}.starts`)
          const commandLine = flaky(counter, 1)
          yield* skald(home, ["mcp", "add", name, "--", ...commandLine])
          yield* waitForState(manager, name, "failed")
          assert.strictEqual(starts(counter), 1)
          yield* skald(home, trigger(commandLine))
          yield* waitForState(manager, name, "connected")
          assert.strictEqual(starts(counter), 2, name)
        }

        // A restart of a connected server replaces its process.
        const before = (yield* manager.list).find((s) => s.name === "restart")!.pid
        yield* skald(home, ["mcp", "restart", "restart"])
        const after = yield* eventuallyEffect(
          Effect.map(manager.list, (all) => all.find((s) => s.name === "restart")),
          (s) => s?.state === "connected" && s.pid !== before,
          "restart to run in a new process",
          "30 seconds"
        )
        assert.notStrictEqual(after?.pid, before)

        // And in this process: McpManager.restart.
        const counter = Path.join(home, "local.starts")
        const [command, ...args] = flaky(counter, 1)
        yield* manager.register(commandEntry("local", command!, args))
        yield* waitForState(manager, "local", "failed")
        yield* manager.restart(ServerName.make("local"))
        yield* waitForState(manager, "local", "connected")
        assert.strictEqual(starts(counter), 2)
      }),
    240_000
  )

  it("skald mcp restart: an unknown name is an error; without a host it says what starts the server", async () => {
    const home = makeHome()
    const unknown = await runSkald(["mcp", "restart", "nosuch", "--home", home])
    assert.strictEqual(unknown.status, 2)
    assert.include(unknown.stderr, "no MCP server named 'nosuch'")
    assert.include(unknown.stderr, "skald: `skald mcp list` shows the registered servers")
    const host = fixture("host")
    assert.strictEqual(
      (await runSkald(["mcp", "add", "idle", "--home", home, "--", host.command, ...host.args])).status,
      0
    )
    const idle = await runSkald(["mcp", "restart", "idle", "--home", home])
    assert.strictEqual(idle.status, 0, idle.stderr)
    assert.include(idle.stderr, "the host is not running; `skald serve` starts 'idle'")
  }, 60_000)

  it.scopedLive(
    "a start that fails with EMFILE (the host is out of file descriptors) is retried and connects once there are some",
    () =>
      Effect.gen(function*() {
        const { manager } = yield* startManager(yield* tempHome, { restartMax: "400 millis" })
        // Take every free descriptor of this process (the one the manager spawns from).
        const hog = yield* Effect.acquireRelease(Effect.sync(exhaustDescriptors), (fds) =>
          Effect.sync(() => fds.splice(0).forEach((fd) => Fs.closeSync(fd))))
        yield* manager.register(fixtureEntry("spare", "host"))
        const failed = yield* waitForState(manager, "spare", "failed")
        assert.include(failed?.error, "EMFILE")
        assert.include(failed?.error, "restarting in")
        for (const fd of hog.splice(0)) {
          Fs.closeSync(fd)
        }
        yield* waitForState(manager, "spare", "connected")
      }),
    120_000
  )
})

/** Opens /dev/null until the process has no descriptor left (EMFILE); returns the descriptors. */
const exhaustDescriptors = (): Array<number> => {
  const fds: Array<number> = []
  for (;;) {
    try {
      fds.push(Fs.openSync("/dev/null", "r"))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EMFILE" || (error as NodeJS.ErrnoException).code === "ENFILE") {
        return fds
      }
      fds.forEach((fd) => Fs.closeSync(fd))
      throw error
    }
  }
}
