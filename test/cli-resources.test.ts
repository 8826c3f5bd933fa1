/**
 * `skald resources|read|prompts|prompt` (with `--root`) and `skald mcp resources|read|prompts|prompt`
 * (with `skald mcp add --root`) through the real `skald` binary, against server-everything over
 * stdio and streamable HTTP; and the roots of a registered server given to it by the manager.
 */
import { assert, beforeAll, describe, it } from "@effect/vitest"
import { McpServerEntry, ServerConfig, ServerName, ToolResult } from "@skald/domain"
import { Effect } from "effect"
import type { Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Url from "node:url"
import { runSkald } from "./cli-support.js"
import { fixture, repoRoot } from "./fixtures/fixtures.js"
import { makeHome, startManager, tempHome, waitForState } from "./host-support.js"
import { startEverything } from "./http-support.js"
import { tempDir } from "./support.js"

const everything = [
  process.execPath,
  Path.join(repoRoot, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
  "stdio"
]

const run = (args: ReadonlyArray<string>, env?: Record<string, string>) =>
  Effect.promise(() => runSkald(args, env === undefined ? {} : { env }))

/** The same cases with the target given as `-- CMD` and as `--http URL`. */
const targets: ReadonlyArray<
  { readonly name: string; readonly target: Effect.Effect<Array<string>, Error, Scope.Scope> }
> = [
  { name: "stdio", target: Effect.succeed(["--", ...everything]) },
  {
    name: "streamable http",
    target: Effect.map(startEverything("streamableHttp"), (server) => ["--http", server.url])
  }
]

for (const { name, target } of targets) {
  describe(`skald resources|read|prompts|prompt (${name})`, () => {
    it.live("resources: one a line, then the templates; --json: both lists as sent", () =>
      Effect.gen(function*() {
        const to = yield* target
        const text = yield* run(["resources", ...to])
        assert.strictEqual(text.status, 0, text.stderr)
        assert.match(
          text.stdout,
          /^demo:\/\/resource\/static\/document\/architecture\.md\s+architecture\.md — Static document file exposed from \/docs: architecture\.md \(text\/markdown\)$/m
        )
        assert.match(
          text.stdout,
          /\n\nresource templates:\ndemo:\/\/resource\/dynamic\/text\/\{resourceId\}\s+Dynamic Text Resource — /
        )
        const json = yield* run(["resources", "--json", ...to])
        assert.strictEqual(json.status, 0, json.stderr)
        const parsed = JSON.parse(json.stdout) as {
          resources: Array<{ uri: string }>
          resourceTemplates: Array<{ uriTemplate: string }>
        }
        assert.include(parsed.resources.map((r) => r.uri), "demo://resource/static/document/features.md")
        assert.deepStrictEqual(parsed.resourceTemplates.map((t) => t.uriTemplate), [
          "demo://resource/dynamic/text/{resourceId}",
          "demo://resource/dynamic/blob/{resourceId}"
        ])
      }).pipe(Effect.scoped), 60_000)

    it.live(
      "read: text as text; a blob written under --media-dir; --json: the result as sent (base64)",
      () =>
        Effect.gen(function*() {
          const to = yield* target
          const dir = yield* tempDir("read-media")
          const text = yield* run(["read", "demo://resource/dynamic/text/3", ...to])
          assert.strictEqual(text.status, 0, text.stderr)
          assert.match(text.stdout, /^Resource 3: This is a plaintext resource created at /)
          const blob = yield* run(["read", "demo://resource/dynamic/blob/4", "--media-dir", dir, ...to])
          assert.strictEqual(blob.status, 0, blob.stderr)
          const link = /^\[file\]\((.+)\) \(text\/plain, (\d+) B\)$/m.exec(blob.stdout)
          assert.isNotNull(link, blob.stdout)
          const file = link![1]!
          assert.strictEqual(Path.dirname(file), dir)
          const bytes = Fs.readFileSync(file)
          assert.strictEqual(bytes.length, Number(link![2]))
          assert.match(bytes.toString("utf8"), /^Resource 4: This is a base64 blob/)
          const json = yield* run(["read", "--json", "demo://resource/dynamic/blob/4", ...to])
          const contents = (JSON.parse(json.stdout) as { contents: Array<{ uri: string; blob: string }> }).contents
          assert.strictEqual(contents[0]!.uri, "demo://resource/dynamic/blob/4")
          assert.match(Buffer.from(contents[0]!.blob, "base64").toString("utf8"), /^Resource 4: This is a base64 blob/)
          const unknown = yield* run(["read", "demo://no/such", ...to])
          assert.strictEqual(unknown.status, 2)
          assert.include(unknown.stderr, "rejected resources/read")
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "prompts: one a line with their arguments; prompt: the messages, --args given as strings",
      () =>
        Effect.gen(function*() {
          const to = yield* target
          const list = yield* run(["prompts", ...to])
          assert.strictEqual(list.status, 0, list.stderr)
          assert.match(
            list.stdout,
            /^args-prompt\s+Arguments Prompt — A prompt with two arguments, one required and one optional \(arguments: city\*, state\)$/m
          )
          assert.match(list.stdout, /^simple-prompt\s+Simple Prompt — A prompt with no arguments$/m)
          const got = yield* run(["prompt", "args-prompt", "--args", "{\"city\":\"Oslo\",\"state\":7}", ...to])
          assert.strictEqual(got.status, 0, got.stderr)
          assert.strictEqual(got.stdout, "user: What's weather in Oslo, 7?\n")
          const json = yield* run(["prompt", "args-prompt", "--json", "--args", "{\"city\":\"Oslo\"}", ...to])
          assert.deepStrictEqual(JSON.parse(json.stdout), {
            messages: [{ role: "user", content: { type: "text", text: "What's weather in Oslo?" } }]
          })
          const bad = yield* run(["prompt", "args-prompt", "--args", "{\"city\":{\"name\":\"Oslo\"}}", ...to])
          assert.strictEqual(bad.status, 2)
          assert.include(bad.stderr, "a prompt's arguments are strings, but \"city\" is an object")
          const missing = yield* run(["prompt", "args-prompt", ...to])
          assert.strictEqual(missing.status, 2)
          assert.include(missing.stderr, "rejected prompts/get")
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "--root PATH (repeatable): the server is offered those folders as roots; a missing folder is refused",
      () =>
        Effect.gen(function*() {
          const to = yield* target
          const a = yield* tempDir("root-a")
          const b = yield* tempDir("root-b")
          const roots = yield* run(["call", "get-roots-list", "--root", a, "--root", b, ...to])
          assert.strictEqual(roots.status, 0, roots.stderr)
          assert.include(roots.stdout, "Current MCP Roots (2 total)")
          assert.include(roots.stdout, `1. ${Path.basename(a)}\n   URI: ${Url.pathToFileURL(a).href}`)
          assert.include(roots.stdout, `URI: ${Url.pathToFileURL(b).href}`)
          const missing = yield* run(["resources", "--root", Path.join(a, "nope"), ...to])
          assert.strictEqual(missing.status, 2)
          assert.include(missing.stderr, `--root "${Path.join(a, "nope")}": no such folder`)
        }).pipe(Effect.scoped),
      60_000
    )
  })
}

describe("skald resources against a server without resources or prompts", () => {
  it.live("says the server does not offer them (exit 2)", () =>
    Effect.gen(function*() {
      const echo = fixture("echo")
      const resources = yield* run(["resources", "--", echo.command, ...echo.args])
      assert.strictEqual(resources.status, 2)
      assert.include(resources.stderr, "MCP server 'fixture-echo' does not offer resources")
      const prompts = yield* run(["prompts", "--", echo.command, ...echo.args])
      assert.strictEqual(prompts.status, 2)
      assert.include(prompts.stderr, "MCP server 'fixture-echo' does not offer prompts")
    }), 60_000)
})

describe("skald mcp resources|read|prompts|prompt and mcp add --root", () => {
  // One server registered for the four tests below, each a few runs of the binary: every run is a
  // process of its own (about 1.5 s of CPU), and one test of all twelve outlived its time under load.
  const home = makeHome()
  const env = { SKALD_HOME: home }
  const folder = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-mcp-root-"))
  beforeAll(async () => {
    const added = await runSkald(["mcp", "add", "ev", "--root", Path.relative(repoRoot, folder), "--", ...everything], {
      env
    })
    assert.strictEqual(added.status, 0, added.stderr)
  })

  it.live(
    "a registered server: its roots stored absolute and shown; a root that is no folder is refused",
    () =>
      Effect.gen(function*() {
        const shown = JSON.parse((yield* run(["mcp", "show", "ev", "--json"], env)).stdout) as { roots?: Array<string> }
        assert.deepStrictEqual(shown.roots, [folder])
        assert.include((yield* run(["mcp", "show", "ev"], env)).stdout, `root           ${folder}`)
        const bad = yield* run(["mcp", "add", "ev2", "--root", Path.join(folder, "nope"), "--", ...everything], env)
        assert.strictEqual(bad.status, 2)
        assert.include(bad.stderr, `the root "${Path.join(folder, "nope")}" is not a folder`)
      }),
    90_000
  )

  it.live("mcp resources and mcp read of a text: as text, and --json", () =>
    Effect.gen(function*() {
      const resources = yield* run(["mcp", "resources", "ev"], env)
      assert.strictEqual(resources.status, 0, resources.stderr)
      assert.match(resources.stdout, /^demo:\/\/resource\/static\/document\/features\.md\s+features\.md/m)
      const read = yield* run(["mcp", "read", "ev", "demo://resource/dynamic/text/5"], env)
      assert.strictEqual(read.status, 0, read.stderr)
      assert.match(read.stdout, /^Resource 5: This is a plaintext resource/)
      const textJson = yield* run(["mcp", "read", "ev", "--json", "demo://resource/dynamic/text/5"], env)
      const text = (JSON.parse(textJson.stdout) as { contents: Array<{ uri: string; text: string }> }).contents
      assert.strictEqual(text[0]!.uri, "demo://resource/dynamic/text/5")
      assert.match(text[0]!.text, /^Resource 5: This is a plaintext resource/)
    }), 90_000)

  it.live(
    "mcp read of a blob: into the home's media store, a link (never base64), and --json",
    () =>
      Effect.gen(function*() {
        // A blob goes into the home's media store, as `skald mcp call`'s media do: a link, never base64.
        const blob = yield* run(["mcp", "read", "ev", "demo://resource/dynamic/blob/4"], env)
        assert.strictEqual(blob.status, 0, blob.stderr)
        const link = /^\[file\]\(\/api\/mcp-media\/([0-9a-f-]+\.txt)\) \(text\/plain, (\d+) B\)$/.exec(
          blob.stdout.trim()
        )
        assert.isNotNull(link, blob.stdout)
        const saved = Fs.readFileSync(Path.join(home, "data", "mcp_media", link![1]!))
        assert.strictEqual(saved.length, Number(link![2]))
        assert.match(saved.toString("utf8"), /^Resource 4: This is a base64 blob/)
        const blobJson = yield* run(["mcp", "read", "ev", "--json", "demo://resource/dynamic/blob/4"], env)
        const items = (JSON.parse(blobJson.stdout) as { contents: Array<Record<string, unknown>> }).contents
        assert.strictEqual(items.length, 1)
        assert.deepStrictEqual(Object.keys(items[0]!).sort(), ["mimeType", "size", "uri", "url"])
        assert.match(String(items[0]!.url), /^\/api\/mcp-media\/[0-9a-f-]+\.txt$/)
        assert.notStrictEqual(items[0]!.url, `/api/mcp-media/${link![1]}`)
        assert.strictEqual(
          Fs.readFileSync(Path.join(home, "data", "mcp_media", Path.basename(String(items[0]!.url)))).length,
          items[0]!.size
        )
      }),
    90_000
  )

  it.live("mcp prompts and mcp prompt; the roots given to the server when connected", () =>
    Effect.gen(function*() {
      const prompts = yield* run(["mcp", "prompts", "ev", "--json"], env)
      assert.include((JSON.parse(prompts.stdout) as Array<{ name: string }>).map((p) => p.name), "args-prompt")
      const prompt = yield* run(["mcp", "prompt", "ev", "args-prompt", "--args", "{\"city\":\"Bergen\"}"], env)
      assert.strictEqual(prompt.stdout, "user: What's weather in Bergen?\n")
      const roots = yield* run(["mcp", "call", "ev", "get-roots-list"], env)
      assert.strictEqual(roots.status, 0, roots.stderr)
      assert.include(roots.stdout, `URI: ${Url.pathToFileURL(folder).href}`)
    }), 90_000)

  it.scopedLive(
    "the manager connects a server with the roots of its config (none: roots/list is refused)",
    () =>
      Effect.gen(function*() {
        const folder = yield* tempDir("manager-root")
        const { manager } = yield* startManager(yield* tempHome)
        const echo = fixture("echo")
        const entry = (name: string, roots: ReadonlyArray<string> | undefined) =>
          McpServerEntry.McpServerEntry.make({
            name: ServerName.make(name),
            config: ServerConfig.StdioServerConfig.make({
              command: echo.command,
              args: echo.args,
              env: {},
              ...(roots === undefined ? {} : { roots })
            }),
            enabled: true
          })
        yield* manager.register(entry("rooted", [folder]))
        yield* manager.register(entry("plain", undefined))
        yield* waitForState(manager, "rooted", "connected")
        yield* waitForState(manager, "plain", "connected")
        const rooted = yield* manager.call("mcp__rooted__ask_roots")
        assert.strictEqual(
          (rooted as ToolResult.TextResult).text,
          `roots: ${JSON.stringify({ roots: [{ uri: Url.pathToFileURL(folder).href, name: Path.basename(folder) }] })}`
        )
        const plain = yield* manager.call("mcp__plain__ask_roots")
        assert.strictEqual((plain as ToolResult.TextResult).text, "roots/list failed with code -32601")
      }),
    60_000
  )
})
