/**
 * The web UI's build (issue 23): the import rule fails a build that imports anything but
 * @skald/domain, effect, @effect/{rpc,platform,platform-browser}, react and react-dom (DESIGN §1),
 * and the built JavaScript stays within 200 kB gzip.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import { build } from "vite"
import { importRule, violation } from "../packages/web/importRule.js"
import { repoRoot } from "./fixtures/fixtures.js"
import { tempDir } from "./support.js"

const builtDir = Path.join(repoRoot, "packages/web/dist")

/** Builds a throwaway app whose `src/main.ts` is `source`, with the import rule; gives the error or undefined. */
const buildWith = (source: string) =>
  Effect.gen(function*() {
    const root = yield* tempDir("web-rule")
    Fs.mkdirSync(Path.join(root, "src"))
    Fs.writeFileSync(Path.join(root, "index.html"), `<script type="module" src="/src/main.ts"></script>`)
    Fs.writeFileSync(Path.join(root, "src", "main.ts"), source)
    Fs.writeFileSync(Path.join(root, "src", "ok.ts"), `export const ok = 1\n`)
    return yield* Effect.promise(() =>
      build({
        root,
        configFile: false,
        logLevel: "silent",
        plugins: [importRule()],
        build: { write: false }
      }).then(() => undefined, (error: Error) => error.message)
    )
  })

describe("web build", () => {
  it.scoped("the import rule fails the build on any other import", () =>
    Effect.gen(function*() {
      for (
        const bad of [
          `import * as Fs from "node:fs"\nconsole.log(Fs)\n`,
          `import { McpClient } from "@skald/mcp"\nconsole.log(McpClient)\n`,
          `import * as S from "@skald/server"\nconsole.log(S)\n`,
          `const m = await import("@effect/platform-node/NodeHttpServer")\nconsole.log(m)\n`,
          `import "../../outside.js"\n`
        ]
      ) {
        const error = yield* buildWith(bad)
        assert.isDefined(error, bad)
        assert.match(error!, /imports .*(packages\/web\/src may import only|outside packages\/web\/src)/, bad)
      }
      // Relative files under src/ pass the rule (the build then succeeds).
      assert.isUndefined(yield* buildWith(`import { ok } from "./ok.js"\nconsole.log(ok)\n`))
    }))

  it("which specifiers the rule allows", () => {
    const src = "/w/src"
    for (
      const ok of [
        "@skald/domain",
        "@skald/domain/TurnEvent",
        "effect",
        "effect/Effect",
        "@effect/rpc/RpcClient",
        "@effect/platform-browser/BrowserSocket",
        "react",
        "react/jsx-runtime",
        "react-dom/client",
        "./App.js"
      ]
    ) assert.isUndefined(violation(src, ok, "/w/src/main.tsx"), ok)
    for (const bad of ["@skald/server", "@skald/mcp", "@effect/platform-node", "effectful", "reactive", "ws", "../x"]) {
      assert.isDefined(violation(src, bad, "/w/src/main.tsx"), bad)
    }
    // Only files under src/ are held to it (node_modules, index.html, Vite's own modules are not).
    assert.isUndefined(violation(src, "ws", "/w/node_modules/x/index.js"))
    assert.isUndefined(violation(src, "vite/modulepreload-polyfill", "/w/index.html"))
  })

  it("the built JavaScript is at most 200 kB gzip", () => {
    const assets = Fs.readdirSync(Path.join(builtDir, "assets")).filter((f) => f.endsWith(".js"))
    assert.isAbove(assets.length, 0)
    const gzip = assets.reduce(
      (sum, f) => sum + Zlib.gzipSync(Fs.readFileSync(Path.join(builtDir, "assets", f))).length,
      0
    )
    console.log(`web bundle: ${assets.length} JS file(s), ${(gzip / 1000).toFixed(1)} kB gzip`)
    assert.isAtMost(gzip, 200_000)
  })
})
