/**
 * `npm run conformance`: every client scenario of the official MCP conformance suite, one at a
 * time, with checks passed/failed per scenario. Fails when a required scenario has a failed check
 * (every scenario is required, OAuth's included; one the suite adds is reported as not required). A failing scenario's checks and the
 * CLI's own output (exit code, stdout, stderr) are printed under it.
 *
 * Usage: node build/root/test/conformance/run.js [--required-only]
 */
import { listScenarios, type Outcome, required, runScenario } from "./scenarios.js"

const indent = (text: string) => text.split("\n").map((l) => `    ${l}`).join("\n")

const scenarios = (): ReadonlyArray<string> => {
  if (process.argv.includes("--required-only")) return required
  try {
    return listScenarios()
  } catch (error) {
    console.error(`FAIL ${error instanceof Error ? error.message : String(error)}`)
    return process.exit(1)
  }
}

let requiredFailures = 0
const optional: Array<Outcome> = []
for (const scenario of scenarios()) {
  const outcome = runScenario(scenario)
  const isRequired = required.includes(scenario)
  const ok = outcome.failed === 0 && outcome.status === 0
  if (isRequired && !ok) requiredFailures++
  if (!isRequired) optional.push(outcome)
  console.log(
    `${ok ? "PASS" : "FAIL"} ${scenario}: ${outcome.passed} checks passed, ${outcome.failed} failed` +
      `${outcome.warnings > 0 ? `, ${outcome.warnings} warnings` : ""}${isRequired ? "" : " (not required yet)"}`
  )
  if (!ok) console.log(indent(outcome.report))
}
if (optional.length > 0) {
  const passing = optional.filter((o) => o.failed === 0 && o.status === 0).length
  console.log(`optional scenarios (newer than the required list): ${passing}/${optional.length} pass`)
}
console.log(`required scenarios: ${required.length - requiredFailures}/${required.length} pass`)
process.exit(requiredFailures === 0 ? 0 : 1)
