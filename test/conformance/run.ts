/**
 * `npm run conformance`: every client scenario of the official MCP conformance suite, one at a
 * time, with checks passed/failed per scenario. Fails when a required scenario has a failed check;
 * the OAuth scenarios are run and reported, not required yet.
 *
 * Usage: node build/root/test/conformance/run.js [--required-only]
 */
import { listScenarios, type Outcome, required, runScenario } from "./scenarios.js"

const requiredOnly = process.argv.includes("--required-only")
const scenarios = requiredOnly ? required : listScenarios()
let requiredFailures = 0
const optional: Array<Outcome> = []
for (const scenario of scenarios) {
  const outcome = runScenario(scenario)
  const isRequired = required.includes(scenario)
  const ok = outcome.failed === 0 && outcome.status === 0
  if (isRequired && !ok) requiredFailures++
  if (!isRequired) optional.push(outcome)
  console.log(
    `${ok ? "PASS" : "FAIL"} ${scenario}: ${outcome.passed} checks passed, ${outcome.failed} failed` +
      `${outcome.warnings > 0 ? `, ${outcome.warnings} warnings` : ""}${isRequired ? "" : " (not required yet)"}`
  )
}
if (optional.length > 0) {
  const passing = optional.filter((o) => o.failed === 0 && o.status === 0).length
  console.log(`optional scenarios (OAuth and newer): ${passing}/${optional.length} pass`)
}
console.log(`required scenarios: ${required.length - requiredFailures}/${required.length} pass`)
process.exit(requiredFailures === 0 ? 0 : 1)
