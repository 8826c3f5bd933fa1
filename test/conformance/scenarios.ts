/**
 * Runs one scenario of the official MCP conformance suite against Skald's conformance client
 * (client.ts, on this Node, through tsx). The suite's CLI and the Node 22 it needs live in
 * tools/node22, which the root `npm ci` installs (its postinstall runs tools/node22/install.mjs).
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const here = Path.dirname(fileURLToPath(import.meta.url))
const root = Path.resolve(here, here.includes(`${Path.sep}build${Path.sep}`) ? "../../../.." : "../..")
const client = `${process.execPath} --import tsx ${Path.join(root, "test/conformance/client.ts")}`

/** Where the conformance CLI and the Node that runs it are. */
export interface Cli {
  readonly node: string
  readonly script: string
}

/** tools/node22's Node 22 and the conformance CLI installed beside it. */
export const toolsCli: Cli = {
  node: Path.join(root, "tools/node22/node_modules/node/bin/node"),
  script: Path.join(root, "tools/node22/node_modules/@modelcontextprotocol/conformance/dist/index.js")
}

const installHint =
  "tools/node22 is installed by the root `npm ci` (postinstall); to install it alone: npm ci --prefix tools/node22"

/** The scenarios CI requires: all 26 client scenarios the suite knows, OAuth's included. */
export const required = [
  "initialize",
  "tools_call",
  "elicitation-sep1034-client-defaults",
  "sse-retry",
  "auth/metadata-default",
  "auth/metadata-var1",
  "auth/metadata-var2",
  "auth/metadata-var3",
  "auth/basic-cimd",
  "auth/scope-from-www-authenticate",
  "auth/scope-from-scopes-supported",
  "auth/scope-omitted-when-undefined",
  "auth/scope-step-up",
  "auth/scope-retry-limit",
  "auth/token-endpoint-auth-basic",
  "auth/token-endpoint-auth-post",
  "auth/token-endpoint-auth-none",
  "auth/pre-registration",
  "auth/2025-03-26-oauth-metadata-backcompat",
  "auth/2025-03-26-oauth-endpoint-fallback",
  "auth/resource-mismatch",
  "auth/offline-access-scope",
  "auth/offline-access-not-supported",
  "auth/client-credentials-jwt",
  "auth/client-credentials-basic",
  "auth/cross-app-access-complete-flow"
]

/** What a finished (or unstartable) CLI run said: exit status or spawn error, and (`streams`) its command line and both streams' tails. */
const describeRun = (
  cli: Cli,
  args: ReadonlyArray<string>,
  result: ChildProcess.SpawnSyncReturns<string>,
  streams = true
): string => {
  const lines = streams ? [`command: ${cli.node} ${cli.script} ${args.join(" ")}`] : []
  lines.push(
    result.error !== undefined
      ? `could not run it: ${result.error.message}`
      : result.signal !== null
      ? `killed by ${result.signal}`
      : `exit code ${result.status}`
  )
  const missing = [cli.node, cli.script].filter((file) => !Fs.existsSync(file))
  if (missing.length > 0) lines.push(`missing: ${missing.join(", ")}. ${installHint}`)
  const tail = (name: string, text: string | null) => {
    const trimmed = (text ?? "").trim()
    if (trimmed.length > 0) lines.push(`--- ${name} (last 2000 characters) ---`, trimmed.slice(-2000))
  }
  if (streams) {
    tail("stdout", result.stdout)
    tail("stderr", result.stderr)
  }
  return lines.join("\n")
}

/** Every client scenario the suite knows; throws with the CLI's own output when it cannot say. */
export const listScenarios = (cli: Cli = toolsCli): Array<string> => {
  const args = ["list", "--client"]
  const result = ChildProcess.spawnSync(cli.node, [cli.script, ...args], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024
  })
  if (result.error !== undefined || result.status !== 0) {
    throw new Error(`the conformance CLI could not list its scenarios\n${describeRun(cli, args, result)}`)
  }
  return result.stdout
    .split("\n")
    .map((l) => /^\s*-\s+(\S+)/.exec(l)?.[1])
    .filter((s): s is string => s !== undefined)
}

/** What one scenario gave. */
export interface Outcome {
  readonly scenario: string
  readonly passed: number
  readonly failed: number
  readonly warnings: number
  /** The CLI's exit code; null when it could not start or was killed. */
  readonly status: number | null
  /**
   * Empty when the scenario passed; else its failed and warning checks, then how the CLI ended,
   * with its stdout and stderr unless failed checks explain the failure.
   */
  readonly report: string
}

interface Check {
  readonly status: string
  readonly name?: string
  readonly errorMessage?: string
}

const scenarioArgs = (scenario: string, out: string) => [
  "client",
  "--command",
  client,
  "--scenario",
  scenario,
  "--timeout",
  "30000",
  "-o",
  out
]

/** What the CLI wrote to `out` and how it ended, as an Outcome (`out` is removed). */
const outcomeOf = (
  scenario: string,
  cli: Cli,
  args: ReadonlyArray<string>,
  out: string,
  result: ChildProcess.SpawnSyncReturns<string>
): Outcome => {
  // Results go to <out>/<scenario>-<time>/checks.json; a scenario named a/b nests a folder.
  const checksFile = (Fs.readdirSync(out, { recursive: true }) as Array<string>)
    .map((entry) => Path.join(out, entry))
    .find((file) => Path.basename(file) === "checks.json")
  const checks: Array<Check> = checksFile !== undefined ? JSON.parse(Fs.readFileSync(checksFile, "utf8")) : []
  Fs.rmSync(out, { recursive: true, force: true })
  const passed = checks.filter((c) => c.status === "SUCCESS").length
  const failed = checks.filter((c) => c.status === "FAILURE").length
  const warnings = checks.filter((c) => c.status === "WARNING").length
  const report = failed > 0 || result.status !== 0
    ? [
      ...checks
        .filter((c) => c.status === "FAILURE" || c.status === "WARNING")
        .map((c) => `${c.status} ${c.name ?? ""}: ${c.errorMessage ?? ""}`),
      ...(checksFile === undefined ? ["the CLI wrote no checks.json"] : []),
      describeRun(cli, args, result, failed === 0)
    ].join("\n")
    : ""
  return { scenario, passed, failed, warnings, status: result.status, report }
}

/** Runs one scenario. Never throws for a failing or missing CLI: that is in `status` and `report`. */
export const runScenario = (scenario: string, cli: Cli = toolsCli): Outcome => {
  const out = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-conformance-"))
  const args = scenarioArgs(scenario, out)
  const result = ChildProcess.spawnSync(cli.node, [cli.script, ...args], {
    encoding: "utf8",
    cwd: root,
    maxBuffer: 64 * 1024 * 1024
  })
  return outcomeOf(scenario, cli, args, out, result)
}

/**
 * `runScenario` without blocking the event loop (a test runner's worker must keep answering its
 * runner while a scenario runs).
 */
export const runScenarioAsync = (scenario: string, cli: Cli = toolsCli): Promise<Outcome> => {
  const out = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-conformance-"))
  const args = scenarioArgs(scenario, out)
  return new Promise((resolve) => {
    const child = ChildProcess.spawn(cli.node, [cli.script, ...args], { cwd: root })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout = (stdout + chunk).slice(-65536)))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-65536)))
    let error: Error | undefined
    child.on("error", (e) => (error = e))
    child.on("close", (status, signal) => {
      const result = {
        pid: child.pid ?? 0,
        output: [null, stdout, stderr],
        stdout,
        stderr,
        status,
        signal,
        ...(error !== undefined ? { error } : {})
      } satisfies ChildProcess.SpawnSyncReturns<string>
      resolve(outcomeOf(scenario, cli, args, out, result))
    })
  })
}
