/**
 * The K=V options of `skald mcp add` before @effect/cli parses them (cli/McpCommands.ts): pairs
 * regrouped next to each option's first one, nothing else moved, nothing lost; and what
 * keyValueMap would not take said as a usage message.
 */
import { assert, describe, it } from "@effect/vitest"
import * as McpCommands from "@skald/server/cli/McpCommands"
import { FastCheck as fc } from "effect"

const other = fc.constantFrom("--json", "--description", "d", "--replace", "NAME", "A=1", "--home", "/h")
const pair = fc.tuple(fc.constantFrom("--env", "--secret-env"), fc.constantFrom("K=1", "L=x=y", "M=${REF}"))
const token = fc.oneof(other.map((t) => [t]), pair.map(([o, v]) => [o, v]))

describe("K=V options", () => {
  it.prop("regrouping keeps every token, the other tokens' order, and each option's pairs in order", [
    fc.array(token, { maxLength: 12 }).map((ts) => ts.flat())
  ], ([argv]) => {
    const grouped = McpCommands.groupKeyValues(argv)
    assert.deepStrictEqual([...grouped].sort(), [...argv].sort())
    const pairsOf = (a: ReadonlyArray<string>, option: string) =>
      a.flatMap((t, i) => (t === option && i + 1 < a.length ? [a[i + 1]] : []))
    const others = (a: ReadonlyArray<string>) =>
      a.filter((t, i) => t !== "--env" && t !== "--secret-env" && a[i - 1] !== "--env" && a[i - 1] !== "--secret-env")
    for (const option of ["--env", "--secret-env"]) {
      assert.deepStrictEqual(pairsOf(grouped, option), pairsOf(argv, option))
      // One run of consecutive pairs per option.
      const at = grouped.flatMap((t, i) => (t === option ? [i] : []))
      at.forEach((index, k) => k > 0 && assert.strictEqual(index, at[k - 1]! + 2))
    }
    assert.deepStrictEqual(others(grouped), others(argv))
  })

  it("says what is wrong with a value keyValueMap would not take, never echoing a --secret-env value", () => {
    assert.strictEqual(
      McpCommands.keyValueProblem(["--env", "NOEQ"]),
      "--env takes KEY=VALUE with a variable name as KEY, got \"NOEQ\""
    )
    assert.notInclude(McpCommands.keyValueProblem(["--secret-env", "hunter2"]) ?? "", "hunter2")
    assert.include(McpCommands.keyValueProblem(["--env", "K="]) ?? "", "non-empty VALUE")
    assert.strictEqual(McpCommands.keyValueProblem(["--env"]), "--env takes KEY=VALUE, got nothing")
    assert.isUndefined(McpCommands.keyValueProblem(["--env", "K=v", "--secret-env", "S=x=y", "--json"]))
  })
})
