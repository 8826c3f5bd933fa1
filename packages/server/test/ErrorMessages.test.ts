/**
 * Every error type of @skald/domain and @skald/server says something: constructed with arbitrary
 * field values, its message is never empty and is more than the values it was given, and names no
 * command, flag or variable of the command line (those are the CLI's hints, CliError.ts). The
 * types are found in the packages' exports (every Schema error class), so a new one is covered
 * without touching this file; an exported error class that is not a Schema one is a failure.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Domain from "@skald/domain"
import * as Server from "@skald/server"
import * as Io from "@skald/server/cli/Io"
import * as Database from "@skald/server/host/Database"
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

/** The packages' exports, and the host modules that are not re-exported by the index but fail its layers. */
const roots = [Domain, { ...Server, Database }]

const all = new Map(roots.flatMap((root) => [...errorClasses(root)]))

/** Every exported class whose instances are Errors, Schema or not. */
const allErrorClasses = (root: object): Array<readonly [string, Function]> => {
  const found: Array<readonly [string, Function]> = []
  const seen = new Set<unknown>()
  const walk = (value: unknown, path: string) => {
    if (value === null || (typeof value !== "object" && typeof value !== "function") || seen.has(value)) return
    seen.add(value)
    if (typeof value === "function") {
      if (value.prototype instanceof Error) found.push([path, value])
      return
    }
    for (const [key, child] of Object.entries(value)) walk(child, path === "" ? key : `${path}.${key}`)
  }
  walk(root, "")
  return found
}

/** What only the command line may say: its commands, its flags, the variables its settings read. */
const cliWords = /\bskald (mcp|secret|serve|tools|call|events|config)\b|(^|\s|`)--[a-z]|SKALD_[A-Z_]+/

/** Every string in a field's value, at any depth (arrays, structs). */
const stringsIn = (value: unknown): ReadonlyArray<string> =>
  typeof value === "string"
    ? [value]
    : Array.isArray(value)
    ? value.flatMap(stringsIn)
    : typeof value === "object" && value !== null
    ? Object.values(value).flatMap(stringsIn)
    : []

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

  it("every exported error class of the domain and the host is a Schema.TaggedError", () => {
    const classes = roots.flatMap(allErrorClasses)
    assert.isAtLeast(classes.length, all.size)
    assert.isTrue(classes.some(([name]) => name === "Database.DatabaseUnusable"))
    for (const [name, type] of classes) assert.isTrue(Schema.isSchema(type), `${name} is not a Schema error`)
  })

  for (const [name, ErrorType] of all) {
    const arbitrary = Arbitrary.make(ErrorType) as fc.Arbitrary<Error>
    it.prop(`${name}: the message is never empty and says more than its fields`, [arbitrary], ([error]) => {
      const message = error.message
      assert.isString(message)
      assert.isAbove(message.trim().length, 0, `${name} gave an empty message`)
      // More than the values: the fixed words of the message, at least three of them.
      // (Strings at any depth count too: a list of offered tools, the URLs and their messages…)
      const fields = Object.values(error).flatMap(stringsIn)
      // Words of the message that its field values do not account for (counted as words, so a value
      // "C" does not eat the C of "MCP").
      const words = (text: string) => text.split(/[^A-Za-z]+/).filter((w) => w.length > 1)
      const counts = new Map<string, number>()
      for (const w of words(message)) counts.set(w, (counts.get(w) ?? 0) + 1)
      for (const value of fields) for (const w of words(value)) counts.set(w, (counts.get(w) ?? 0) - 1)
      const fixed = [...counts.values()].reduce((n, c) => n + Math.max(0, c), 0)
      assert.isAtLeast(fixed, 3, `${name}: ${JSON.stringify(message)}`)
      // Neutral of where it is shown: no command line words (beyond what its fields brought).
      // Longest values first: a short value ("}") must not cut a longer one ("}--a") that holds it.
      const own = [...fields].sort((a, b) => b.length - a.length)
        .reduce((text, value) => value.length === 0 ? text : text.split(value).join(" "), message)
      assert.notMatch(own, cliWords, `${name}: ${JSON.stringify(message)}`)
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
