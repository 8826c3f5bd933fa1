/**
 * `skald serve` beyond the manager: the media endpoint (and what it refuses), importing other
 * hosts' configs, the first run on an empty home, `skald events` and `skald mcp logs`.
 */
import { assert, describe, it } from "@effect/vitest"
import { HttpEndpoints, McpServerRepo, Paths } from "@skald/server"
import { Context, Deferred, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { root, runSkald, skald, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import { fixtureEntry, makeHome, servicesLayer, startManager, tempHome, until, waitForState } from "./host-support.js"
import { isAlive } from "./support.js"

/** A GET with the path sent exactly as given (no normalization of `..` or percent-escapes). */
const rawGet = (base: string, path: string): Promise<{ status: number; type: string | undefined; body: Buffer }> =>
  new Promise((resolve, reject) => {
    const url = new URL(base)
    const req = Http.request({ host: url.hostname, port: url.port, path, method: "GET" }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on(
        "end",
        () => resolve({ status: res.statusCode!, type: res.headers["content-type"], body: Buffer.concat(chunks) })
      )
    })
    req.on("error", reject)
    req.end()
  })

const run = (home: string, args: ReadonlyArray<string>) => runSkald(args, { env: { SKALD_HOME: home } })

describe("the media endpoint", () => {
  it.scopedLive("serves a saved PNG with its Content-Type and refuses every other name", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const { context, manager } = yield* startManager(home)
      const paths = Context.get(context, Paths.Paths)
      yield* manager.register(fixtureEntry("media", "media"))
      yield* waitForState(manager, "media", "connected")
      const result = yield* manager.call("mcp__media__image")
      assert.strictEqual(result._tag, "Text")
      const text = result._tag === "Text" ? result.text : ""
      const match = /!\[image\]\((\/api\/mcp-media\/([0-9a-f-]+\.png))\) \(image\/png, \d+ B\)/.exec(text)
      assert.isNotNull(match, text)
      const saved = Fs.readFileSync(Path.join(paths.mediaDir, match![2]!))

      const listening = yield* Deferred.make<string>()
      yield* Layer.launch(
        HttpEndpoints.layer({ host: "127.0.0.1", port: 0 }, (url) => Deferred.succeed(listening, url))
      ).pipe(
        Effect.provideService(Paths.Paths, paths),
        Effect.forkScoped
      )
      const base = yield* Deferred.await(listening)

      const ok = yield* Effect.promise(() => rawGet(base, match![1]!))
      assert.strictEqual(ok.status, 200)
      assert.strictEqual(ok.type, "image/png")
      assert.deepStrictEqual([...ok.body], [...saved])

      // Things that must not be reachable: a file in the data folder, one nested in the media folder.
      Fs.writeFileSync(Path.join(paths.dataDir, "private.png"), "not yours")
      Fs.mkdirSync(Path.join(paths.mediaDir, "sub"), { recursive: true })
      Fs.writeFileSync(Path.join(paths.mediaDir, "sub", "nested.png"), "nested")
      const refused = [
        "/api/mcp-media/../private.png",
        "/api/mcp-media/../skald.db",
        "/api/mcp-media/%2e%2e/private.png",
        "/api/mcp-media/%2E%2E%2Fprivate.png",
        "/api/mcp-media/..%2fprivate.png",
        "/api/mcp-media/..%5cprivate.png",
        "/api/mcp-media/..\\private.png",
        "/api/mcp-media//etc/passwd",
        "/api/mcp-media/%2fetc%2fpasswd",
        "/api/mcp-media/sub/nested.png",
        "/api/mcp-media/sub%2fnested.png",
        "/api/mcp-media/" + encodeURIComponent(match![2]!).replace(".", "%2e"),
        "/api/mcp-media/does-not-exist.png",
        "/api/mcp-media/",
        "/api/mcp-media/.png"
      ]
      for (const path of refused) {
        const r = yield* Effect.promise(() => rawGet(base, path))
        assert.strictEqual(r.status, 404, path)
        assert.notInclude(r.body.toString(), "not yours", path)
        assert.notInclude(r.body.toString(), "nested", path)
      }
      // Outside /api the web UI answers (http/WebStatic.ts): its page for an app path, never a file
      // of the machine.
      for (const path of ["/etc/passwd", "/"]) {
        const r = yield* Effect.promise(() => rawGet(base, path))
        assert.strictEqual(r.status, 200, path)
        assert.include(r.type ?? "", "text/html", path)
        assert.notInclude(r.body.toString(), "root:", path)
      }
    }))

  it.scoped("a non-loopback address is refused without an access token", () =>
    Effect.gen(function*() {
      const paths = Paths.make({ home: yield* tempHome })
      const error = yield* Effect.flip(
        Layer.launch(HttpEndpoints.layer({ host: "0.0.0.0", port: 0 }, () => Effect.void)).pipe(
          Effect.provideService(Paths.Paths, paths)
        )
      )
      assert.strictEqual(error._tag, "NonLoopbackBind")
      assert.include(error.message, "listen on a loopback address (127.0.0.1, the default, or ::1)")
      // The command line says which of its settings that is.
      const home = makeHome()
      const cli = yield* Effect.promise(() => runSkald(["serve"], { env: { SKALD_HOME: home, SKALD_HOST: "0.0.0.0" } }))
      assert.strictEqual(cli.status, 2, cli.stderr)
      assert.include(cli.stderr, "skald: refusing to listen on 0.0.0.0")
      assert.include(cli.stderr, "skald: give the token with --token or SKALD_TOKEN")
      assert.include(cli.stderr, "`skald serve` listens on SKALD_HOST (default 127.0.0.1)")
      assert.isTrue(HttpEndpoints.isLoopback("127.0.0.1"))
      assert.isTrue(HttpEndpoints.isLoopback("::1"))
      assert.isFalse(HttpEndpoints.isLoopback("192.168.1.2"))
    }))
})

describe("skald mcp import", () => {
  it.scopedLive("imports Claude Desktop, .mcp.json and VS Code files: references mapped, literal secrets moved, the rest skipped with reasons", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const dir = Fs.mkdtempSync(Path.join(home, "configs-"))
      const write = (name: string, json: unknown) => {
        const file = Path.join(dir, name)
        Fs.writeFileSync(file, JSON.stringify(json, null, 2))
        return file
      }
      const claude = write("claude_desktop_config.json", {
        mcpServers: {
          github: {
            command: "npx",
            args: ["-y", "@modelcontextprotocol/server-github"],
            env: { GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_literal_value_123", LOG_LEVEL: "info" }
          },
          "My Files": { command: "node", args: ["files.js", "${HOME_DIR}"], disabled: true }
        }
      })
      const dotMcp = write(".mcp.json", {
        mcpServers: {
          search: {
            type: "http",
            url: "https://mcp.example.com/mcp",
            headers: { Authorization: "Bearer ${SEARCH_KEY}" }
          },
          weather: {
            type: "sse",
            url: "https://weather.example.com/sse",
            headers: { Authorization: "Bearer sk-literal-999" }
          },
          custom: { type: "http", url: "https://x.example.com/mcp", headers: { "X-Api-Key": "abc" } }
        }
      })
      const vscode = write("mcp.json", {
        inputs: [{ type: "promptString", id: "token", password: true }],
        servers: {
          github: { type: "stdio", command: "docker", args: ["run", "ghcr.io/github/github-mcp-server"] },
          fetch: {
            type: "stdio",
            command: "uvx",
            args: ["mcp-server-fetch"],
            env: { API_TOKEN: "${env:FETCH_TOKEN}" }
          },
          prompted: { type: "stdio", command: "x", env: { TOKEN: "${input:token}" } },
          local: { type: "stdio", command: "node", envFile: "${workspaceFolder}/.env" }
        }
      })

      const a = yield* Effect.promise(() => run(home, ["mcp", "import", claude]))
      assert.strictEqual(a.status, 0, a.stderr)
      assert.include(
        a.stdout,
        "imported github: stdio; secrets moved to the store: MCP_GITHUB__GITHUB_PERSONAL_ACCESS_TOKEN"
      )
      assert.include(a.stdout, "imported My-Files (from \"My Files\"): stdio, disabled")
      assert.include(a.stdout, "2 imported, 0 skipped")
      assert.notInclude(a.stdout + a.stderr, "ghp_literal_value_123")

      const b = yield* Effect.promise(() => run(home, ["mcp", "import", dotMcp]))
      assert.strictEqual(b.status, 0, b.stderr)
      assert.include(b.stdout, "imported search: http")
      assert.include(b.stdout, "imported weather: http; secrets moved to the store: MCP_WEATHER__API_KEY")
      assert.include(b.stdout, "skipped  custom: header X-Api-Key is not supported")

      const c = yield* Effect.promise(() => run(home, ["mcp", "import", vscode]))
      assert.strictEqual(c.status, 0, c.stderr)
      assert.include(c.stdout, "skipped  github: a server named 'github' is already registered")
      assert.include(c.stdout, "imported fetch: stdio")
      assert.include(c.stdout, "skipped  prompted: env TOKEN: ${input:token} cannot be resolved")
      assert.include(c.stdout, "skipped  local: envFile is not supported")
      assert.include(c.stdout, "1 imported, 3 skipped")

      const repo = yield* Effect.map(Layer.build(servicesLayer(home)), Context.get(McpServerRepo.McpServerRepo))
      const entries = new Map((yield* repo.list).map((e) => [e.name as string, e]))
      assert.sameMembers([...entries.keys()], ["github", "My-Files", "search", "weather", "fetch"])
      const github = entries.get("github")!.config
      assert.deepStrictEqual(github._tag === "stdio" ? github.env : {}, {
        GITHUB_PERSONAL_ACCESS_TOKEN: "${MCP_GITHUB__GITHUB_PERSONAL_ACCESS_TOKEN}",
        LOG_LEVEL: "info"
      })
      const files = entries.get("My-Files")!
      assert.isFalse(files.enabled)
      assert.deepStrictEqual(files.config._tag === "stdio" ? files.config.args : [], ["files.js", "${HOME_DIR}"])
      const search = entries.get("search")!.config
      assert.strictEqual(search._tag === "http" ? search.apiKey : undefined, "${SEARCH_KEY}")
      const weather = entries.get("weather")!.config
      assert.strictEqual(weather._tag === "http" ? weather.apiKey : undefined, "${MCP_WEATHER__API_KEY}")
      const fetch = entries.get("fetch")!.config
      assert.deepStrictEqual(fetch._tag === "stdio" ? fetch.env : {}, { API_TOKEN: "${FETCH_TOKEN}" })

      const secrets = yield* Effect.promise(() => run(home, ["secret", "list"]))
      assert.strictEqual(secrets.stdout, "MCP_GITHUB__GITHUB_PERSONAL_ACCESS_TOKEN\nMCP_WEATHER__API_KEY\n")
      assert.strictEqual(
        Fs.readFileSync(Path.join(home, "secrets/vars/MCP_WEATHER__API_KEY"), "utf8"),
        "sk-literal-999"
      )

      const bad = yield* Effect.promise(() => run(home, ["mcp", "import", write("other.json", { something: {} })]))
      assert.strictEqual(bad.status, 2)
      assert.include(bad.stderr, "no `mcpServers`")
    }))
})

interface Summary {
  readonly name: string
  readonly state: string
  readonly toolCount?: number
}

const list = async (home: string) => JSON.parse((await run(home, ["mcp", "list", "--json"])).stdout) as Array<Summary>

describe("the first run", () => {
  it("an empty home gets the demo server, connected, once; its events, logs and media are served", async () => {
    const home = makeHome()
    const first = await startServe(home, { DEMO_TICK_SECONDS: "0.2" })
    try {
      assert.include(first.stderr(), "first run — registered the offline demo server 'demo'")
      const listed = await until(
        "demo connected",
        () => list(home),
        (l) => l.some((s) => s.name === "demo" && s.state === "connected")
      )
      assert.strictEqual(listed.find((s) => s.name === "demo")?.toolCount, 10)

      // Its ticks are events in the database.
      const events = await until(
        "demo ticks",
        async () =>
          JSON.parse((await run(home, ["events", "--json", "--pending"])).stdout) as Array<
            { method: string; server: string }
          >,
        (e) => e.length >= 2
      )
      assert.isTrue(events.every((e) => e.server === "demo" && e.method === "event/demo_tick"))
      const text = await run(home, ["events", "--limit", "1"])
      assert.match(text.stdout, /^1\t\S+\tpending\tdemo\tevent\/demo_tick\t/)

      // Its log file, and --follow keeps printing.
      const logs = await run(home, ["mcp", "logs", "demo"])
      assert.match(logs.stdout, /\[lifecycle\]  connected: skald-demo/)
      const follower = spawn(process.execPath, [skald, "mcp", "logs", "demo", "--follow"], {
        cwd: root,
        env: { ...process.env, SKALD_HOME: home }
      })
      let followed = ""
      follower.stdout.on("data", (d: Buffer) => (followed += d.toString()))
      const before = (await run(home, ["mcp", "call", "demo", "echo", "--args", "{\"message\":\"followed\"}"])).status
      assert.strictEqual(before, 0)
      await until(
        "the follower to see a new line",
        async () => followed,
        (f) => f.split("\n").length > logs.stdout.split("\n").length
      )
      follower.kill()

      // A media result is a URL the host serves.
      const png = await run(home, ["mcp", "call", "demo", "gradient_png"])
      const url = /\((\/api\/mcp-media\/[^)]+\.png)\)/.exec(png.stdout)?.[1]
      assert.isDefined(url, png.stdout)
      const got = await rawGet(first.url, url!)
      assert.strictEqual(got.status, 200)
      assert.strictEqual(got.type, "image/png")
      assert.deepStrictEqual([...got.body.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    } finally {
      await stopProcess(first.child)
    }

    // Removing the demo keeps it removed: the first run happens once.
    assert.strictEqual((await run(home, ["mcp", "rm", "demo"])).status, 0)
    const second = await startServe(home)
    try {
      assert.notInclude(second.stderr(), "first run")
      assert.deepStrictEqual(await list(home), [])
    } finally {
      await stopProcess(second.child)
    }
  }, 120_000)
})

describe("a host that was killed", () => {
  it("leaves servers behind that the next host stops before starting its own", async () => {
    const home = makeHome()
    const host = fixture("host", undefined, [`orphan-${Date.now()}`])
    // A server that ignores the end of its stdin (most exit on it when their host dies).
    assert.strictEqual(
      (await run(home, ["mcp", "add", "survivor", "--env", "HOST_FIXTURE_STAY=1", "--", host.command, ...host.args]))
        .status,
      0
    )
    const first = await startServe(home)
    const listed = await until(
      "survivor connected",
      () => list(home),
      (l) => l.some((s) => s.name === "survivor" && s.state === "connected")
    )
    const pid = (listed.find((s) => s.name === "survivor") as { pid?: number }).pid!
    // No finalizer runs on SIGKILL: the server (its own process group) lives on.
    first.child.kill("SIGKILL")
    await new Promise((r) => first.child.once("exit", r))
    assert.isTrue(isAlive(pid), "the server outlived the killed host")

    const second = await startServe(home)
    try {
      assert.include(second.stderr(), "left running by a previous host")
      await until("the orphan to be gone", async () => isAlive(pid), (alive) => !alive)
      const again = await until(
        "survivor connected again",
        () => list(home),
        (l) => l.some((s) => s.name === "survivor" && s.state === "connected")
      )
      assert.notStrictEqual((again.find((s) => s.name === "survivor") as { pid?: number }).pid, pid)
      const logs = await run(home, ["mcp", "logs", "survivor"])
      assert.include(logs.stdout, "[lifecycle]  stopped a process a previous host left running")
    } finally {
      await stopProcess(second.child)
    }
  }, 120_000)
})
