/**
 * The conformance runner's failure paths (test/conformance/scenarios.ts): a CLI that is not
 * installed, one that fails without results, one that reports failed checks. Each is a real
 * process; the runner must report what it said, never crash.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { listScenarios, runScenario, toolsCli } from "./conformance/scenarios.js"

const made: Array<string> = []
afterAll(() => {
  for (const dir of made) Fs.rmSync(dir, { recursive: true, force: true })
})

/** A stand-in CLI: `body` runs with `out` (the -o folder) and `scenario` in scope. */
const fakeCli = (body: string) => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-fake-conformance-"))
  made.push(dir)
  const script = Path.join(dir, "cli.mjs")
  Fs.writeFileSync(
    script,
    `import * as fs from "node:fs"
const argv = process.argv.slice(2)
const out = argv[argv.indexOf("-o") + 1]
const scenario = argv[argv.indexOf("--scenario") + 1]
${body}
`
  )
  return { node: process.execPath, script }
}

describe("conformance runner", () => {
  it("reports a CLI that is not installed instead of crashing", () => {
    const cli = { node: Path.join(Os.tmpdir(), "no-such-dir", "node"), script: toolsCli.script }
    const outcome = runScenario("initialize", cli)
    assert.isNull(outcome.status)
    assert.strictEqual(outcome.passed, 0)
    assert.include(outcome.report, "could not run it")
    assert.include(outcome.report, "ENOENT")
    assert.include(outcome.report, `missing: ${cli.node}`)
    assert.include(outcome.report, "npm ci --prefix tools/node22")
  })

  it("reports the exit code, stdout and stderr of a CLI that wrote no results", () => {
    const cli = fakeCli(`console.log("out: starting " + scenario); console.error("err: it broke"); process.exit(3)`)
    const outcome = runScenario("tools_call", cli)
    assert.strictEqual(outcome.status, 3)
    assert.strictEqual(outcome.failed, 0)
    assert.include(outcome.report, "the CLI wrote no checks.json")
    assert.include(outcome.report, "exit code 3")
    assert.include(outcome.report, "out: starting tools_call")
    assert.include(outcome.report, "err: it broke")
  })

  it("reads nested checks.json and lists the failed checks", () => {
    const cli = fakeCli(`
fs.mkdirSync(out + "/" + scenario + "-1", { recursive: true })
fs.writeFileSync(out + "/" + scenario + "-1/checks.json", JSON.stringify([
  { status: "SUCCESS", name: "a" },
  { status: "FAILURE", name: "b", errorMessage: "no retry" },
  { status: "WARNING", name: "c", errorMessage: "slow" }
]))
process.exit(1)`)
    const outcome = runScenario("auth/metadata", cli)
    assert.deepStrictEqual(
      [outcome.status, outcome.passed, outcome.failed, outcome.warnings],
      [1, 1, 1, 1]
    )
    assert.include(outcome.report, "FAILURE b: no retry")
    assert.include(outcome.report, "WARNING c: slow")
    assert.include(outcome.report, "exit code 1")
  })

  it("gives an empty report for a passing scenario", () => {
    const cli = fakeCli(`
fs.mkdirSync(out + "/x", { recursive: true })
fs.writeFileSync(out + "/x/checks.json", JSON.stringify([{ status: "SUCCESS", name: "a" }]))`)
    const outcome = runScenario("initialize", cli)
    assert.deepStrictEqual([outcome.status, outcome.passed, outcome.failed, outcome.report], [0, 1, 0, ""])
  })

  it("throws the CLI's output when it cannot list the scenarios", () => {
    const cli = fakeCli(`console.error("list: unknown option"); process.exit(2)`)
    assert.throws(() => listScenarios(cli), /could not list[\s\S]*exit code 2[\s\S]*list: unknown option/)
  })

  it("lists the scenarios of the installed CLI", () => {
    const scenarios = listScenarios()
    for (const scenario of ["initialize", "tools_call", "sse-retry"]) assert.include(scenarios, scenario)
  })
})
