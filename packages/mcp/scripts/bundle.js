#!/usr/bin/env node
// Bundles the built Promise face (dist/promise.js, from `tsc -b`) into dist/bundle/ with esbuild:
// `@skald/mcp/promise` (package.json "exports") is this bundle. A plain TypeScript app does not
// use Effect itself, so nothing is shared with it: one tree-shaken copy of what the face uses
// loads in place of ~540 modules (effect, fast-check — which effect/Schema imports — the
// engine, the domain's classes), ~25 MB less RSS at rest (docs/performance.md, issue 28). The
// Effect face (every other export of the package) is NOT bundled: apps share their `effect`
// instance with it. Run it after every `tsc -b` (the root `check`/`build`/`prepare`/`bench` scripts and
// test/globalSetup.ts do); the types stay dist/promise.d.ts.
//
// The HTTP transport (node:http, SSE, OAuth's pieces) is a chunk of its own, loaded by the
// dynamic import in promise.ts only for a `url`.
import { build } from "esbuild"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const pkg = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const out = Path.join(pkg, "dist/bundle")

Fs.rmSync(out, { recursive: true, force: true })
const result = await build({
  entryPoints: { promise: Path.join(pkg, "dist/promise.js") },
  outdir: out,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // Less to parse at load; identifiers kept, so stack traces stay readable.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: true,
  metafile: true,
  logLevel: "warning"
})
Fs.writeFileSync(Path.join(out, "meta.json"), JSON.stringify(result.metafile))
