/**
 * Every error type of @skald/domain and @skald/server says something: constructed with arbitrary
 * field values, its message is never empty and is more than the values it was given. The types
 * are found in the packages' exports (every Schema error class), so a new one is covered without
 * touching this file.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Domain from "@skald/domain"
import * as Server from "@skald/server"
import * as Io from "@skald/server/cli/Io"
import { Arbitrary, FastCheck as fc, Schema } from "effect"

type ErrorClass = Schema.Schema.Any & (new(...args: ReadonlyArray<any>) => Error) & { readonly _tag?: string }

/** Every Schema class in the exports (namespaces walked) whose instances are Errors. */
const errorClasses = (root: object): Map<string, ErrorClass> => {
  const found = new Map<string, ErrorClass>()
  const seen = new Set<unknown>()
  const walk = (value: unknown, path: string) => {
    if (value === null || (typeof value !== "object" && typeof value !== "function") || seen.has(value)) return
    seen.add(value)
    if (typeof value === "function") {
      if (Schema.isSchema(value) && value.prototype instanceof Error) found.set(path, value as unknown as ErrorClass)
      return
    }
    for (const [key, child] of Object.entries(value)) walk(child, path === "" ? key : `${path}.${key}`)
  }
  walk(root, "")
  return found
}

const all = new Map([...errorClasses(Domain), ...errorClasses(Server)])

describe("error messages", () => {
  it("the exports hold the error types (the enumeration finds them)", () => {
    // A floor, not the list: a new type raises the count and is covered by the property below.
    for (
      const name of [
        "McpError.McpTimeout",
        "McpError.McpSpawnError",
        "HostError.StartTimeout",
        "HostError.UnknownServer",
        "HostError.ServerAlreadyRegistered",
        "HostError.ServerDisabled"
      ]
    ) {
      assert.isTrue(all.has(name), `${name} in ${[...all.keys()].join(", ")}`)
    }
  })

  for (const [name, ErrorType] of all) {
    const arbitrary = Arbitrary.make(ErrorType) as fc.Arbitrary<Error>
    it.prop(`${name}: the message is never empty and says more than its fields`, [arbitrary], ([error]) => {
      const message = error.message
      assert.isString(message)
      assert.isAbove(message.trim().length, 0, `${name} gave an empty message`)
      // More than the values: the fixed words of the message, at least three of them.
      const fields = Object.values(error).filter((v): v is string => typeof v === "string")
      // Words of the message that its field values do not account for (counted as words, so a value
      // "C" does not eat the C of "MCP").
      const words = (text: string) => text.split(/[^A-Za-z]+/).filter((w) => w.length > 1)
      const counts = new Map<string, number>()
      for (const w of words(message)) counts.set(w, (counts.get(w) ?? 0) + 1)
      for (const value of fields) for (const w of words(value)) counts.set(w, (counts.get(w) ?? 0) - 1)
      const fixed = [...counts.values()].reduce((n, c) => n + Math.max(0, c), 0)
      assert.isAtLeast(fixed, 3, `${name}: ${JSON.stringify(message)}`)
      // And the command line shows it as it is (never an empty "skald: ").
      assert.isTrue(Io.describeFailure(error).startsWith(message), name)
    })
  }

  it.prop("what the command line prints for any failure is never empty", [
    fc.oneof(
      fc.string(),
      fc.record({ message: fc.string() }),
      fc.record({ _tag: fc.string(), message: fc.constant("") }),
      fc.constant(null)
    )
  ], ([failure]) => {
    assert.isAbove(Io.describeFailure(failure).trim().length, 0)
  })
})
