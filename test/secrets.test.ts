/**
 * Secrets against the real `skald` binary and real files (issue 17): moved secrets named so that
 * no two servers share one, removed with their server, migrated from the older rule; redaction of
 * every form a secret takes in output (a PEM key printed line by line, JSON-escaped in a log
 * record, percent-encoded in a URL, a dying server's stderr tail in `mcp call`'s error); URLs with
 * credentials refused; private file modes; a warning when the secrets folder is readable by others.
 * A marker secret is searched in every file of the home (database, WAL, logs) and in every output.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import { McpManager, McpServerRepo, SecretNames, SecretStore } from "@skald/server"
import { Context, Effect, Layer, Logger, LogLevel, Redacted } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { type Run, runSkald } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import { filesUnder, makeHome, servicesLayer, startManager, tempHome, waitForState } from "./host-support.js"
import { startHttpFixture } from "./http-support.js"
import { readRecords, tempRecordFile } from "./support.js"

// Files are created as a typical shell would (the modes asserted below are explicit, not the umask's).
process.umask(0o022)

const run = (home: string, args: ReadonlyArray<string>, input?: string): Promise<Run> =>
  runSkald(args, { env: { SKALD_HOME: home }, ...(input === undefined ? {} : { input }) })

const runOk = async (home: string, args: ReadonlyArray<string>, input?: string): Promise<Run> => {
  const r = await run(home, args, input)
  assert.strictEqual(r.status, 0, `skald ${args.join(" ")}: ${r.stderr}`)
  return r
}

const modeOf = (path: string) => Fs.statSync(path).mode & 0o777

/** Every form a secret can take in output, written independently of the redactor. */
const formsOf = (secret: string): Array<string> => {
  const pieces = [secret, ...secret.split("\n").map((l) => l.replace(/\r$/, "")).filter((l) => l.length >= 4)]
  return [
    ...new Set(pieces.flatMap((p) => {
      const percent = encodeURIComponent(p)
      return [p, JSON.stringify(p).slice(1, -1), percent, percent.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())]
    }))
  ]
}

/** Fails when a form of a secret is in a file of the home (outside secrets/) or in one of the outputs. */
const assertNowhere = (home: string, secrets: ReadonlyArray<string>, outputs: ReadonlyArray<Run>) => {
  const files = filesUnder(home, [Path.join(home, "secrets")])
  const texts = [
    ...files.map((file) => [file, Fs.readFileSync(file).toString("utf8")] as const),
    ...outputs.flatMap((r, i) => [[`stdout of run ${i}`, r.stdout], [`stderr of run ${i}`, r.stderr]] as const)
  ]
  for (const secret of secrets) {
    for (const form of formsOf(secret)) {
      for (const [where, text] of texts) assert.notInclude(text, form, `a form of a secret in ${where}`)
    }
  }
}

const pemKey = () => {
  const body = Crypto.randomBytes(144).toString("base64").match(/.{1,64}/g)!
  return ["-----BEGIN PRIVATE KEY-----", ...body, "-----END PRIVATE KEY-----"].join("\n")
}

describe("moved secrets: one per server and field", () => {
  it.scopedLive(
    "servers whose names differ only in case, '-' or '_' each send their own api key; rm removes it",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const one = `KEY-ONE-${Crypto.randomUUID()}`
        const three = `KEY-THREE-${Crypto.randomUUID()}`
        const [record1, record2] = [yield* tempRecordFile("secrets-1"), yield* tempRecordFile("secrets-2")]
        const url1 =
          (yield* startHttpFixture(fixture("http", { FIXTURE_TOKEN: one, FIXTURE_RECORD: record1 }, ["echo", "json"])))
            .url
        const url2 = (yield* startHttpFixture(
          fixture("http", { FIXTURE_TOKEN: three, FIXTURE_RECORD: record2 }, ["echo", "json"])
        )).url
        const runs = yield* Effect.promise(async () => {
          const runs: Array<Run> = []
          runs.push(await runOk(home, ["mcp", "add", "a-b", "--http", url1, "--api-key", one]))
          runs.push(await runOk(home, ["mcp", "add", "A-B", "--http", url2, "--api-key", three]))
          runs.push(await runOk(home, ["secret", "set", "SHARED_TOKEN"], "mine\n"))
          runs.push(await runOk(home, ["mcp", "add", "mine", "--http", url1, "--api-key", "${SHARED_TOKEN}"]))
          return runs
        })
        assert.include(runs[0]!.stderr, "stored the secret value as MCP_A_B__API_KEY")
        assert.include(runs[1]!.stderr, "stored the secret value as MCPX_9A909B__API_KEY")
        const calls = yield* Effect.promise(async () => [
          await runOk(home, ["mcp", "call", "a-b", "echo", "--args", "{\"message\":\"to one\"}"]),
          await runOk(home, ["mcp", "call", "A-B", "echo", "--args", "{\"message\":\"to three\"}"])
        ])
        assert.strictEqual(calls[0]!.stdout, "to one\n")
        assert.strictEqual(calls[1]!.stdout, "to three\n")
        // Each server saw only its own key.
        const sent = (file: string) =>
          new Set(readRecords(file).filter((r) => r.event === "request").map((r) => r.authorization))
        assert.deepStrictEqual([...sent(record1)], [`Bearer ${one}`])
        assert.deepStrictEqual([...sent(record2)], [`Bearer ${three}`])
        assert.strictEqual(
          (yield* Effect.promise(() => runOk(home, ["secret", "list"]))).stdout,
          "MCPX_9A909B__API_KEY\nMCP_A_B__API_KEY\nSHARED_TOKEN\n"
        )

        // rm removes what was moved in for that server, never a secret the user named.
        const rm = yield* Effect.promise(() => runOk(home, ["mcp", "rm", "a-b"]))
        assert.include(rm.stderr, "removed 'a-b' and its stored secrets MCP_A_B__API_KEY")
        yield* Effect.promise(() => runOk(home, ["mcp", "rm", "mine"]))
        assert.strictEqual(
          (yield* Effect.promise(() => runOk(home, ["secret", "list"]))).stdout,
          "MCPX_9A909B__API_KEY\nSHARED_TOKEN\n"
        )
        // Replaced by an entry that refers to another secret: the one moved in for it goes.
        const replaced = yield* Effect.promise(() =>
          runOk(home, ["mcp", "add", "A-B", "--replace", "--http", url2, "--api-key-env", "SHARED_TOKEN"])
        )
        assert.include(replaced.stderr, "removed the stored secrets it no longer uses: MCPX_9A909B__API_KEY")
        yield* Effect.promise(() => runOk(home, ["mcp", "rm", "A-B"]))
        assert.strictEqual((yield* Effect.promise(() => runOk(home, ["secret", "list"]))).stdout, "SHARED_TOKEN\n")
        assertNowhere(home, [one, three], [...runs, ...calls])
      }),
    { timeout: 300_000 }
  )

  it.scopedLive("the manager's unregister (and a replacing register) removes the moved secrets of that server only", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const { context, manager } = yield* startManager(home)
      const store = Context.get(context, SecretStore.SecretStore)
      const moved = SecretNames.secretNameFor("vault", "TOKEN")
      yield* store.set(moved, Redacted.make("moved-value"))
      yield* store.set("USER_NAMED", Redacted.make("the user's"))
      yield* store.set(SecretNames.secretNameFor("other", "TOKEN"), Redacted.make("another server's"))
      const entry = McpServerEntry.McpServerEntry.make({
        name: ServerName.make("vault"),
        config: ServerConfig.StdioServerConfig.make({
          command: "/nonexistent/vault-server",
          args: [],
          env: { TOKEN: `\${${moved}}`, OTHER: "${USER_NAMED}" }
        }),
        enabled: true
      })
      yield* manager.register(entry)
      yield* waitForState(manager, "vault", "failed")
      yield* manager.unregister(entry.name)
      assert.deepStrictEqual([...(yield* store.list)], [SecretNames.secretNameFor("other", "TOKEN"), "USER_NAMED"])

      // register replacing an entry: what it moved in and no longer uses goes, the rest stays.
      yield* store.set(moved, Redacted.make("moved-value"))
      yield* manager.register(entry)
      yield* manager.register(McpServerEntry.McpServerEntry.make({
        ...entry,
        config: ServerConfig.StdioServerConfig.make({
          command: "/nonexistent/vault-server",
          args: [],
          env: { OTHER: "${USER_NAMED}" }
        })
      }))
      assert.deepStrictEqual([...(yield* store.list)], [SecretNames.secretNameFor("other", "TOKEN"), "USER_NAMED"])
    }))

  it.scopedLive(
    "an old store is migrated on open: moved secrets get their new names; a shared one is left with a warning",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const http = (name: string, apiKey: string) =>
          McpServerEntry.McpServerEntry.make({
            name: ServerName.make(name),
            config: ServerConfig.HttpServerConfig.make({ url: "http://127.0.0.1:9/mcp", apiKey }),
            enabled: false
          })
        const stdio = (name: string, env: Record<string, string>) =>
          McpServerEntry.McpServerEntry.make({
            name: ServerName.make(name),
            config: ServerConfig.StdioServerConfig.make({ command: "/nonexistent/server", args: [], env }),
            enabled: false
          })
        // What the older rule (<SERVER>_<FIELD> upper-cased, '-' as '_') left behind.
        yield* Effect.gen(function*() {
          const repo = yield* McpServerRepo.McpServerRepo
          const store = yield* SecretStore.SecretStore
          yield* repo.upsert(http("weather", "${WEATHER_API_KEY}"))
          yield* repo.upsert(stdio("vault", { TOKEN: "${VAULT_TOKEN}", OTHER: "${MY_OWN}", PLAIN: "not a secret" }))
          yield* repo.upsert(http("a-b", "${A_B_API_KEY}"))
          yield* repo.upsert(http("A_B", "${A_B_API_KEY}"))
          yield* repo.upsert(stdio("github", { TOKEN: "${GITHUB_TOKEN}" })) // from the environment: no file
          for (
            const [name, value] of [["WEATHER_API_KEY", "w-1"], ["VAULT_TOKEN", "v-2"], ["MY_OWN", "m-3"], [
              "A_B_API_KEY",
              "ab-4"
            ]]
          ) {
            yield* store.set(name!, Redacted.make(value!))
          }
        }).pipe(Effect.provide(servicesLayer(home)))

        const first = yield* Effect.promise(() => runOk(home, ["mcp", "list"]))
        assert.include(
          first.stderr,
          "moved the stored secret WEATHER_API_KEY of MCP server 'weather' to MCP_WEATHER__API_KEY"
        )
        assert.include(first.stderr, "moved the stored secret VAULT_TOKEN of MCP server 'vault' to MCP_VAULT__TOKEN")
        assert.include(
          first.stderr,
          "the stored secret A_B_API_KEY is used by MCP servers 'A_B' and 'a-b'; left as it is"
        )
        assert.notInclude(first.stderr, "GITHUB_TOKEN")
        assert.notInclude(first.stderr, "MY_OWN")
        const vars = Path.join(home, "secrets/vars")
        assert.deepStrictEqual(Fs.readdirSync(vars).sort(), [
          "A_B_API_KEY",
          "MCP_VAULT__TOKEN",
          "MCP_WEATHER__API_KEY",
          "MY_OWN"
        ])
        assert.strictEqual(Fs.readFileSync(Path.join(vars, "MCP_WEATHER__API_KEY"), "utf8"), "w-1")
        assert.strictEqual(Fs.readFileSync(Path.join(vars, "MCP_VAULT__TOKEN"), "utf8"), "v-2")
        assert.strictEqual(modeOf(Path.join(vars, "MCP_VAULT__TOKEN")), 0o600)

        // Opening again moves nothing more; the shared secret is still pointed out.
        const second = yield* Effect.promise(() => runOk(home, ["mcp", "list"]))
        assert.notInclude(second.stderr, "moved the stored secret")
        assert.include(second.stderr, "the stored secret A_B_API_KEY is used by MCP servers")
        const rows = yield* Effect.flatMap(McpServerRepo.McpServerRepo, (repo) => repo.list).pipe(
          Effect.provide(servicesLayer(home))
        )
        const config = (name: string) => rows.find((e) => e.name === name)!.config
        const envOf = (name: string) => {
          const c = config(name)
          return c._tag === "stdio" ? c.env : {}
        }
        assert.deepStrictEqual(
          config("weather"),
          ServerConfig.HttpServerConfig.make({ url: "http://127.0.0.1:9/mcp", apiKey: "${MCP_WEATHER__API_KEY}" })
        )
        assert.deepStrictEqual(
          envOf("vault"),
          { TOKEN: "${MCP_VAULT__TOKEN}", OTHER: "${MY_OWN}", PLAIN: "not a secret" }
        )
        assert.deepStrictEqual(envOf("github"), { TOKEN: "${GITHUB_TOKEN}" })
        assert.strictEqual((config("a-b") as ServerConfig.HttpServerConfig).apiKey, "${A_B_API_KEY}")

        // rm of a migrated server removes its secret; a shared old one stays (it is not that server's by name).
        yield* Effect.promise(() => runOk(home, ["mcp", "rm", "vault"]))
        yield* Effect.promise(() => runOk(home, ["mcp", "rm", "a-b"]))
        assert.deepStrictEqual(Fs.readdirSync(vars).sort(), ["A_B_API_KEY", "MCP_WEATHER__API_KEY", "MY_OWN"])
      }),
    { timeout: 180_000 }
  )
})

describe("redaction cannot be bypassed", () => {
  it.scopedLive(
    "a PEM key printed line by line, JSON-escaped and percent-encoded secrets, and a crash's stderr tail in mcp call",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const pem = pemKey()
        const quoted = `quo"te\\back-${Crypto.randomUUID()}-é`
        const server = fixture("leaky")
        const runs = yield* Effect.promise(async () => {
          const runs: Array<Run> = []
          runs.push(await runOk(home, ["secret", "set", "LEAKY_PEM"], `${pem}\n`))
          runs.push(
            await runOk(home, [
              "mcp",
              "add",
              "leaky",
              "--env",
              "PEM=${LEAKY_PEM}",
              "--secret-env",
              `QUOTED=${quoted}`,
              "--env",
              "LEAKY_VARS=PEM,QUOTED",
              "--",
              server.command,
              ...server.args
            ])
          )
          runs.push(await runOk(home, ["mcp", "call", "leaky", "log_object"]))
          runs.push(await runOk(home, ["mcp", "call", "leaky", "url"]))
          return runs
        })
        const crash = yield* Effect.promise(() => run(home, ["mcp", "call", "leaky", "crash"]))
        assert.strictEqual(crash.status, 2, crash.stderr)
        assert.match(crash.stderr, /^skald: MCP server 'leaky' exited with code 3; last stderr lines:/)
        assert.include(crash.stderr, "fatal: QUOTED=[redacted]")
        assert.include(crash.stderr, "fatal: PEM=[redacted]")

        const log = Fs.readFileSync(Path.join(home, "logs/mcp/leaky.log"), "utf8")
        assert.include(log, `leaky: {"careless":true,"PEM":"[redacted]","QUOTED":"[redacted]"}`)
        assert.include(log, "calling https://api.example.test/v1?pem=[redacted]&quoted=[redacted]")
        // Each line of the key, written to stderr one by one, is redacted on its own.
        const keyLines = pem.split("\n").length
        assert.isAtLeast(
          log.split("\n").filter((l) => /\[stderr\]\s+(\[cli pid \d+\] )?\[redacted\]$/.test(l)).length,
          keyLines
        )
        assertNowhere(home, [pem, quoted], [...runs, crash])
      }),
    { timeout: 180_000 }
  )

  it.scopedLive(
    "under the manager: the status error, the call's error and the debug log lines hold no form of the secret",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const pem = pemKey()
        const lines: Array<string> = []
        const logger = Logger.make(({ message }) =>
          void lines.push(Array.isArray(message) ? message.join(" ") : String(message))
        )
        const leaky = fixture("leaky")
        // Every log line at debug level, as `skald serve --verbose` prints them.
        const { context, manager } = yield* startManager(home).pipe(
          Effect.provide(
            Layer.merge(Logger.replace(Logger.defaultLogger, logger), Logger.minimumLogLevel(LogLevel.Debug))
          )
        )
        yield* Context.get(context, SecretStore.SecretStore).set("PEM_KEY", Redacted.make(pem))
        yield* manager.register(McpServerEntry.McpServerEntry.make({
          name: ServerName.make("leaky"),
          config: ServerConfig.StdioServerConfig.make({
            command: leaky.command,
            args: leaky.args,
            env: { PEM: "${PEM_KEY}", LEAKY_VARS: "PEM" }
          }),
          enabled: true
        }))
        yield* waitForState(manager, "leaky", "connected")
        const error = yield* Effect.flip(manager.call("mcp__leaky__crash"))
        const failed = yield* waitForState(manager, "leaky", "failed")
        const texts = [error.message, failed?.error ?? "", ...lines]
        assert.include(error.message, "fatal: PEM=[redacted]")
        for (const form of formsOf(pem)) for (const text of texts) assert.notInclude(text, form)
      }),
    { timeout: 60_000 }
  )
})

describe("credentials in a url", () => {
  it("are refused at registration and skipped by import; nothing of them is stored", async () => {
    const home = makeHome()
    const pass = `PASS-${Crypto.randomUUID()}`
    const refused = [
      `http://user:${pass}@127.0.0.1:9/mcp`,
      `http://127.0.0.1:9/mcp?api_key=${pass}`,
      `http://127.0.0.1:9/mcp?region=eu&Access_Token=${pass}`,
      `https://example.test/mcp?token=${pass}`
    ]
    const runs: Array<Run> = []
    for (const url of refused) {
      const r = await run(home, ["mcp", "add", "remote", "--http", url])
      runs.push(r)
      assert.strictEqual(r.status, 2, r.stderr)
      assert.match(r.stderr, /^skald: invalid MCP server: the url carries a credential/)
      assert.include(r.stderr, "--api-key")
    }
    await runOk(home, ["mcp", "add", "fine", "--http", "http://127.0.0.1:9/mcp?region=eu&keyboard=1"])
    const file = Path.join(makeHome(), "mcp.json")
    Fs.writeFileSync(
      file,
      JSON.stringify({
        mcpServers: { leaky: { type: "http", url: refused[1] }, ok: { type: "http", url: "http://127.0.0.1:9/mcp" } }
      })
    )
    const imported = await runOk(home, ["mcp", "import", file])
    assert.include(imported.stdout, "skipped  leaky: the url carries a credential (the query parameter \"api_key\")")
    assert.include(imported.stdout, "imported ok: http")
    const listed = JSON.parse((await runOk(home, ["mcp", "list", "--json"])).stdout) as Array<{ name: string }>
    assert.deepStrictEqual(listed.map((s) => s.name), ["fine", "ok"])
    assertNowhere(home, [pass], runs)

    // The host's own message names no command-line flag.
    const entry = McpServerEntry.McpServerEntry.make({
      name: ServerName.make("remote"),
      config: ServerConfig.HttpServerConfig.make({ url: refused[0]! }),
      enabled: true
    })
    const error = await Effect.runPromise(Effect.flip(McpManager.validate(entry)))
    assert.include(error.message, "api key")
    assert.notInclude(error.message, "--")
  }, 180_000)
})

describe("file modes", () => {
  it.scopedLive(
    "data/ and logs/ are 0700 and their files 0600, an older home's included; the database's -wal and -shm too",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        // An older home: folders and a log file created with the umask's modes.
        Fs.mkdirSync(Path.join(home, "data"), { mode: 0o755 })
        Fs.mkdirSync(Path.join(home, "logs/mcp"), { recursive: true, mode: 0o755 })
        Fs.writeFileSync(Path.join(home, "logs/mcp/img.log"), "an old line\n", { mode: 0o644 })
        const leaky = fixture("leaky")
        yield* Effect.promise(async () => {
          await runOk(home, ["mcp", "add", "img", "--", leaky.command, ...leaky.args])
          await runOk(home, ["mcp", "call", "img", "image"])
        })
        const media = Fs.readdirSync(Path.join(home, "data/mcp_media"))
        assert.strictEqual(media.length, 1)
        for (const dir of ["data", "data/mcp_media", "logs", "logs/mcp"]) {
          assert.strictEqual(modeOf(Path.join(home, dir)), 0o700, dir)
        }
        for (const file of ["data/skald.db", `data/mcp_media/${media[0]}`, "logs/mcp/img.log"]) {
          assert.strictEqual(modeOf(Path.join(home, file)), 0o600, file)
        }
        // While a process holds the database open, its -wal and -shm exist: 0600 as well.
        yield* Effect.gen(function*() {
          yield* Effect.flatMap(McpServerRepo.McpServerRepo, (repo) => repo.list)
          for (const file of ["data/skald.db-wal", "data/skald.db-shm"]) {
            assert.strictEqual(modeOf(Path.join(home, file)), 0o600, file)
          }
        }).pipe(Effect.provide(servicesLayer(home)))
      }),
    { timeout: 180_000 }
  )
})

describe("a secrets folder others can read", () => {
  it.scopedLive(
    "is pointed out by secret list and set, and at host start, with the chmod that fixes it",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        yield* Effect.promise(() => runOk(home, ["secret", "set", "TOKEN_A"], "a-value"))
        const secrets = Path.join(home, "secrets")
        const fileA = Path.join(secrets, "vars/TOKEN_A")
        Fs.chmodSync(fileA, 0o644)
        Fs.chmodSync(secrets, 0o755)
        const listed = yield* Effect.promise(() => runOk(home, ["secret", "list"]))
        assert.strictEqual(listed.stdout, "TOKEN_A\n")
        assert.include(
          listed.stderr,
          `skald: warning: the secrets folder ${secrets} is accessible to other users (mode 0755); fix it with: chmod 700 ${secrets}`
        )
        assert.include(
          listed.stderr,
          `skald: warning: the secrets file ${fileA} is accessible to other users (mode 0644); fix it with: chmod 600 ${fileA}`
        )
        // set makes the folders private again; the readable file is still pointed out.
        const set = yield* Effect.promise(() => runOk(home, ["secret", "set", "TOKEN_B"], "b-value"))
        assert.notInclude(set.stderr, `secrets folder ${secrets} `)
        assert.include(set.stderr, `chmod 600 ${fileA}`)

        // At host start: a log warning.
        const warnings: Array<string> = []
        const logger = Logger.make(({ logLevel, message }) => {
          if (logLevel._tag === "Warning") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
        })
        yield* startManager(home).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
        assert.include(
          warnings,
          `the secrets file ${fileA} is accessible to other users (mode 0644); fix it with: chmod 600 ${fileA}`
        )

        Fs.chmodSync(fileA, 0o600)
        const quiet = yield* Effect.promise(() => runOk(home, ["secret", "list"]))
        assert.strictEqual(quiet.stderr, "")
      }),
    { timeout: 180_000 }
  )
})
