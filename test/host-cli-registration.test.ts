/**
 * The host's command line without surprises, from the real `skald` binary on a real home:
 * `mcp add` refuses an existing name unless `--replace`; `mcp show` and `list --json` print the
 * configuration with references, never secret values; `mcp call` takes `skald call`'s options and
 * refuses a disabled server; log lines say which server and which process wrote them; imports
 * resolve the editors' variables.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { type Run, runSkald, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import { makeHome } from "./host-support.js"

const run = (
  home: string,
  args: ReadonlyArray<string>,
  input?: string,
  env: Record<string, string> = {}
): Promise<Run> => runSkald(args, { env: { SKALD_HOME: home, ...env }, ...(input === undefined ? {} : { input }) })

const ok = (r: Run, what: string) => {
  assert.strictEqual(r.status, 0, `${what}: ${r.stderr}`)
  return r
}

interface Shown {
  readonly name: string
  readonly transport: string
  readonly command?: string
  readonly args?: Array<string>
  readonly env?: Record<string, string>
  readonly url?: string
  readonly apiKey?: string
  readonly description?: string
  readonly friendlyName?: string
  readonly enabled: boolean
  readonly state: string
}

const reference = /^\$\{([A-Z0-9_]+)\}$/

describe("skald mcp add, show and list", () => {
  it(
    "add refuses an existing name (exit 2) and --replace replaces it; show and list print references, never values",
    async () => {
      const home = makeHome()
      const secret = `marker-${Crypto.randomUUID()}`
      const key = `marker-${Crypto.randomUUID()}`
      ok(
        await run(home, [
          "mcp",
          "add",
          "vault",
          "--description",
          "Keeps things",
          "--friendly-name",
          "The Vault",
          "--env",
          "PLAIN=visible",
          "--env",
          "REF=${SOME_VAR}",
          "--secret-env",
          `TOKEN=${secret}`,
          "--",
          "node",
          "vault.js",
          "--flag"
        ]),
        "add"
      )

      // The same name again: refused, and the registration is unchanged.
      const again = await run(home, ["mcp", "add", "vault", "--", "node", "other.js"])
      assert.strictEqual(again.status, 2)
      assert.include(again.stderr, "an MCP server named 'vault' is already registered")
      assert.include(again.stderr, "--replace")
      const shown = JSON.parse(ok(await run(home, ["mcp", "show", "vault", "--json"]), "show").stdout) as Shown
      assert.deepInclude(shown, {
        name: "vault",
        transport: "stdio",
        command: "node",
        args: ["vault.js", "--flag"],
        description: "Keeps things",
        friendlyName: "The Vault",
        enabled: true,
        state: "host-not-running"
      })
      assert.strictEqual(shown.env?.PLAIN, "visible")
      assert.strictEqual(shown.env?.REF, "${SOME_VAR}")
      const stored = reference.exec(shown.env?.TOKEN ?? "")?.[1]
      assert.isDefined(stored, `TOKEN is a reference: ${shown.env?.TOKEN}`)
      assert.include(ok(await run(home, ["secret", "list"]), "secret list").stdout.split("\n"), stored)

      // The text form: one field a line, the reference as stored.
      const text = ok(await run(home, ["mcp", "show", "vault"]), "show text").stdout
      assert.match(text, /^transport\s+stdio$/m)
      assert.match(text, /^command\s+node$/m)
      assert.match(text, /^args\s+vault\.js --flag$/m)
      assert.match(text, new RegExp(`^env\\s+TOKEN=\\$\\{${stored}\\}$`, "m"))
      assert.match(text, /^status\s+host not running$/m)

      // --replace replaces (the env given now, nothing kept from before).
      const replaced = ok(await run(home, ["mcp", "add", "vault", "--replace", "--", "node", "other.js"]), "replace")
      assert.include(replaced.stderr, "replaced 'vault'")
      const after = JSON.parse(ok(await run(home, ["mcp", "show", "vault", "--json"]), "show").stdout) as Shown
      assert.deepStrictEqual([after.command, after.args, after.env, after.description], [
        "node",
        ["other.js"],
        {},
        undefined
      ])

      // An HTTP server with a literal api key; list --json has each configuration the same way.
      ok(await run(home, ["mcp", "add", "web", "--http", "http://127.0.0.1:9/mcp", "--api-key", key]), "add web")
      ok(
        await run(home, [
          "mcp",
          "add",
          "vault",
          "--replace",
          "--secret-env",
          `TOKEN=${secret}`,
          "--",
          "node",
          "vault.js"
        ]),
        "replace again"
      )
      const listed = JSON.parse(ok(await run(home, ["mcp", "list", "--json"]), "list").stdout) as Array<Shown>
      const web = listed.find((s) => s.name === "web")!
      assert.deepInclude(web, {
        transport: "http",
        url: "http://127.0.0.1:9/mcp",
        enabled: true,
        state: "host-not-running"
      })
      assert.match(web.apiKey ?? "", reference)
      assert.deepStrictEqual(
        listed.find((s) => s.name === "vault"),
        JSON.parse((await run(home, ["mcp", "show", "vault", "--json"])).stdout)
      )

      // No value ever printed.
      for (
        const args of [["mcp", "show", "vault"], ["mcp", "show", "web"], ["mcp", "show", "web", "--json"], [
          "mcp",
          "list",
          "--json"
        ], ["mcp", "list"]]
      ) {
        const r = ok(await run(home, args), args.join(" "))
        for (const value of [secret, key]) assert.notInclude(r.stdout + r.stderr, value, args.join(" "))
      }
      const unknown = await run(home, ["mcp", "show", "nosuch"])
      assert.strictEqual(unknown.status, 2)
      assert.include(unknown.stderr, "no MCP server named 'nosuch'")
    },
    180_000
  )
})

describe("skald mcp add's K=V options and server names", () => {
  it("malformed --env / --secret-env and invalid names are usage errors (exit 2) saying what to give", async () => {
    const home = makeHome()
    const refused = async (args: ReadonlyArray<string>, says: string) => {
      const r = await run(home, args)
      assert.strictEqual(r.status, 2, `${args.join(" ")}: ${r.stderr}`)
      assert.include(r.stderr.split("\n")[0], says, args.join(" "))
      return r
    }
    const add = (...options: ReadonlyArray<string>) => ["mcp", "add", "kv", ...options, "--", "node", "kv.js"]
    for (const [option, value] of [["env", "NOEQUALS"], ["env", "=v"], ["env", "1BAD=v"], ["secret-env", "=s3cr3t"]]) {
      await refused(
        add(`--${option}`, value!),
        `--${option} takes KEY=VALUE with a variable name as KEY, got ${JSON.stringify(value!.split("=")[0])}`
      )
    }
    await refused(
      add("--env", "EMPTY="),
      "--env takes KEY=VALUE with a non-empty VALUE, got an empty value for \"EMPTY\""
    )
    await refused(["mcp", "add", "kv", "--env"], "--env takes KEY=VALUE, got nothing")
    // The secret value of a malformed --secret-env is never echoed.
    for (const value of ["BAD-KEY=hunter2", "hunter2"]) {
      const secret = await refused(
        add("--secret-env", value),
        "--secret-env takes KEY=VALUE with a variable name as KEY"
      )
      assert.notInclude(secret.stderr, "hunter2")
    }
    for (const name of ["bad__name", "_x", "x_", "a b", "x".repeat(65)]) {
      for (const args of [["mcp", "add", name, "--", "node", "x.js"], ["mcp", "show", name], ["mcp", "rm", name]]) {
        await refused(args, `invalid server name ${JSON.stringify(name)}: use 1-64 letters, digits, '-' and '_'`)
      }
    }
    // Nothing was registered; several pairs in one go, and values with '=' in them, are fine.
    assert.strictEqual((await run(home, ["mcp", "list", "--json"])).stdout.trim(), "[]")
    // Repeats may be interleaved with other options (@effect/cli's keyValueMap alone refuses that).
    ok(
      await run(home, add("--env", "A=1", "--secret-env", "C=s", "--description", "d", "--env", "B=x=y", "D=4")),
      "add"
    )
    const shown = JSON.parse(ok(await run(home, ["mcp", "show", "kv", "--json"]), "show").stdout) as Shown
    assert.deepStrictEqual(Object.keys(shown.env ?? {}).sort(), ["A", "B", "C", "D"])
    assert.strictEqual(shown.env?.["B"], "x=y")
    assert.strictEqual(shown.description, "d")
  }, 120_000)
})

describe("skald mcp call", () => {
  it("takes --timeout, --elicit and --args @-; refuses a disabled server with the enable hint", async () => {
    const home = makeHome()
    const elicit = fixture("elicit")
    ok(await run(home, ["mcp", "add", "asker", "--", elicit.command, ...elicit.args]), "add")

    // --elicit answers the server's question; --args @- reads the arguments from stdin.
    const accepted = ok(
      await run(
        home,
        ["mcp", "call", "asker", "confirm", "--args", "@-", "--elicit", "{\"action\":\"accept\"}"],
        "{\"message\":\"Go?\"}"
      ),
      "elicit"
    )
    assert.strictEqual(accepted.stdout.trim(), "confirm: accept")
    assert.include(accepted.stderr, "asks: Go?")
    // Without it (no terminal): declined, saying how to answer.
    const declined = ok(await run(home, ["mcp", "call", "asker", "confirm"]), "decline")
    assert.strictEqual(declined.stdout.trim(), "confirm: decline")
    assert.include(declined.stderr, "pass --elicit")
    const badArgs = await run(home, ["mcp", "call", "asker", "confirm", "--args", "@-"], "[1,2]")
    assert.strictEqual(badArgs.status, 2)
    assert.include(badArgs.stderr, "--args must be a JSON object")

    // --timeout fires against a tool slower than it.
    const slow = await run(home, [
      "mcp",
      "call",
      "asker",
      "ask_slowly",
      "--args",
      "{\"before\":60000}",
      "--timeout",
      "1"
    ])
    assert.strictEqual(slow.status, 2)
    assert.include(slow.stderr, "did not answer tools/call within 1 s")
    assert.include(slow.stderr, "--timeout")

    // A disabled server is refused, with the way to enable it.
    ok(await run(home, ["mcp", "disable", "asker"]), "disable")
    const disabled = await run(home, ["mcp", "call", "asker", "confirm"])
    assert.strictEqual(disabled.status, 2)
    assert.include(disabled.stderr, "MCP server 'asker' is disabled")
    assert.include(disabled.stderr, "skald mcp enable asker")
    assert.strictEqual(disabled.stdout, "")
  }, 180_000)
})

describe("logs that say who", () => {
  it("verbose lines name their server; a one-off CLI connection's log lines are tagged [cli pid N]", async () => {
    const home = makeHome()
    const host = fixture("host")
    ok(await run(home, ["mcp", "add", "echo", "--", host.command, ...host.args]), "add")
    const serve = await startServe(home, {}, ["--verbose"])
    try {
      const log = Path.join(home, "logs/mcp/echo.log")
      const deadline = Date.now() + 60_000
      while (!/\[echo\] connected/.test(serve.stderr()) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100))
      }
      assert.match(serve.stderr(), /^skald: \w+: \[echo\] started \(pid \d+\): /m)
      assert.match(serve.stderr(), /^skald: \w+: \[echo\] connected/m)
      // One-off connections, with their diagnostics shown too.
      const called = ok(
        await run(home, ["mcp", "call", "echo", "echo", "--args", "{\"message\":\"hi\"}", "--log-level", "debug"]),
        "call"
      )
      assert.strictEqual(called.stdout.trim(), "hi")
      assert.match(called.stderr, /^skald: \w+: \[echo\] started \(pid \d+\): /m)
      const lines = Fs.readFileSync(log, "utf8").split("\n").filter((l) => l.includes("started (pid"))
      assert.isTrue(lines.some((l) => !l.includes("[cli pid")), "the host's own lines are not tagged")
      assert.isTrue(lines.some((l) => /\[lifecycle\]\s+\[cli pid \d+\] started \(pid \d+\)/.test(l)), lines.join("\n"))
    } finally {
      assert.strictEqual(await stopProcess(serve.child), 143)
    }
  }, 180_000)
})

describe("skald mcp import", () => {
  it("a file that is not JSON, or not an MCP config, exits 2 saying so and imports nothing", async () => {
    const home = makeHome()
    const dir = Fs.mkdtempSync(Path.join(home, "files-"))
    const notJson = Path.join(dir, "broken.json")
    Fs.writeFileSync(notJson, "{ not json")
    const r = await run(home, ["mcp", "import", notJson])
    assert.strictEqual(r.status, 2, r.stderr)
    assert.match(
      r.stderr.split("\n")[0]!,
      new RegExp(`^skald: ${notJson.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not valid JSON: `)
    )
    const other = Path.join(dir, "other.json")
    Fs.writeFileSync(other, JSON.stringify({ something: {} }))
    const o = await run(home, ["mcp", "import", other])
    assert.strictEqual(o.status, 2, o.stderr)
    assert.include(o.stderr.split("\n")[0], `${other}: no \`mcpServers\``)
    assert.strictEqual((await run(home, ["mcp", "list", "--json"])).stdout.trim(), "[]")
  })

  it(
    "resolves ${workspaceFolder}, ${userHome}, ${env:X} and ${VAR:-default}; skips what it cannot, saying why",
    async () => {
      const home = makeHome()
      const userHome = makeHome()
      const project = Path.join(makeHome(), "my project")
      for (const dir of [".vscode", ".cursor"]) Fs.mkdirSync(Path.join(project, dir), { recursive: true })
      Fs.writeFileSync(
        Path.join(project, ".vscode/mcp.json"),
        JSON.stringify({
          servers: {
            local: {
              type: "stdio",
              command: "node",
              args: ["${workspaceFolder}/server.js", "--cache", "${userHome}/.cache"],
              env: { DIR: "${workspaceFolderBasename}" }
            },
            prompt: { command: "node", env: { KEY: "${input:apiKey}" } }
          }
        })
      )
      Fs.writeFileSync(
        Path.join(project, ".cursor/mcp.json"),
        JSON.stringify({
          mcpServers: {
            cursor: { command: "node", args: ["${workspaceFolder}/c.js"], env: { TOKEN: "${env:CURSOR_TOKEN}" } }
          }
        })
      )
      Fs.writeFileSync(
        Path.join(project, ".mcp.json"),
        JSON.stringify({
          mcpServers: {
            claude: {
              command: "node",
              env: { BASE: "${API_BASE:-https://api.example.com}", SET: "${SET_NOW:-unused}" }
            },
            outside: { command: "node", args: ["${workspaceFolder}/x.js"] }
          }
        })
      )
      const env = { HOME: userHome, SET_NOW: "yes" }
      const vscode = ok(
        await run(home, ["mcp", "import", Path.join(project, ".vscode/mcp.json")], undefined, env),
        "import vscode"
      )
      assert.match(vscode.stdout, /^imported local: stdio$/m)
      assert.match(vscode.stdout, /^skipped\s+prompt: .*\$\{input:apiKey\}/m)
      const cursor = ok(
        await run(home, ["mcp", "import", Path.join(project, ".cursor/mcp.json")], undefined, env),
        "import cursor"
      )
      assert.match(cursor.stdout, /^imported cursor: stdio$/m)
      const claude = ok(
        await run(home, ["mcp", "import", Path.join(project, ".mcp.json")], undefined, env),
        "import claude"
      )
      assert.match(claude.stdout, /^imported claude: stdio$/m)
      assert.match(claude.stdout, /^skipped\s+outside: .*\$\{workspaceFolder\}.*\.vscode/m)

      const show = async (name: string) =>
        JSON.parse(ok(await run(home, ["mcp", "show", name, "--json"]), name).stdout) as Shown
      const local = await show("local")
      assert.deepStrictEqual(local.args, [`${project}/server.js`, "--cache", `${userHome}/.cache`])
      assert.deepStrictEqual(local.env, { DIR: "my project" })
      const fromCursor = await show("cursor")
      assert.deepStrictEqual(fromCursor.args, [`${project}/c.js`])
      assert.deepStrictEqual(fromCursor.env, { TOKEN: "${CURSOR_TOKEN}" })
      // The default is taken when the variable is set nowhere; a set one stays a reference.
      assert.deepStrictEqual((await show("claude")).env, { BASE: "https://api.example.com", SET: "${SET_NOW}" })
    },
    180_000
  )
})
