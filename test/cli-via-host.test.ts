/**
 * `skald mcp …`, `skald events` and `skald sessions …` on their two paths (issue 22 point 4): the
 * real binary with a real `skald serve` of the same home running (each command goes through its
 * RPC), and with none (each works in this process). The same scenario, with the same assertions,
 * runs on both paths — add (and its refusals: a taken name, a bad root), show of an unknown name,
 * tools, logs and `logs -f` streaming, disable, tools of a disabled server, restart, rm, events, a
 * session made by a turn, listed, shown and removed — and what both print is compared at the end:
 * stdout, exit status and error lines are the same; only `--verbose`'s path line and what is live
 * (the host connects a server; without a host it is "host not running") differ.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { root, runSkald, skald, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { makeHome } from "./host-support.js"
import { eventually, eventuallyEffect } from "./support.js"

type Path = "host" | "local"

/** What each path printed, compared once both ran. */
const printed: Partial<Record<Path, Record<string, string>>> = {}

const count = (text: string, part: string): number => text.split(part).length - 1

/** `skald mcp logs -f echo` running, with what it printed so far; the scope stops it. */
const follower = (home: string, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [skald, "mcp", "logs", "-f", "echo", "--home", home], {
        cwd: root,
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let out = ""
      child.stdout!.on("data", (d: Buffer) => (out += d.toString()))
      return { child, out: () => out }
    }),
    ({ child }) => Effect.promise(() => stopProcess(child))
  )

const scenario = (path: Path) =>
  Effect.gen(function*() {
    const standin = yield* ModelStandin.start([ModelStandin.text("Hello.")])
    const env = { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" }
    const home = makeHome()
    const host = path === "host"
      ? yield* Effect.acquireRelease(
        Effect.promise(() => startServe(home, env)),
        (s) => Effect.promise(() => stopProcess(s.child))
      )
      : undefined
    if (host !== undefined) {
      // The host records its address once /rpc answers.
      yield* eventuallyEffect(
        Effect.promise(() => runSkald(["mcp", "list", "--verbose", "--home", home], { env })),
        (r) => r.stderr.includes("via the host at"),
        "the host's address",
        "60 seconds"
      )
    }
    /** `skald ARGS… --home HOME` (before a `--`: what follows it is the server's command line). */
    const cli = (...args: ReadonlyArray<string>) => {
      const at = args.indexOf("--")
      const argv = at === -1
        ? [...args, "--home", home]
        : [...args.slice(0, at), "--home", home, ...args.slice(at)]
      return Effect.promise(() => runSkald(argv, { env }))
    }
    const out: Record<string, string> = {}
    const echo = fixture("echo")

    // add, saying which path with --verbose; the host's own manager connects it.
    const added = yield* cli(
      "mcp",
      "add",
      "echo",
      "--verbose",
      "--description",
      "Echoes",
      "--",
      echo.command,
      ...echo.args
    )
    assert.strictEqual(added.status, 0, added.stderr)
    assert.include(
      added.stderr,
      host === undefined
        ? "skald: in this process (no `skald serve` runs for this home)"
        : `skald: via the host at ${host.url}`
    )
    assert.include(
      added.stderr,
      host === undefined
        ? "skald: registered 'echo'; start `skald serve` to connect it"
        : `skald: registered 'echo'; the running host (pid ${host.child.pid}) connects it`
    )

    // Refusals come back as the same errors, with the same hints and exit status.
    const taken = yield* cli("mcp", "add", "echo", "--", echo.command, ...echo.args)
    out.taken = `${taken.status}\n${taken.stdout}\n${taken.stderr}`
    assert.strictEqual(taken.status, 2)
    assert.include(taken.stderr, "skald: an MCP server named 'echo' is already registered; remove it first")
    assert.include(taken.stderr, "`skald mcp add echo --replace …` replaces it")
    const badRoot = yield* cli("mcp", "add", "rooted", "--root", "/nonexistent-skald-root", "--", "node", "x.js")
    out.badRoot = `${badRoot.status}\n${badRoot.stdout}\n${badRoot.stderr}`
    assert.strictEqual(badRoot.status, 2)
    assert.include(badRoot.stderr, "skald: invalid MCP server: the root \"/nonexistent-skald-root\" is not a folder")
    // An HTTP server's OAuth client and roots (relative: made absolute from the CLI's folder) go through whole.
    const web = yield* cli(
      "mcp",
      "add",
      "web",
      "--http",
      "http://127.0.0.1:9/mcp",
      "--oauth-client-id",
      "skald-web",
      "--oauth-client-secret",
      "${WEB_SECRET}",
      "--oauth-private-key",
      "${WEB_KEY}",
      "--oauth-signing-alg",
      "PS256",
      "--oauth-scope",
      "read write",
      "--root",
      "test"
    )
    // And a Client ID Metadata Document's URL.
    const documented = yield* cli(
      "mcp",
      "add",
      "wiki",
      "--http",
      "http://127.0.0.1:9/mcp",
      "--oauth-client-metadata-url",
      "https://client.example.com/skald.json"
    )
    assert.strictEqual(documented.status, 0, documented.stderr)
    const wikiShown = JSON.parse((yield* cli("mcp", "show", "wiki", "--json")).stdout) as Record<string, unknown>
    assert.deepStrictEqual(wikiShown.oauth, { clientMetadataUrl: "https://client.example.com/skald.json" })
    assert.strictEqual((yield* cli("mcp", "rm", "wiki")).status, 0)
    assert.strictEqual(web.status, 0, web.stderr)
    const webShown = JSON.parse((yield* cli("mcp", "show", "web", "--json")).stdout) as Record<string, unknown>
    const configured = Object.fromEntries(
      ["name", "enabled", "roots", "transport", "url", "oauth"].map((key) => [key, webShown[key]])
    )
    assert.deepStrictEqual(configured, {
      name: "web",
      enabled: true,
      roots: [`${root}/test`],
      transport: "http",
      url: "http://127.0.0.1:9/mcp",
      oauth: {
        clientId: "skald-web",
        clientSecret: "${WEB_SECRET}",
        privateKey: "${WEB_KEY}",
        signingAlgorithm: "PS256",
        scope: "read write"
      }
    })
    out.web = JSON.stringify(configured)
    assert.strictEqual((yield* cli("mcp", "rm", "web")).status, 0)
    const ghost = yield* cli("mcp", "show", "ghost")
    out.ghost = `${ghost.status}\n${ghost.stdout}\n${ghost.stderr}`
    assert.strictEqual(ghost.status, 2)
    assert.include(ghost.stderr, "skald: no MCP server named 'ghost' is registered")
    assert.include(ghost.stderr, "skald: `skald mcp list` shows the registered servers")

    // Live status: the host's connection, or "host not running".
    const listed = yield* eventuallyEffect(
      cli("mcp", "list"),
      (r) => r.stdout.includes(host === undefined ? "host not running" : "connected ("),
      "echo's status",
      "60 seconds"
    )
    assert.match(listed.stdout, /^echo {2}stdio {2}.*— Echoes$/m)

    // tools: the host's connection, or a one-off one here; --json as the server sent them.
    const tools = yield* cli("mcp", "tools", "echo")
    assert.strictEqual(tools.status, 0, tools.stderr)
    assert.match(tools.stdout, /^echo\b/m)
    const toolsJson = yield* cli("mcp", "tools", "echo", "--json")
    assert.strictEqual(toolsJson.status, 0, toolsJson.stderr)
    const wire = JSON.parse(toolsJson.stdout) as Array<{ name: string; inputSchema: unknown }>
    assert.include(wire.map((t) => t.name), "echo")
    assert.isTrue(wire.every((t) => typeof t.inputSchema === "object"))
    out.tools = tools.stdout
    out.toolsJson = toolsJson.stdout

    // logs, then -f: what is appended after it started is streamed (a restart in the host, a connection here).
    const logs = yield* cli("mcp", "logs", "echo")
    assert.strictEqual(logs.status, 0, logs.stderr)
    assert.include(logs.stdout, "echo fixture: ready")
    yield* Effect.scoped(Effect.gen(function*() {
      const f = yield* follower(home, env)
      yield* eventually(() => f.out().includes("echo fixture: ready"), "the log so far", "60 seconds")
      const before = count(f.out(), "echo fixture: ready")
      if (host !== undefined) {
        const restarted = yield* cli("mcp", "restart", "echo")
        assert.include(restarted.stderr, `skald: asked the running host (pid ${host.child.pid}) to restart 'echo'`)
      } else {
        assert.strictEqual((yield* cli("mcp", "tools", "echo")).status, 0)
      }
      yield* eventually(() => count(f.out(), "echo fixture: ready") > before, "the appended lines", "60 seconds")
    }))

    // disable: live in the host; then show/list print the same thing on both paths.
    const disabled = yield* cli("mcp", "disable", "echo")
    assert.deepStrictEqual([disabled.status, disabled.stderr], [0, "skald: disabled 'echo'\n"])
    const show = yield* cli("mcp", "show", "echo")
    assert.strictEqual(show.status, 0, show.stderr)
    assert.match(show.stdout, /^enabled {8}no$/m)
    assert.match(show.stdout, /^status {9}disabled$/m)
    const showJson = yield* cli("mcp", "show", "echo", "--json")
    const shown = JSON.parse(showJson.stdout) as Record<string, unknown>
    assert.deepInclude(shown, { name: "echo", enabled: false, state: "disabled", description: "Echoes" })
    assert.deepStrictEqual([shown.command, shown.args], [echo.command, echo.args])
    // (A host's first run also registers its demo server: left out here.)
    const listJson = yield* cli("mcp", "list", "--json")
    const echoes = (JSON.parse(listJson.stdout) as Array<{ name: string }>).filter((s) => s.name === "echo")
    assert.deepStrictEqual(echoes, [shown])
    out.show = show.stdout
    out.showJson = showJson.stdout
    out.listJson = JSON.stringify(echoes)

    // A disabled server has no tools to list, and a restart leaves it off.
    const toolsOff = yield* cli("mcp", "tools", "echo")
    out.toolsOff = `${toolsOff.status}\n${toolsOff.stdout}\n${toolsOff.stderr}`
    assert.strictEqual(toolsOff.status, 2)
    assert.include(toolsOff.stderr, "skald: MCP server 'echo' is disabled; enable it first")
    assert.include(toolsOff.stderr, "skald: enable it with `skald mcp enable echo`")
    const restartOff = yield* cli("mcp", "restart", "echo")
    out.restartOff = `${restartOff.status}\n${restartOff.stdout}\n${restartOff.stderr}`
    assert.deepStrictEqual(
      [restartOff.status, restartOff.stderr],
      [0, "skald: 'echo' is disabled; `skald mcp enable echo` starts it\n"]
    )

    // rm, then an unknown name; events.
    const rm = yield* cli("mcp", "rm", "echo")
    assert.deepStrictEqual([rm.status, rm.stderr], [0, "skald: removed 'echo'\n"])
    const rmAgain = yield* cli("mcp", "rm", "echo")
    out.rmAgain = `${rmAgain.status}\n${rmAgain.stdout}\n${rmAgain.stderr}`
    assert.strictEqual(rmAgain.status, 2)
    assert.include(rmAgain.stderr, "skald: no MCP server named 'echo' is registered")
    const events = yield* cli("events", "--json", "--verbose")
    assert.deepStrictEqual([events.status, events.stdout], [0, "[]\n"])
    assert.include(events.stderr, host === undefined ? "in this process" : "via the host at")
    const badLimit = yield* cli("events", "--limit", "0")
    out.badLimit = `${badLimit.status}\n${badLimit.stdout}\n${badLimit.stderr}`
    assert.deepStrictEqual([badLimit.status, badLimit.stderr], [2, "skald: --limit takes a positive number, got 0\n"])

    // A session made by a turn (in the host, or here), listed, shown and removed.
    const turn = yield* cli("agent", "run", "hello")
    assert.deepStrictEqual([turn.status, turn.stdout], [0, "Hello.\n"], turn.stderr)
    const id = /session: (\S+)/.exec(turn.stderr)![1]!
    const sessions = yield* cli("sessions", "list", "--json", "--verbose")
    assert.strictEqual(sessions.status, 0, sessions.stderr)
    assert.include(sessions.stderr, host === undefined ? "in this process" : "via the host at")
    const list = JSON.parse(sessions.stdout) as Array<Record<string, unknown>>
    assert.deepStrictEqual(list.map((s) => [s.id, s.agent, Object.keys(s)]), [[id, "main", [
      "id",
      "agent",
      "title",
      "createdAt",
      "updatedAt"
    ]]])
    const text = yield* cli("sessions", "show", id)
    assert.strictEqual(text.status, 0, text.stderr)
    assert.include(text.stdout, "user: hello")
    assert.include(text.stdout, "assistant: Hello.")
    const history = yield* cli("sessions", "show", id, "--json")
    const normal = (s: string) =>
      s.replaceAll(id, "ID").replace(/"\d{4}-\d\d-\d\dT[^"]+"/g, "\"TIME\"").replace(
        /\(agent main, started [^)]+\)/,
        ""
      )
    out.list = normal(sessions.stdout)
    out.history = normal(history.stdout)
    out.text = normal(text.stdout)
    const removed = yield* cli("sessions", "rm", id)
    assert.deepStrictEqual([removed.status, removed.stderr], [0, `skald: removed session ${id}\n`])
    const gone = yield* cli("sessions", "show", id)
    out.gone = normal(`${gone.status}\n${gone.stdout}\n${gone.stderr}`)
    assert.strictEqual(gone.status, 2)
    assert.include(gone.stderr, `skald: no chat session has the id ${id}; see \`skald sessions list\``)
    printed[path] = out
  })

describe("skald mcp, events and sessions: through the running host, or in this process", () => {
  for (const path of ["local", "host"] as const) {
    it.scopedLive(
      `the same commands and assertions, ${path === "host" ? "via a running host" : "with no host"}`,
      () => scenario(path),
      300_000
    )
  }

  it("both paths printed the same", () => {
    const { host, local } = printed
    assert.isDefined(local, "the scenario without a host ran")
    assert.isDefined(host, "the scenario with a host ran")
    for (const key of Object.keys(local!)) assert.strictEqual(host![key], local![key], key)
  })
})
