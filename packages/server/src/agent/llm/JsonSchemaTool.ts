/**
 * A `@effect/ai` tool whose parameters are a JSON Schema given as data — an MCP server's
 * `inputSchema` — passed to the model provider untouched.
 *
 * `Tool.getJsonSchema` returns exactly the object given (the `jsonSchema` annotation wins over
 * what effect's `JSONSchema` would derive), so `$schema`, `$defs`, `additionalProperties` and any
 * keyword the provider understands reach the wire as the server wrote them. The parameters decode
 * any JSON object: validating them against the schema is the server's business (and the host's,
 * where it validates), not the model adapter's.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Schema from "effect/Schema"

/** Any JSON object: the decoded shape of a JSON-Schema tool's arguments. */
export const Arguments = Schema.Struct({}, Schema.Record({ key: Schema.String, value: Schema.Unknown }))

/** A tool made from a JSON Schema: its arguments are any JSON object; its result is text or JSON. */
export type JsonSchemaTool = Tool.Tool<string, {
  readonly parameters: typeof Arguments
  readonly success: typeof Schema.Unknown
  readonly failure: typeof Schema.Never
  readonly failureMode: "error"
}>

/** An object schema accepting anything, for a server that sent no usable `inputSchema`. */
const anyObject = { type: "object" } as const

/**
 * A tool named `name` whose parameters' JSON Schema is `inputSchema`, unchanged (an input that is
 * not a JSON object becomes `{"type": "object"}`).
 */
export const fromJsonSchema = (
  name: string,
  description: string | undefined,
  inputSchema: unknown
): JsonSchemaTool => {
  const jsonSchema = typeof inputSchema === "object" && inputSchema !== null && !Array.isArray(inputSchema)
    ? inputSchema
    : anyObject
  const base = Tool.make(name, {
    ...(description === undefined ? {} : { description }),
    success: Schema.Unknown
  })
  return base.setParameters(Arguments.annotations({ jsonSchema }))
}
