/**
 * The `<!-- MCP_LIST -->` tag of an `AGENT.md` (lazy MCP tool loading, docs/agent.md): replaced,
 * when a request is built, by the two-section block of the seed — **Available** servers (with
 * their descriptions; the model loads one with `activate_tools`) and **Active** ones (their tools
 * are callable as `mcp__<name>__<tool>`), an active server's `instructions` (from `initialize`)
 * under it, bounded. A grant of a disabled or deleted server is listed as offering nothing. An
 * agent without the tag gets no block. `<!-- include: <file> -->` lines are resolved first (so an
 * included file may carry the tag). Everything here is pure over its inputs.
 *
 * @since 0.1.0
 */
import type { McpServerEntry } from "@skald/domain"
import * as Effect from "effect/Effect"
import { CONFIG_GROUP, type ResolvedGrant } from "./Grants.js"

/** The tag. */
export const TAG = "<!-- MCP_LIST -->"

/** A description in the Available list is cut to this many characters. */
export const DESCRIPTION_MAX = 60

/** A server's instructions under its Active line are cut to this many characters. */
export const INSTRUCTIONS_MAX = 600

const INCLUDE = /^<!--\s*include:\s*(\S+)\s*-->[ \t]*$/gm

/** How deep includes nest at most (an include of an include …); deeper ones are left as they are. */
export const INCLUDE_DEPTH = 4

/**
 * Replaces each `<!-- include: <file> -->` line with the file's text (read by `read`, which
 * resolves the path, e.g. against the agents folder), recursively up to `INCLUDE_DEPTH`. A file
 * that cannot be read becomes a one-line note, so the prompt says what is missing.
 */
export const resolveIncludes = <E, R>(
  text: string,
  read: (file: string) => Effect.Effect<string, E, R>,
  depth = 0
): Effect.Effect<string, never, R> => {
  if (depth >= INCLUDE_DEPTH) return Effect.succeed(text)
  const files = [...text.matchAll(INCLUDE)].map((m) => m[1]!)
  if (files.length === 0) return Effect.succeed(text)
  return Effect.gen(function*() {
    const texts = new Map<string, string>()
    for (const file of new Set(files)) {
      const content = yield* read(file).pipe(
        Effect.flatMap((t) => resolveIncludes(t, read, depth + 1)),
        Effect.orElseSucceed(() => `(the included file ${file} could not be read)`)
      )
      texts.set(file, content.replace(/\n$/, ""))
    }
    return text.replace(INCLUDE, (_, file: string) => texts.get(file)!)
  })
}

/** What the block is rendered from. */
export interface Input {
  /** Every registered server. */
  readonly servers: ReadonlyArray<McpServerEntry.ServerSummary>
  /** The current scope's grants, resolved against `servers` (Grants.resolve). */
  readonly grants: ReadonlyArray<ResolvedGrant>
  /** The connected servers' `instructions` (from `initialize`), by name. */
  readonly instructions?: ReadonlyMap<string, string> | undefined
}

const cut = (text: string, max: number): string => {
  const one = text.replace(/\s+/g, " ").trim()
  return one.length <= max ? one : `${one.slice(0, max - 1)}…`
}

const NOTE: Record<ResolvedGrant["state"], string> = {
  config: "",
  active: "",
  unavailable: " (not connected now: its tools come back when it connects)",
  disabled: " (disabled: offers no tools until it is enabled again)",
  "not registered": " (deleted: offers no tools unless it is registered again)"
}

/** The block (pure). Compact (a list, not a table): every listed server costs the model tokens each round. */
export const render = (input: Input): string => {
  const granted = new Set(input.grants.map((g) => g.name))
  const available = input.servers
    .filter((s) => s.enabled && !granted.has(s.name))
    .sort((a, b) => a.name.localeCompare(b.name))
  const active = input.grants.filter((g) => g.name !== CONFIG_GROUP)
  const lines = ["## MCP servers", ""]
  if (available.length === 0) {
    lines.push("**Available**: none.")
  } else {
    lines.push("**Available** — call `activate_tools([\"name\"])` to load tools:")
    for (const s of available) {
      const description = s.description ?? s.friendlyName
      lines.push(
        description === undefined ? `- \`${s.name}\`` : `- \`${s.name}\`: ${cut(description, DESCRIPTION_MAX)}`
      )
    }
  }
  lines.push("")
  if (active.length === 0) {
    lines.push("**Active**: none yet.")
  } else {
    lines.push("**Active** — tools callable as `mcp__<name>__<tool>`:")
    for (const g of active) {
      lines.push(`- \`${g.name}\`${NOTE[g.state]}`)
      const said = g.state === "active" ? input.instructions?.get(g.name) : undefined
      if (said !== undefined && said.trim().length > 0) {
        lines.push(`  Instructions: ${cut(said, INSTRUCTIONS_MAX)}`)
      }
    }
  }
  return lines.join("\n")
}

/** Whether the prompt asks for the block. */
export const hasTag = (prompt: string): boolean => prompt.includes(TAG)

/** The prompt with its tag(s) replaced by the block; a prompt without the tag is returned as is. */
export const inject = (prompt: string, input: Input): string =>
  hasTag(prompt) ? prompt.split(TAG).join(render(input)) : prompt
