/**
 * The official MCP conformance suite's client scenarios, each alone, against Skald's HTTP client
 * (`npm run conformance` runs the same). Every scenario the suite lists is required, the 22 OAuth
 * ones included: a new scenario in a new suite version fails the first test until it is added. The CLI comes from
 * tools/node22, which the root `npm ci` installs: when it is missing these tests fail and say so.
 */
import { assert, describe, it } from "@effect/vitest"
import { listScenarios, required, runScenarioAsync } from "./conformance/scenarios.js"

describe("official conformance suite (client scenarios)", () => {
  it("requires every client scenario the suite knows (OAuth's included)", () => {
    const known = listScenarios()
    assert.isAtLeast(known.length, 26)
    assert.deepStrictEqual([...known].sort(), [...required].sort())
  }, 60_000)

  for (const scenario of required) {
    it(scenario, async () => {
      const outcome = await runScenarioAsync(scenario)
      assert.strictEqual(outcome.status, 0, `the conformance CLI failed for ${scenario}:\n${outcome.report}`)
      assert.strictEqual(outcome.failed, 0, outcome.report)
      assert.isAbove(outcome.passed, 0)
    }, 90_000)
  }
})
