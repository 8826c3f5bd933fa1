#!/usr/bin/env node
// Bundles the built CLI (dist/cli/main.js, from `tsc -b`) into dist/bundle/ with esbuild, so
// `skald` starts without resolving and compiling ~600 modules one by one, then records what the
// shim (bin/skald.js) prints for `skald --version` and `skald --help` without loading the CLI at
// all: the real CLI's own output, captured from the bundle just built. Run it after every
// `tsc -b` (the root `build`/`prepare` scripts and test/globalSetup.ts do).
//
// The shim uses the bundle and the captured output only while they are current: fast.json keeps
// the modification times of the three packages' tsbuildinfo files it was built from (tsc -b
// rewrites them whenever it emits), and on any difference the shim loads dist/cli/main.js instead.
//
// What is not bundled: native addons (better-sqlite3, ssh2 and its optional cpu-features), loaded
// from node_modules as before. Chunks stay in dist/bundle/, one folder below dist/ as the tsc
// output is, so `import.meta.url`-relative paths (host/FirstRun.ts finds scripts/demo-server.ts
// that way) resolve the same.
import { build } from "esbuild"
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const pkg = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const out = Path.join(pkg, "dist/bundle")
const entry = Path.join(pkg, "dist/cli/main.js")

/** The tsbuildinfo files whose modification times date the tsc output (relative to the package). */
export const stampFiles = [
  "build/tsconfig.src.tsbuildinfo",
  "../mcp/build/tsconfig.src.tsbuildinfo",
  "../domain/build/tsconfig.src.tsbuildinfo"
]

/**
 * @effect/cli parses config files with yaml, toml and ini (~240 KB of code), which no skald command
 * uses: they are loaded from node_modules on first use instead of being part of every start.
 */
const lazyParsers = {
  name: "lazy-config-parsers",
  setup(build) {
    build.onResolve(
      { filter: /^(yaml|toml|ini)$/ },
      (args) => /@effect[\\/]cli[\\/]/.test(args.importer) ? { path: args.path, namespace: "lazy-parser" } : undefined
    )
    build.onLoad({ filter: /.*/, namespace: "lazy-parser" }, (args) => ({
      contents: `import { createRequire } from "node:module"\n` +
        `export const parse = (content) => createRequire(import.meta.url)(${
          JSON.stringify(args.path)
        }).parse(content)\n`,
      loader: "js"
    }))
  }
}

const stamps = Object.fromEntries(stampFiles.map((f) => [f, Fs.statSync(Path.join(pkg, f)).mtimeMs]))

Fs.rmSync(out, { recursive: true, force: true })
const result = await build({
  entryPoints: { main: entry },
  outdir: out,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external: ["better-sqlite3", "ssh2", "cpu-features"],
  // Bundled CommonJS dependencies call require() for node built-ins.
  banner: {
    js:
      "import { createRequire as __skaldCreateRequire } from \"node:module\"; const require = __skaldCreateRequire(import.meta.url);"
  },
  // Less to parse at start-up; identifiers kept, so stack traces stay readable.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: true,
  metafile: true,
  plugins: [lazyParsers],
  logLevel: "warning"
})
Fs.writeFileSync(Path.join(out, "meta.json"), JSON.stringify(result.metafile))

/** Runs the bundled CLI as the shim would and captures what it prints. */
const capture = (args) => {
  const r = spawnSync(process.execPath, [Path.join(out, "main.js"), ...args], { encoding: "utf8" })
  if (r.status !== 0 || r.stderr !== "") {
    throw new Error(`skald ${args.join(" ")} exited ${r.status}: ${r.stderr}`)
  }
  return { stdout: r.stdout, status: r.status }
}
const fast = { stamps, version: capture(["--version"]), help: capture(["--help"]) }
Fs.writeFileSync(Path.join(out, "fast.json"), JSON.stringify(fast))
