/**
 * Runs one scenario of the official MCP conformance suite (its CLI needs Node ≥ 22, from
 * tools/node22) against Skald's conformance client (client.ts, on this Node, through tsx).
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const here = Path.dirname(fileURLToPath(import.meta.url))
const root = Path.resolve(here, here.includes(`${Path.sep}build${Path.sep}`) ? "../../../.." : "../..")
const node22 = Path.join(root, "tools/node22/node_modules/node/bin/node")
const cli = Path.join(root, "node_modules/@modelcontextprotocol/conformance/dist/index.js")
const client = `${process.execPath} --import tsx ${Path.join(root, "test/conformance/client.ts")}`

/** The scenarios CI requires (the rest are OAuth and newer). */
export const required = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]

/** Every client scenario the suite knows. */
export const listScenarios = (): Array<string> =>
  ChildProcess.execFileSync(node22, [cli, "list", "--client"], { encoding: "utf8" })
    .split("\n")
    .map((l) => /^\s*-\s+(\S+)/.exec(l)?.[1])
    .filter((s): s is string => s !== undefined)

/** What one scenario gave. */
export interface Outcome {
  readonly scenario: string
  readonly passed: number
  readonly failed: number
  readonly warnings: number
  readonly status: number | null
}

/** Runs one scenario; failed and warning checks are described on stderr. */
export const runScenario = (scenario: string): Outcome => {
  const out = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-conformance-"))
  const result = ChildProcess.spawnSync(
    node22,
    [cli, "client", "--command", client, "--scenario", scenario, "--timeout", "30000", "-o", out],
    { encoding: "utf8", cwd: root }
  )
  // Results go to <out>/<scenario>-<time>/checks.json; a scenario named a/b nests a folder.
  const checksFile = (Fs.readdirSync(out, { recursive: true }) as Array<string>)
    .map((entry) => Path.join(out, entry))
    .find((file) => Path.basename(file) === "checks.json")
  const checks: Array<{ status: string; name?: string; errorMessage?: string }> =
    checksFile !== undefined && Fs.existsSync(checksFile) ? JSON.parse(Fs.readFileSync(checksFile, "utf8")) : []
  const passed = checks.filter((c) => c.status === "SUCCESS").length
  const failed = checks.filter((c) => c.status === "FAILURE").length
  const warnings = checks.filter((c) => c.status === "WARNING").length
  if (failed > 0 || result.status !== 0) {
    for (const c of checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING")) {
      process.stderr.write(`    ${c.status} ${c.name ?? ""}: ${c.errorMessage ?? ""}\n`)
    }
    if (checks.length === 0) process.stderr.write(`${result.stderr.slice(-2000)}\n`)
  }
  Fs.rmSync(out, { recursive: true, force: true })
  return { scenario, passed, failed, warnings, status: result.status }
}

