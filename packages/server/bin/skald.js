#!/usr/bin/env node
// The `skald` command: loads the built CLI (npm ci builds it through the root `prepare` script).
//
// It prefers the bundle (dist/bundle/, made by scripts/bundle.js after `tsc -b`) while that is
// current, i.e. while the tsbuildinfo files it was built from are unchanged (fast.json records
// them); otherwise it loads the tsc output (dist/cli/main.js). With a current bundle,
// `skald --version` and `skald --help` print the output the bundle itself printed at build time,
// without loading the CLI: nothing else is answered here. The help was recorded piped (80 columns,
// no colour, see cli/Help.ts `widthOf` and `colourAllowed`): it is answered here only when the live
// CLI would print the same, i.e. stdout is not a terminal, or is one 80 columns wide with NO_COLOR.
import { readFileSync, statSync } from "node:fs"
import { setFlagsFromString } from "node:v8"

const bundle = new URL("../dist/bundle/", import.meta.url)

/** The bundle's record (fast.json) when the bundle is current, else undefined. */
const current = () => {
  let fast
  try {
    fast = JSON.parse(readFileSync(new URL("fast.json", bundle), "utf8"))
    for (const [file, mtimeMs] of Object.entries(fast.stamps)) {
      if (statSync(new URL(`../${file}`, import.meta.url)).mtimeMs !== mtimeMs) return undefined
    }
  } catch {
    return undefined
  }
  return fast
}

/** True when the live help (cli/Help.ts) would be the recorded one: 80 columns, no colour. */
const plainHelp = () => {
  const out = process.stdout
  if (out.isTTY !== true) return true
  const width = typeof out.columns === "number" && out.columns > 0 ? out.columns : 80
  return width === 80 && (process.env.NO_COLOR ?? "") !== ""
}

const fast = current()
const args = process.argv.slice(2)
const own = args.indexOf("--") === -1 ? args : args.slice(0, args.indexOf("--"))
// A one-off command lives about a second: V8 need not grow its young generation for it (its peak
// memory drops ~5 MB at no measurable CPU cost, docs/performance.md). The host (`serve`) keeps
// V8's defaults, which suit a long-running process.
if (!own.includes("serve")) setFlagsFromString("--semi-space-growth-factor=1")
const answer = fast === undefined || args.length !== 1
  ? undefined
  : args[0] === "--version"
  ? fast.version
  : (args[0] === "--help" || args[0] === "-h") && plainHelp()
  ? fast.help
  : undefined

if (answer !== undefined) {
  process.exitCode = answer.status
  process.stdout.write(answer.stdout)
} else {
  import(fast === undefined ? "../dist/cli/main.js" : "../dist/bundle/main.js").catch((error) => {
    if (error && error.code === "ERR_MODULE_NOT_FOUND") {
      process.stderr.write("skald: the build output is missing; run `npm run build` in the repository root\n")
    } else {
      process.stderr.write(`skald: ${error && error.stack ? error.stack : error}\n`)
    }
    process.exit(2)
  })
}
