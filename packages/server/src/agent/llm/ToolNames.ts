/**
 * Tool names the model providers accept. Anthropic (and OpenAI) require a tool's name to match
 * `^[a-zA-Z0-9_-]{1,64}$`; our MCP tools are named `mcp__<server>__<tool>`, where the server name
 * fits (letters, digits, `-`, `_`, at most 64) but the tool's name is whatever the server chose:
 * it may hold dots, slashes or other characters, and with a long server name the whole can pass 64.
 *
 * `make(names)` builds a reversible mapping for one request's tools: a name that fits is sent as
 * it is (the common case: what the model sees is the real name); one that doesn't becomes its
 * characters with each disallowed one as `_`, cut to leave room for `_` and 8 hex digits of its
 * SHA-256 (`mcp__files__read.file` → `mcp__files__read_file_` and 8 hex digits). Distinct names always get
 * distinct provider names within the limit (a clash, however unlikely, takes the next hash), and
 * `fromProvider` gives each one back. The mapping depends only on the set of names, not their order.
 *
 * @since 0.1.0
 */
import * as Crypto from "node:crypto"

/** The longest name the providers accept. */
export const MAX_LENGTH = 64

/** A name the providers accept as it is. */
export const fits = (name: string): boolean => /^[a-zA-Z0-9_-]{1,64}$/.test(name)

/** A mapping between MCP tool names and the names sent to the provider. */
export interface ToolNameMap {
  /** The provider's name for an MCP name of the set (a name outside it: the encoding it would get alone). */
  readonly toProvider: (name: string) => string
  /** The MCP name of a provider name, or undefined for a name the mapping never gave. */
  readonly fromProvider: (name: string) => string | undefined
}

const hash = (name: string, attempt: number): string =>
  Crypto.createHash("sha256").update(attempt === 0 ? name : `${name}\u0000${attempt}`).digest("hex").slice(0, 8)

/** The encoded form of a name that does not fit (its `attempt`-th, for clashes). */
export const encode = (name: string, attempt = 0): string =>
  `${name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, MAX_LENGTH - 9)}_${hash(name, attempt)}`

/** The mapping for a set of MCP tool names. */
export const make = (names: Iterable<string>): ToolNameMap => {
  const all = [...new Set(names)]
  const toProvider = new Map<string, string>()
  const fromProvider = new Map<string, string>()
  for (const name of all) {
    if (fits(name)) {
      toProvider.set(name, name)
      fromProvider.set(name, name)
    }
  }
  for (const name of all.filter((n) => !fits(n)).sort()) {
    let attempt = 0
    let encoded = encode(name)
    while (fromProvider.has(encoded)) encoded = encode(name, ++attempt)
    toProvider.set(name, encoded)
    fromProvider.set(encoded, name)
  }
  return {
    toProvider: (name) => toProvider.get(name) ?? (fits(name) ? name : encode(name)),
    fromProvider: (name) => fromProvider.get(name)
  }
}
