/**
 * The host from the command line, as a user runs it: `skald serve` in one process, `skald mcp …`
 * and `skald secret …` in others, all on one real home folder. Changes made by the other
 * processes take effect live in the running host.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { type Run, runSkald, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import { filesUnder, makeHome } from "./host-support.js"
import { isAlive, processesMatching } from "./support.js"

const run = (home: string, args: ReadonlyArray<string>, input?: string): Promise<Run> =>
  runSkald(args, { env: { SKALD_HOME: home }, ...(input === undefined ? {} : { input }) })

interface Summary {
  readonly name: string
  readonly state: string
  readonly pid?: number
  readonly toolCount?: number
  readonly error?: string
}

const list = async (home: string): Promise<Array<Summary>> => {
  const r = await run(home, ["mcp", "list", "--json"])
  assert.strictEqual(r.status, 0, r.stderr)
  return JSON.parse(r.stdout) as Array<Summary>
}

/** Polls `skald mcp list --json` until `check` holds (bounded, never a timing assertion). */
const until = async (home: string, what: string, check: (all: Array<Summary>) => boolean, within = 30_000) => {
  const deadline = Date.now() + within
  let last: Array<Summary> = []
  while (Date.now() < deadline) {
    last = await list(home)
    if (check(last)) return last
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`gave up waiting for ${what}; last list: ${JSON.stringify(last)}`)
}

const stateOf = (all: Array<Summary>, name: string) => all.find((s) => s.name === name)

const startServeHere = (home: string) =>
  startServe(home, { SKALD_HOME: "/nonexistent-the-flag-wins" }).then((s) => s.child)

const sha = (s: string) => Crypto.createHash("sha256").update(s).digest("hex")

describe("skald serve with skald mcp and skald secret from other processes", () => {
  it("registers, calls, toggles and deletes live while the host runs; no process outlives it", async () => {
    const home = makeHome()
    const marker = `marker-${Crypto.randomUUID()}`
    const hostFixture = fixture("host", undefined, [marker])

    // Nothing registered yet.
    const empty = await run(home, ["mcp", "list"])
    assert.strictEqual(empty.status, 0)
    assert.strictEqual(empty.stdout, "")
    assert.include(empty.stderr, "no MCP servers registered")

    // Registered before the host runs: stored, shown as "host not running".
    const added = await run(home, [
      "mcp",
      "add",
      "echo",
      "--description",
      "Echoes things",
      "--",
      hostFixture.command,
      ...hostFixture.args
    ])
    assert.strictEqual(added.status, 0, added.stderr)
    assert.include(added.stderr, "start `skald serve`")
    assert.strictEqual(stateOf(await list(home), "echo")?.state, "host-not-running")
    const text = await run(home, ["mcp", "list"])
    assert.match(text.stdout, /^echo\s+stdio\s+host not running\s+— Echoes things$/m)

    // A secret from stdin (one trailing newline stripped), listed by name only.
    const token = `tok-${Crypto.randomUUID()}`
    const set = await run(home, ["secret", "set", "ECHO_TOKEN"], `${token}\n`)
    assert.strictEqual(set.status, 0, set.stderr)
    assert.strictEqual(Fs.readFileSync(Path.join(home, "secrets/vars/ECHO_TOKEN"), "utf8"), token)
    assert.strictEqual((await run(home, ["secret", "list"])).stdout, "ECHO_TOKEN\n")

    const serve = await startServeHere(home)
    try {
      const connected = await until(home, "echo connected", (all) => stateOf(all, "echo")?.state === "connected")
      const echoPid = stateOf(connected, "echo")!.pid!
      assert.isTrue(isAlive(echoPid))
      assert.strictEqual(stateOf(connected, "echo")?.toolCount, 8)

      // Registered from another process while the host runs, with a literal secret moved to the store.
      const literal = `literal-${Crypto.randomUUID()}`
      const vault = await run(home, [
        "mcp",
        "add",
        "vault",
        "--env",
        "PLAIN=${ECHO_TOKEN}",
        "--secret-env",
        `TOKEN=${literal}`,
        "--",
        hostFixture.command,
        ...hostFixture.args
      ])
      assert.strictEqual(vault.status, 0, vault.stderr)
      assert.include(vault.stderr, "stored the secret value as MCP_VAULT__TOKEN")
      assert.include(vault.stderr, `the running host (pid ${serve.pid})`)
      assert.notInclude(vault.stderr, literal)
      await until(home, "vault connected", (all) => stateOf(all, "vault")?.state === "connected")

      // `mcp call` connects in its own process, with the secrets resolved.
      const digest = await run(home, ["mcp", "call", "vault", "env_digest", "--args", "{\"name\":\"TOKEN\"}"])
      assert.strictEqual(digest.status, 0, digest.stderr)
      assert.strictEqual(digest.stdout.trim(), sha(literal))
      const plain = await run(home, ["mcp", "call", "vault", "env_digest", "--json", "--args", "{\"name\":\"PLAIN\"}"])
      assert.deepStrictEqual(JSON.parse(plain.stdout), { kind: "string", text: sha(token) })
      const tools = await run(home, ["mcp", "tools", "vault"])
      assert.match(tools.stdout, /^env_digest\s+SHA-256/m)
      // …with the home's server environment, not its own: a variable of the calling shell that the
      // server was not given is not there; the home is.
      const digestOf = async (name: string) => {
        const result = await runSkald(["mcp", "call", "vault", "env_digest", "--args", JSON.stringify({ name })], {
          env: { SKALD_HOME: home, SKALD_TEST_SHELL_ONLY: `shell-${Crypto.randomUUID()}` }
        })
        assert.strictEqual(result.status, 0, result.stderr)
        return result.stdout.trim()
      }
      assert.strictEqual(await digestOf("SKALD_TEST_SHELL_ONLY"), "unset")
      assert.strictEqual(await digestOf("SKALD_HOME"), sha(Path.resolve(home)))
      assert.strictEqual(await digestOf("PATH"), sha(process.env.PATH ?? ""))

      // Disable and enable from another process: the host follows.
      assert.strictEqual((await run(home, ["mcp", "disable", "echo"])).status, 0)
      await until(home, "echo disabled", (all) => stateOf(all, "echo")?.state === "disabled")
      await waitDead(echoPid)
      assert.strictEqual((await run(home, ["mcp", "enable", "echo"])).status, 0)
      const back = await until(home, "echo connected again", (all) => stateOf(all, "echo")?.state === "connected")
      assert.notStrictEqual(stateOf(back, "echo")?.pid, echoPid)

      // Delete from another process.
      const vaultPid = stateOf(back, "vault")!.pid!
      assert.strictEqual((await run(home, ["mcp", "rm", "vault"])).status, 0)
      await until(home, "vault gone", (all) => stateOf(all, "vault") === undefined)
      await waitDead(vaultPid)

      // An HTTP server nobody answers: a literal api key goes to the store; the failure is recorded.
      const key = `key-${Crypto.randomUUID()}`
      const web = await run(home, ["mcp", "add", "web", "--http", "http://127.0.0.1:9/mcp", "--api-key", key])
      assert.strictEqual(web.status, 0, web.stderr)
      assert.include(web.stderr, "MCP_WEB__API_KEY")
      const failed = await until(home, "web failed", (all) => stateOf(all, "web")?.state === "failed")
      assert.isString(stateOf(failed, "web")?.error)

      // Nothing but the secret store holds a secret.
      for (const file of filesUnder(home, [Path.join(home, "secrets")])) {
        const bytes = Fs.readFileSync(file).toString("latin1")
        for (const s of [token, literal, key]) assert.notInclude(bytes, s, file)
      }
    } finally {
      assert.strictEqual(await stopProcess(serve), 143)
    }
    // The host is gone, and so is every server it ran.
    const after = await list(home)
    assert.strictEqual(stateOf(after, "echo")?.state, "host-not-running")
    assert.deepStrictEqual(processesMatching([marker]), [])
  }, 240_000) // some 30 runs of the binary: minutes on a loaded machine

  it("usage errors exit 2 with a message that says what to do", async () => {
    const home = makeHome()
    const badName = await run(home, ["mcp", "add", "bad__name", "--", "node"])
    assert.strictEqual(badName.status, 2)
    // Refused as it is parsed (Args.withSchema(ServerName)), with the rule that every mcp command shares.
    assert.include(badName.stderr, "invalid server name \"bad__name\": use 1-64 letters, digits, '-' and '_'")
    const noServer = await run(home, ["mcp", "add", "x"])
    assert.strictEqual(noServer.status, 2)
    assert.include(noServer.stderr, "no server given")
    const unknown = await run(home, ["mcp", "enable", "nosuch"])
    assert.strictEqual(unknown.status, 2)
    assert.include(unknown.stderr, "no MCP server named 'nosuch'")
    const keyOnStdio = await run(home, ["mcp", "add", "x", "--api-key", "k", "--", "node"])
    assert.strictEqual(keyOnStdio.status, 2)
    assert.include(keyOnStdio.stderr, "go with --http")
    const emptySecret = await run(home, ["secret", "set", "EMPTY"], "")
    assert.strictEqual(emptySecret.status, 2)
    const badSecret = await run(home, ["secret", "set", "1BAD"], "x")
    assert.strictEqual(badSecret.status, 2)
    const notRunning = await run(home, ["mcp", "call", "nosuch", "echo"])
    assert.strictEqual(notRunning.status, 2)
    assert.include(notRunning.stderr, "no MCP server named 'nosuch'")
  })
})

const waitDead = async (pid: number, within = 20_000) => {
  const deadline = Date.now() + within
  while (isAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} is still alive`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
