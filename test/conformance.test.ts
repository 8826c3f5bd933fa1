/**
 * The official MCP conformance suite's required client scenarios, each alone, against Skald's
 * HTTP client (`npm run conformance` runs them all, OAuth included).
 */
import { assert, describe, it } from "@effect/vitest"
import { required, runScenario } from "./conformance/scenarios.js"

describe("official conformance suite (client scenarios)", () => {
  for (const scenario of required) {
    it(scenario, () => {
      const outcome = runScenario(scenario)
      assert.strictEqual(outcome.status, 0, `the conformance CLI failed for ${scenario}`)
      assert.strictEqual(outcome.failed, 0)
      assert.isAbove(outcome.passed, 0)
    }, 90_000)
  }
})
