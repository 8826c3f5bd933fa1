/**
 * The tools of a model round (lazy MCP tool loading, docs/agent.md): the base tools
 * (`activate_tools`, `dispatch_agent` where sub-agents may be dispatched, `notify` for the `tic`
 * agent, `read_resource` where a server it may use has resources), the tools of the granted servers
 * (asked of the manager every round, so an activation in round N is offered from round N+1), and the
 * `config` group's when granted. The server list and the grants are kept for
 * the turn (`Kept`) until a built-in tool runs. Every definition goes through the same
 * `visible` filter (approval and interactive-only rules; until they exist, everything is visible).
 *
 * @since 0.1.0
 */
import type { McpServerEntry } from "@skald/domain"
import * as Effect from "effect/Effect"
import { McpManager, type QualifiedTool } from "../host/McpManager.js"
import { CONFIG_GROUP, Grants, offered, resolve, type ResolvedGrant, type Scope } from "./Grants.js"
import * as McpList from "./McpList.js"
import * as ActivateTools from "./tools/ActivateTools.js"
import * as ConfigTools from "./tools/ConfigTools.js"
import * as DispatchAgent from "./tools/DispatchAgent.js"
import * as Notify from "./tools/Notify.js"
import * as ReadResource from "./tools/ReadResource.js"
import type { Definition } from "./tools/ToolInput.js"

/** Whether a tool may be offered (approval, interactive-only); the default offers every tool. */
export type Visible = (name: string) => boolean

/** A round's tools. */
export interface Round {
  /** The built-in tools offered, by name. */
  readonly builtins: ReadonlyMap<string, Definition>
  /** The granted, connected servers' tools. */
  readonly mcp: ReadonlyArray<QualifiedTool>
  /** The registered servers and the scope's grants, resolved (for the list block and the answers). */
  readonly servers: ReadonlyArray<McpServerEntry.ServerSummary>
  readonly grants: ReadonlyArray<ResolvedGrant>
  /** The servers `read_resource` may read from this round (ReadResource.readable); empty: it is not offered. */
  readonly readable: ReadonlyArray<string>
}

/** What the round is for. */
export interface RoundInput {
  readonly scope: Scope
  /** Whether `dispatch_agent` is offered (not at the nesting bound). */
  readonly dispatch: boolean
  /** Whether `notify` is offered (to the `tic` agent only). */
  readonly notify?: boolean | undefined
  readonly visible?: Visible | undefined
  /**
   * Servers whose tools are offered without a grant (`"all"`: every connected server, the eager
   * behaviour before lazy loading); default none.
   */
  readonly always?: "all" | ReadonlyArray<string> | undefined
  /** The server list and the grants kept from an earlier round of the turn (`kept`); read anew when absent. */
  readonly kept?: Kept | undefined
}

/**
 * What a turn's rounds keep of the registry: the server list and the scope's grants, read (and
 * decoded) from SQLite once per turn instead of every round, and read again after `forget` — the
 * loop forgets them when a built-in tool runs (`activate_tools`, the config tools, `dispatch_agent`:
 * what changes them within a turn). The servers' tools are still asked of the manager every round.
 */
export interface Kept {
  listed?: { readonly servers: ReadonlyArray<McpServerEntry.ServerSummary>; readonly granted: ReadonlyArray<string> }
  /**
   * The last round made from `listed`, with the manager's `version` it was made at and what it
   * was asked for: the next round is the same object while none of them changed (the loop keeps
   * what it derives from a round — the provider's tools, the system prompt — by its identity).
   */
  last?: { readonly version: number; readonly input: RoundInput; readonly round: Round }
}

/** An empty `Kept`, for one turn (one frame). */
export const kept = (): Kept => ({})

/** Drops what `kept` holds: the next round reads the server list and the grants again. */
export const forget = (kept: Kept): void => {
  delete kept.listed
  delete kept.last
}

/** The built-in tool names (never an `mcp__…` name). */
export const BUILTIN_NAMES: ReadonlySet<string> = new Set([
  ActivateTools.NAME,
  DispatchAgent.NAME,
  Notify.NAME,
  ReadResource.NAME,
  ...ConfigTools.NAMES
])

/** Whether two rounds are asked for the same things (the scope is the turn's, as `kept` is). */
const sameInput = (a: RoundInput, b: RoundInput): boolean =>
  a.dispatch === b.dispatch && a.notify === b.notify && a.visible === b.visible && a.always === b.always

/**
 * The tools of one round: the last round's `Round` again (the same object) while the kept server
 * list and grants, the manager's connected servers and the input are what they were.
 */
export const round = (input: RoundInput) =>
  Effect.flatMap(McpManager, (manager) =>
    Effect.flatMap(manager.version, (version) => {
      const last = lastRound(input, version)
      if (last !== undefined) return Effect.succeed(last)
      return Effect.map(fresh(input), (made) => {
        if (input.kept !== undefined) input.kept.last = { version, input, round: made }
        return made
      })
    }))

/** The round `round` would give again for `input` at the manager's `version`, if it would (pure). */
export const lastRound = (input: RoundInput, version: number): Round | undefined => {
  const kept = input.kept
  const last = kept?.last
  return kept?.listed !== undefined && last !== undefined && last.version === version && sameInput(last.input, input)
    ? last.round
    : undefined
}

const fresh = Effect.fn("Catalog.round")(function*(input: RoundInput) {
  const manager = yield* McpManager
  const grants = yield* Grants
  const visible = input.visible ?? (() => true)
  let listed = input.kept?.listed
  if (listed === undefined) {
    listed = { servers: yield* manager.list, granted: yield* grants.list(input.scope) }
    if (input.kept !== undefined) input.kept.listed = listed
  }
  const servers = listed.servers
  const resolved = resolve(listed.granted, servers)
  const builtins = new Map<string, Definition>()
  const always = input.always ?? []
  const readable = ReadResource.readable(resolved, always, yield* manager.declaring("resources"))
  const base = [
    ActivateTools.definition,
    ...(input.dispatch ? [DispatchAgent.definition] : []),
    ...(input.notify === true ? [Notify.definition] : []),
    ...(readable.length > 0 ? [ReadResource.definition(readable)] : [])
  ]
  const config = resolved.some((g) => g.name === CONFIG_GROUP) ? ConfigTools.definitions : []
  for (const d of [...base, ...config]) if (visible(d.name)) builtins.set(d.name, d)
  const tools = always === "all" ? yield* manager.tools : yield* manager.toolsFor([...offered(resolved), ...always])
  const mcp = tools.filter((t) => visible(t.name))
  return { builtins, mcp, servers, grants: resolved, readable } satisfies Round as Round
})

/** The system prompt of a round: the `<!-- MCP_LIST -->` tag replaced (a prompt without it is kept). */
export const systemPrompt = Effect.fn("Catalog.systemPrompt")(function*(prompt: string, r: Round) {
  if (!McpList.hasTag(prompt)) return prompt
  const instructions = yield* (yield* McpManager).instructions
  return McpList.inject(prompt, { servers: r.servers, grants: r.grants, instructions })
})
