/**
 * Roots decide what `@modelcontextprotocol/server-filesystem` may read. It asks `roots/list` only
 * after `notifications/initialized`, so a `tools/call` sent right after initialize used to reach it
 * before its allowed list was set and was refused ("Access denied … not in" an empty list): the
 * engine now holds the first request until the server's first `roots/list` is answered (bounded).
 * Through the real `skald` binary: `skald call --root DIR`, and a registered server with
 * `skald mcp add --root`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runSkald } from "./cli-support.js"
import { repoRoot } from "./fixtures/fixtures.js"
import { makeHome } from "./host-support.js"
import { tempDir } from "./support.js"

const filesystem = [
  process.execPath,
  Path.join(repoRoot, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
]

const run = (args: ReadonlyArray<string>, env?: Record<string, string>) =>
  Effect.promise(() => runSkald(args, env === undefined ? {} : { env }))

/** A folder offered as the root with a file in it, and a file in a sibling folder outside it. */
const folders = Effect.gen(function*() {
  const inside = yield* tempDir("fs-root")
  const outside = yield* tempDir("fs-outside")
  Fs.writeFileSync(Path.join(inside, "notes.txt"), "inside the root\n")
  Fs.writeFileSync(Path.join(outside, "secret.txt"), "outside the root\n")
  // The server compares real paths (macOS /tmp is a link; so may the test machine's be).
  return { inside: Fs.realpathSync(inside), outside: Fs.realpathSync(outside) }
})

const readArgs = (file: string) => ["--args", JSON.stringify({ path: file })]

describe("server-filesystem: roots decide what it may read", () => {
  it.live(
    "skald call --root DIR: a file inside is read at once, one outside is refused by the server",
    () =>
      Effect.gen(function*() {
        const { inside, outside } = yield* folders
        // Several times: the race lost some runs and won others.
        for (let i = 0; i < 3; i++) {
          const ok = yield* run([
            "call",
            "read_text_file",
            ...readArgs(Path.join(inside, "notes.txt")),
            "--root",
            inside,
            "--",
            ...filesystem
          ])
          assert.strictEqual(ok.status, 0, ok.stdout + ok.stderr)
          // The tool sends structured content too, which is what is printed.
          assert.deepStrictEqual(JSON.parse(ok.stdout), { content: "inside the root\n" })
        }
        const refused = yield* run([
          "call",
          "read_text_file",
          ...readArgs(Path.join(outside, "secret.txt")),
          "--root",
          inside,
          "--",
          ...filesystem
        ])
        assert.strictEqual(refused.status, 1, refused.stdout + refused.stderr)
        assert.include(refused.stdout, "Access denied")
        assert.include(refused.stdout, inside)
        assert.notInclude(refused.stdout, "outside the root")
      }).pipe(Effect.scoped),
    60_000
  )

  it.live("a registered server (mcp add --root): the same through skald mcp call", () =>
    Effect.gen(function*() {
      const { inside, outside } = yield* folders
      const env = { SKALD_HOME: makeHome() }
      const added = yield* run(["mcp", "add", "files", "--root", inside, "--", ...filesystem], env)
      assert.strictEqual(added.status, 0, added.stderr)
      const ok = yield* run(
        ["mcp", "call", "files", "read_text_file", ...readArgs(Path.join(inside, "notes.txt"))],
        env
      )
      assert.strictEqual(ok.status, 0, ok.stdout + ok.stderr)
      assert.deepStrictEqual(JSON.parse(ok.stdout), { content: "inside the root\n" })
      const refused = yield* run(
        ["mcp", "call", "files", "read_text_file", ...readArgs(Path.join(outside, "secret.txt"))],
        env
      )
      assert.strictEqual(refused.status, 1, refused.stdout + refused.stderr)
      assert.include(refused.stdout, "Access denied")
      assert.notInclude(refused.stdout, "outside the root")
    }).pipe(Effect.scoped), 60_000)
})
