/**
 * The official MCP conformance suite's required client scenarios, each alone, against Skald's
 * HTTP client (`npm run conformance` runs them all, OAuth included). The CLI comes from
 * tools/node22, which the root `npm ci` installs: when it is missing these tests fail and say so.
 */
import { assert, describe, it } from "@effect/vitest"
import { required, runScenario } from "./conformance/scenarios.js"

describe("official conformance suite (client scenarios)", () => {
  for (const scenario of required) {
    it(scenario, () => {
      const outcome = runScenario(scenario)
      assert.strictEqual(outcome.status, 0, `the conformance CLI failed for ${scenario}:\n${outcome.report}`)
      assert.strictEqual(outcome.failed, 0, outcome.report)
      assert.isAbove(outcome.passed, 0)
    }, 90_000)
  }
})
