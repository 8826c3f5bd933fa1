// The root package's postinstall: `npm ci` here, in tools/node22 (Node 22 and the official MCP
// conformance CLI that needs it, for test/conformance.test.ts and `npm run conformance`).
// It runs the npm that runs the root install. tools/node22/package.json has no lifecycle scripts,
// so this does not recurse. On failure it says what failed and how to retry, and exits non-zero.
import { spawnSync } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const dir = Path.dirname(fileURLToPath(import.meta.url))
// Errors only: npm (on Node 20) checks engines against its own Node and warns EBADENGINE for the
// conformance CLI's dependencies that need Node 22 — which is what runs them. npm 11 has no
// setting for the Node to check against, so its warnings are not shown; its errors are.
const args = ["ci", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error"]
// npm_execpath is npm's own CLI when npm runs this; by hand, the `npm` on PATH.
const npmCli = process.env.npm_execpath
const [command, argv] = npmCli !== undefined && npmCli.endsWith(".js")
  ? [process.execPath, [npmCli, ...args]]
  : ["npm", args]

const result = spawnSync(command, argv, { stdio: "inherit" })
if (result.error !== undefined || result.status !== 0) {
  const what = result.error !== undefined
    ? `could not run ${command}: ${result.error.message}`
    : result.signal !== null
    ? `npm was killed by ${result.signal}`
    : `npm exited with code ${result.status}`
  process.stderr.write(
    `\ntools/node22 (Node 22 and the MCP conformance CLI) was not installed: \`npm ${
      args.join(" ")
    }\` failed: ${what}.\n` +
      `The root packages are installed; the conformance tests need this one. Retry with: npm ci --prefix tools/node22\n`
  )
  process.exit(result.status === null || result.status === 0 ? 1 : result.status)
}
