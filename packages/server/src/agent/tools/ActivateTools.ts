/**
 * `activate_tools(groups)` (lazy MCP tool loading, docs/agent.md): grants tool groups — MCP server
 * names or the reserved `config` — to the current scope (a root agent's session, a sub-agent's
 * stack frame). The tools are offered from the next model round. Unknown names are reported with
 * the groups that exist; the answer says what was activated and in which scope.
 *
 * @since 0.1.0
 */
import type { McpServerEntry } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { CONFIG_GROUP, describeScope, Grants, type Scope } from "../Grants.js"
import { decode, type Definition } from "./ToolInput.js"

/** The tool's name. */
export const NAME = "activate_tools"

/** Its definition. */
export const definition: Definition = {
  name: NAME,
  description: "Load the tools of MCP servers (names from the MCP servers list) or of the \"config\" group. " +
    "They can be called from your next step.",
  inputSchema: {
    type: "object",
    properties: { groups: { type: "array", items: { type: "string" }, minItems: 1 } },
    required: ["groups"],
    additionalProperties: false
  }
}

const Arguments = Schema.Struct({ groups: Schema.NonEmptyArray(Schema.String) })

/** What the call did. */
export interface Activated {
  readonly activated: ReadonlyArray<string>
  readonly alreadyActive: ReadonlyArray<string>
  readonly unknown: ReadonlyArray<string>
  /** The groups that exist, when some were unknown. */
  readonly available: ReadonlyArray<string>
  /** `session` or `stack <id>`. */
  readonly scope: string
}

/** The answer the model reads. */
export const answer = (a: Activated): string => {
  const parts: Array<string> = []
  if (a.activated.length > 0) {
    parts.push(
      `Activated ${a.activated.join(", ")} (scope: ${a.scope}); their tools are available from your next step.`
    )
  }
  if (a.alreadyActive.length > 0) parts.push(`Already active: ${a.alreadyActive.join(", ")}.`)
  if (a.unknown.length > 0) {
    parts.push(`Unknown group(s): ${a.unknown.join(", ")}. Available groups: ${a.available.join(", ")}.`)
  }
  return parts.join(" ")
}

/**
 * Runs a call: `servers` are the registered ones (an enabled or disabled server can be granted;
 * a disabled one offers nothing until enabled).
 */
export const run = Effect.fn("activate_tools")(function*(
  scope: Scope,
  args: unknown,
  servers: ReadonlyArray<McpServerEntry.ServerSummary>
) {
  const { groups } = yield* decode(NAME, Arguments, args)
  const known = new Set([...servers.map((s) => s.name as string), CONFIG_GROUP])
  const wanted = [...new Set(groups)]
  const unknown = wanted.filter((g) => !known.has(g))
  const valid = wanted.filter((g) => known.has(g))
  const added = new Set(valid.length === 0 ? [] : yield* (yield* Grants).activate(scope, valid))
  return {
    activated: valid.filter((g) => added.has(g)),
    alreadyActive: valid.filter((g) => !added.has(g)),
    unknown,
    available: unknown.length === 0 ? [] : [...known].sort(),
    scope: describeScope(scope)
  } satisfies Activated as Activated
})
