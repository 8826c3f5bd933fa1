/**
 * `dispatch_agent(agent, task)` (lazy MCP tool loading, docs/agent.md): runs the agent
 * `agents/<agent>/AGENT.md` on `task` in a new stack frame, whose grants start empty; the
 * sub-agent's final answer is the tool's result. Frames nest up to a bound (default 3). However
 * the frame ends — its answer, a failure, or a stop of its parent — its grants are deleted; the
 * parent's stay.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Crypto from "node:crypto"
import { Grants, type Scope, stackScope } from "../Grants.js"
import { decode, type Definition, ToolInputError } from "./ToolInput.js"

/** The tool's name. */
export const NAME = "dispatch_agent"

/** How deep frames nest by default (a root agent is depth 0). */
export const DEFAULT_MAX_DEPTH = 3

/** Its definition. */
export const definition: Definition = {
  name: NAME,
  description: "Run another agent (agents/<agent>/AGENT.md) on a task; its final answer is the result.",
  inputSchema: {
    type: "object",
    properties: { agent: { type: "string" }, task: { type: "string" } },
    required: ["agent", "task"],
    additionalProperties: false
  }
}

const Arguments = Schema.Struct({ agent: Schema.String, task: Schema.String })

/** Where a call is made from. */
export interface Caller {
  readonly scope: Scope
  /** 0 for a root agent, the parent's depth + 1 for a sub-agent. */
  readonly depth: number
}

/** What runs a frame: the turn loop, for the agent, its task, in its scope and depth. */
export type RunFrame<E, R> = (frame: {
  readonly agent: string
  readonly task: string
  readonly scope: Scope
  readonly depth: number
}) => Effect.Effect<string, E, R>

/**
 * Runs a call: a new frame one level below the caller (refused past `maxDepth`), removed with its
 * grants when `runFrame` ends, however it ends.
 */
export const run = <E, R>(
  caller: Caller,
  args: unknown,
  runFrame: RunFrame<E, R>,
  maxDepth: number = DEFAULT_MAX_DEPTH
) =>
  Effect.gen(function*() {
    const { agent, task } = yield* decode(NAME, Arguments, args)
    const depth = caller.depth + 1
    if (depth > maxDepth) {
      return yield* new ToolInputError({
        tool: NAME,
        reason: `sub-agents nest at most ${maxDepth} deep; do this task yourself or answer with what you have`
      })
    }
    const grants = yield* Grants
    const stack = Crypto.randomUUID()
    const scope = stackScope(caller.scope.session, stack)
    return yield* Effect.ensuring(
      runFrame({ agent, task, scope, depth }),
      grants.endFrame(stack).pipe(Effect.catchAll((error) => Effect.logError(error.message)))
    )
  }).pipe(Effect.withSpan("dispatch_agent"))
