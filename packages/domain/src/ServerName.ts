/**
 * Names of MCP servers as the host knows them.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** The longest server name accepted. */
export const maxLength = 64

const pattern = /^[A-Za-z0-9-](?:[A-Za-z0-9_-]*[A-Za-z0-9-])?$/

/** True when `name` is a valid server name: letters, digits, `-` and `_`, never `__`, not starting or ending with `_`, at most 64 characters. */
export const isValid = (name: string): boolean =>
  name.length > 0 && name.length <= maxLength && pattern.test(name) && !name.includes("__")

/** A server name: letters, digits, `-` and `_`, never `__`, not starting or ending with `_`, at most 64 characters. */
export const ServerName = Schema.String.pipe(
  Schema.filter((name) =>
    isValid(name) ||
    `invalid server name ${JSON.stringify(name)}: use 1-64 letters, digits, '-' and '_', ` +
      "never '__', and do not start or end with '_'"
  ),
  Schema.brand("@skald/domain/ServerName")
)

/** A validated server name. */
export type ServerName = typeof ServerName.Type

/** Brands a string as a server name, throwing on an invalid one (for literals in code and tests). */
export const make = (name: string): ServerName => ServerName.make(name)
