/**
 * Elicitation: a server asks the user for input in the middle of a call (`elicitation/create`).
 * The embedding app answers through an `ElicitationHandler`; this module describes what is asked
 * (form fields, or a URL to open) and checks answers against the requested schema.
 *
 * Answers are user input and may be secrets: nothing here puts a value in an error message.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"

type Json = { readonly [key: string]: unknown }

/** One choice of an enum field. */
export interface Choice {
  readonly value: string
  readonly title?: string | undefined
}

/** One field of a form, typed (SEP-1330 enums, SEP-1034 defaults). */
export type Field =
  & {
    readonly name: string
    readonly title?: string | undefined
    readonly description?: string | undefined
    readonly required: boolean
    /** Shown masked: `format: password`, `writeOnly: true`, or a name with password/passphrase/secret/token. */
    readonly masked: boolean
  }
  & (
    | {
      readonly kind: "string"
      readonly format?: string | undefined
      readonly minLength?: number | undefined
      readonly maxLength?: number | undefined
      readonly default?: string | undefined
    }
    | {
      readonly kind: "number" | "integer"
      readonly minimum?: number | undefined
      readonly maximum?: number | undefined
      readonly default?: number | undefined
    }
    | { readonly kind: "boolean"; readonly default?: boolean | undefined }
    | { readonly kind: "enum"; readonly choices: ReadonlyArray<Choice>; readonly default?: string | undefined }
    | {
      readonly kind: "multi-enum"
      readonly choices: ReadonlyArray<Choice>
      readonly minItems?: number | undefined
      readonly maxItems?: number | undefined
      readonly default?: ReadonlyArray<string> | undefined
    }
  )

/** A form request: fill in the fields (none: a yes/no confirmation). */
export interface FormRequest {
  readonly _tag: "Form"
  readonly server: string
  readonly message: string
  readonly fields: ReadonlyArray<Field>
  /** True when the schema has no properties: accept means yes. */
  readonly confirmation: boolean
}

/** A URL request: ask the user's consent to open a URL (the flow happens out of band). */
export interface UrlRequest {
  readonly _tag: "Url"
  readonly server: string
  readonly message: string
  readonly url: string
  readonly elicitationId: string
  /** Completes when the server sends `notifications/elicitation/complete` for this elicitation. */
  readonly completed: Effect.Effect<void>
}

/** What a server asks. */
export type Request = FormRequest | UrlRequest

/** The user's answer (an MCP `ElicitResult`). For URL mode, `accept` means the user agreed to open it. */
export type Response =
  | { readonly action: "accept"; readonly content?: Json | undefined }
  | { readonly action: "decline" }
  | { readonly action: "cancel" }

/** What the embedding app provides to answer elicitations. */
export interface Handler {
  /** Whether the app can handle URL mode (it is declared only then). */
  readonly url: boolean
  /** Asks the user. May take minutes; the engine bounds it with the user deadline. */
  readonly elicit: (request: Request) => Effect.Effect<Response>
}

/**
 * The elicitation handler. When one is in context at connect time, the client declares
 * `elicitation` (`form`, and `url` when supported) on every transport; without one nothing is
 * declared and any request is declined.
 */
export class ElicitationHandler extends Context.Tag("@skald/mcp/ElicitationHandler")<ElicitationHandler, Handler>() {}

const SECRET_NAME = /password|passphrase|secret|token/i

/** The seed's masking rule. */
export const isMasked = (name: string, schema: Json): boolean =>
  schema.format === "password" || schema.writeOnly === true || SECRET_NAME.test(name)

const str = (u: unknown) => (typeof u === "string" ? u : undefined)
const num = (u: unknown) => (typeof u === "number" && Number.isFinite(u) ? u : undefined)

const choicesOf = (schema: Json): ReadonlyArray<Choice> | undefined => {
  if (Array.isArray(schema.enum) && schema.enum.every((v) => typeof v === "string")) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : []
    return (schema.enum as Array<string>).map((value, i) => ({ value, title: str(names[i]) }))
  }
  const titled = Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : undefined
  if (titled !== undefined && titled.every((c) => Predicate.isRecord(c) && typeof c.const === "string")) {
    return (titled as Array<Json>).map((c) => ({ value: c.const as string, title: str(c.title) }))
  }
  return undefined
}

const fieldOf = (name: string, schema: Json, required: boolean): Field | string => {
  const base = {
    name,
    title: str(schema.title),
    description: str(schema.description),
    required,
    masked: isMasked(name, schema)
  }
  switch (schema.type) {
    case "string": {
      const choices = choicesOf(schema)
      if (choices !== undefined) return { ...base, kind: "enum", choices, default: str(schema.default) }
      return {
        ...base,
        kind: "string",
        format: str(schema.format),
        minLength: num(schema.minLength),
        maxLength: num(schema.maxLength),
        default: str(schema.default)
      }
    }
    case "number":
    case "integer":
      return {
        ...base,
        kind: schema.type,
        minimum: num(schema.minimum),
        maximum: num(schema.maximum),
        default: num(schema.default)
      }
    case "boolean":
      return { ...base, kind: "boolean", default: typeof schema.default === "boolean" ? schema.default : undefined }
    case "array": {
      const choices = Predicate.isRecord(schema.items) ? choicesOf(schema.items) : undefined
      if (choices === undefined) return `field '${name}': an array field must be a multi-select of string choices`
      const defaults = Array.isArray(schema.default) && schema.default.every((v) => typeof v === "string")
        ? (schema.default as Array<string>)
        : undefined
      return {
        ...base,
        kind: "multi-enum",
        choices,
        minItems: num(schema.minItems),
        maxItems: num(schema.maxItems),
        default: defaults
      }
    }
    default:
      return `field '${name}': type ${
        JSON.stringify(schema.type)
      } is not one of string, number, integer, boolean, array`
  }
}

/** Reads a `requestedSchema` into fields; `Left` says why the schema is not a flat form. */
export const parseForm = (requestedSchema: unknown): Either.Either<ReadonlyArray<Field>, string> => {
  if (!Predicate.isRecord(requestedSchema)) return Either.left("requestedSchema is not an object")
  const properties = requestedSchema.properties === undefined ? {} : requestedSchema.properties
  if (!Predicate.isRecord(properties)) return Either.left("requestedSchema.properties is not an object")
  const required = Array.isArray(requestedSchema.required) ? requestedSchema.required : []
  const fields: Array<Field> = []
  for (const [name, schema] of Object.entries(properties)) {
    if (!Predicate.isRecord(schema)) return Either.left(`field '${name}' has no schema`)
    const field = fieldOf(name, schema, required.includes(name))
    if (typeof field === "string") return Either.left(field)
    fields.push(field)
  }
  return Either.right(fields)
}

const EMAIL = /^[^\s@]+@[^\s@]+$/
const DATE = /^\d{4}-\d{2}-\d{2}$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/

const checkString = (field: Extract<Field, { kind: "string" }>, value: string): string | undefined => {
  if (field.minLength !== undefined && value.length < field.minLength) return `is shorter than ${field.minLength}`
  if (field.maxLength !== undefined && value.length > field.maxLength) return `is longer than ${field.maxLength}`
  switch (field.format) {
    case "email":
      return EMAIL.test(value) ? undefined : "is not an email address"
    case "uri":
      return URL.canParse(value) ? undefined : "is not a URI"
    case "date":
      return DATE.test(value) ? undefined : "is not a date (YYYY-MM-DD)"
    case "date-time":
      return DATE_TIME.test(value) ? undefined : "is not a date-time (RFC 3339)"
    default:
      return undefined
  }
}

const checkValue = (field: Field, value: unknown): string | undefined => {
  switch (field.kind) {
    case "string":
      return typeof value === "string" ? checkString(field, value) : "must be a string"
    case "number":
    case "integer": {
      if (typeof value !== "number" || !Number.isFinite(value)) return "must be a number"
      if (field.kind === "integer" && !Number.isInteger(value)) return "must be an integer"
      if (field.minimum !== undefined && value < field.minimum) return `is below ${field.minimum}`
      if (field.maximum !== undefined && value > field.maximum) return `is above ${field.maximum}`
      return undefined
    }
    case "boolean":
      return typeof value === "boolean" ? undefined : "must be true or false"
    case "enum":
      return typeof value === "string" && field.choices.some((c) => c.value === value)
        ? undefined
        : `must be one of ${field.choices.map((c) => c.value).join(", ")}`
    case "multi-enum": {
      if (!Array.isArray(value) || !value.every((v) => field.choices.some((c) => c.value === v))) {
        return `must be a list of ${field.choices.map((c) => c.value).join(", ")}`
      }
      if (field.minItems !== undefined && value.length < field.minItems) {
        return `needs at least ${field.minItems} choices`
      }
      if (field.maxItems !== undefined && value.length > field.maxItems) {
        return `takes at most ${field.maxItems} choices`
      }
      return undefined
    }
  }
}

/**
 * Checks accepted content against the fields and fills in the defaults of missing fields
 * (SEP-1034). `Left` names the fields and what is wrong — never the values.
 */
export const validate = (fields: ReadonlyArray<Field>, content: unknown): Either.Either<Json, string> => {
  const given = content === undefined ? {} : content
  if (!Predicate.isRecord(given)) return Either.left("the answer is not an object")
  const out: Record<string, unknown> = {}
  const problems: Array<string> = []
  for (const field of fields) {
    let value = given[field.name]
    if (value === undefined) value = field.default
    if (value === undefined) {
      if (field.required) problems.push(`'${field.name}' is required`)
      continue
    }
    const problem = checkValue(field, value)
    if (problem !== undefined) problems.push(`'${field.name}' ${problem}`)
    else out[field.name] = value
  }
  for (const name of Object.keys(given)) {
    if (!fields.some((f) => f.name === name)) problems.push(`'${name}' is not a field of this form`)
  }
  return problems.length === 0 ? Either.right(out) : Either.left(problems.join("; "))
}
