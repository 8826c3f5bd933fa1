/**
 * Checks `structuredContent` against a tool's declared `outputSchema`. Server schemas are
 * untrusted input: they are interpreted (never compiled to code), in the dialect their `$schema`
 * names (draft-07 as the official SDK emits, 2020-12 by default as the spec says).
 *
 * @since 0.1.0
 */
import { type Schema, type SchemaDraft, Validator } from "@cfworker/json-schema"

const draftOf = (schema: { readonly [key: string]: unknown }): SchemaDraft => {
  const uri = typeof schema.$schema === "string" ? schema.$schema : ""
  if (uri.includes("draft-04")) return "4"
  if (uri.includes("draft-06") || uri.includes("draft-07")) return "7"
  if (uri.includes("2019-09")) return "2019-09"
  return "2020-12"
}

/** A compiled check: `undefined` when the value conforms, else a short description of why not. */
export type Check = (value: unknown) => string | undefined

/** Builds the check for one schema. A schema the validator cannot read yields a check that says so. */
export const make = (schema: { readonly [key: string]: unknown }): Check => {
  let validator: Validator
  try {
    validator = new Validator(schema as Schema, draftOf(schema), false)
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    return () => `the outputSchema could not be read (${reason})`
  }
  return (value) => {
    let outcome
    try {
      outcome = validator.validate(value)
    } catch (error) {
      return `the outputSchema could not be applied (${error instanceof Error ? error.message : String(error)})`
    }
    if (outcome.valid) return undefined
    // Locations and keywords only: the values themselves may be sensitive.
    const reasons = outcome.errors
      .filter((e) => e.keyword !== "properties" && e.keyword !== "allOf")
      .slice(0, 3)
      .map((e) => `${e.instanceLocation || "#"} fails '${e.keyword}' (${e.keywordLocation})`)
    return reasons.length > 0 ? reasons.join("; ") : "it does not match"
  }
}

/** A per-tool cache of checks, keyed by the schema object (a re-list replaces them). */
export const makeCache = () => {
  const checks = new WeakMap<object, Check>()
  return (schema: { readonly [key: string]: unknown }): Check => {
    let check = checks.get(schema)
    if (check === undefined) {
      check = make(schema)
      checks.set(schema, check)
    }
    return check
  }
}
