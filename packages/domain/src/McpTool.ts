/**
 * A tool as an MCP server describes it in `tools/list`.
 *
 * @since 0.1.0
 */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** A JSON object as it came off the wire. */
export type JsonObject = { readonly [key: string]: unknown }

/** Whether a tool may, must, or must not be called as a task (`execution.taskSupport`, 2025-11-25). */
export const TaskSupport = Schema.Literal("forbidden", "optional", "required")
export type TaskSupport = typeof TaskSupport.Type

/** Behaviour hints a server gives about a tool (`annotations`, 2025-06-18+). Untrusted: hints only. */
export const ToolAnnotations = Schema.Struct({
  title: Schema.optionalWith(Schema.String, { exact: true }),
  readOnlyHint: Schema.optionalWith(Schema.Boolean, { exact: true }),
  destructiveHint: Schema.optionalWith(Schema.Boolean, { exact: true }),
  idempotentHint: Schema.optionalWith(Schema.Boolean, { exact: true }),
  openWorldHint: Schema.optionalWith(Schema.Boolean, { exact: true })
})
export type ToolAnnotations = typeof ToolAnnotations.Type

const JsonSchemaObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** An MCP tool. `taskSupport` is read from `execution.taskSupport` and defaults to `forbidden`. */
export class McpTool extends Schema.Class<McpTool>("@skald/domain/McpTool")({
  name: Schema.String,
  title: Schema.optionalWith(Schema.String, { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  inputSchema: JsonSchemaObject,
  outputSchema: Schema.optionalWith(JsonSchemaObject, { exact: true }),
  annotations: Schema.optionalWith(ToolAnnotations, { exact: true }),
  taskSupport: TaskSupport
}) {}

const isObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)
const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

const decodeAnnotations = Schema.decodeUnknownOption(ToolAnnotations)

/**
 * The ONE mapping from a `tools/list` entry to an `McpTool`. Lenient where the spec allows a
 * server to be sloppy (a missing `inputSchema` becomes `{type: "object"}`, unknown fields are
 * ignored, malformed optional fields are dropped); `None` only when there is no usable name.
 */
export const fromWire = (wire: unknown): Option.Option<McpTool> => {
  if (!isObject(wire)) return Option.none()
  const name = str(wire.name)
  if (name === undefined || name.length === 0) return Option.none()
  const execution = isObject(wire.execution) ? wire.execution : undefined
  const ts = execution?.taskSupport
  const taskSupport: TaskSupport = ts === "optional" || ts === "required" ? ts : "forbidden"
  const title = str(wire.title) ?? (isObject(wire.annotations) ? str(wire.annotations.title) : undefined)
  const description = str(wire.description)
  const annotations = isObject(wire.annotations) ? Option.getOrUndefined(decodeAnnotations(wire.annotations)) : undefined
  return Option.some(
    new McpTool(
      {
        name,
        inputSchema: isObject(wire.inputSchema) ? wire.inputSchema : { type: "object" },
        taskSupport,
        ...(title !== undefined ? { title } : {}),
        ...(description !== undefined ? { description } : {}),
        ...(isObject(wire.outputSchema) ? { outputSchema: wire.outputSchema } : {}),
        ...(annotations !== undefined ? { annotations } : {})
      },
      { disableValidation: true }
    )
  )
}
