/**
 * Secret names and `${NAME}` references, as pure rules: what a valid name is, the references in a
 * template, and the name a server's literal secret is moved to in the store
 * (`MCP_<SERVER>__<FIELD>`, exact and case-free; `SecretStore.ts` is the store itself).
 *
 * @since 0.1.0
 */
import type { ServerConfig } from "@skald/domain"

const namePattern = /^[A-Za-z_][A-Za-z0-9_]*$/
const referencePattern = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

/** True for a valid secret (and variable) name. */
export const isValidName = (name: string): boolean => namePattern.test(name)

/** True when `value` is exactly one reference, `${NAME}`. */
export const isReference = (value: string): boolean => /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(value)

/** Server names whose moved secrets keep a readable name: lower-case letters and digits, single `-` between. */
const plainServerName = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/**
 * The server name's part of a moved secret's name, exact and case-free (only `A-Z`, `0-9`, `_`),
 * never containing `__` nor starting or ending with `_`. A plain name (`google-calendar`) is
 * upper-cased with `-` as `_` and prefixed `MCP_`: `MCP_GOOGLE_CALENDAR`. Any other name is
 * prefixed `MCPX_` and spelled character by character: a lower-case letter upper-cased, a digit
 * 0-8 as itself, `9` as `99`, an upper-case letter `L` as `9L`, `-` as `90`, `_` as `91`
 * (`A-B` → `MCPX_9A909B`).
 */
export const serverSecretPrefix = (server: string): string => {
  if (plainServerName.test(server)) return `MCP_${server.toUpperCase().replace(/-/g, "_")}`
  let out = "MCPX_"
  for (const c of server) {
    if (/[a-z]/.test(c)) out += c.toUpperCase()
    else if (/[0-8]/.test(c)) out += c
    else if (c === "9") out += "99"
    else if (/[A-Z]/.test(c)) out += `9${c}`
    else if (c === "-") out += "90"
    else if (c === "_") out += "91"
    else out += `9Z${c.codePointAt(0)!.toString(16).toUpperCase()}Z` // never in a valid server name
  }
  return out
}

/**
 * The store name a literal secret of a server is moved to: `<server part>__<FIELD>` (see
 * `serverSecretPrefix`), the field being `API_KEY` (an HTTP server's api key) or the env key as
 * given. No two server names give the same name, even when the file system ignores case: the
 * server part holds no lower-case letter and no `__`, so the first `__` ends it.
 */
export const secretNameFor = (server: string, field: string): string => `${serverSecretPrefix(server)}__${field}`

/** The name the older rule (until issue 17) gave a moved secret: `<SERVER>_<FIELD>` upper-cased, `-` as `_`. */
export const legacySecretNameFor = (server: string, field: string): string => {
  const name = `${server}_${field}`.toUpperCase().replace(/[^A-Z0-9_]/g, "_")
  return /^[0-9]/.test(name) ? `_${name}` : name
}

/** The field of an HTTP server's api key, in moved secrets' names. */
export const API_KEY_FIELD = "API_KEY"

/** The field of an HTTP server's OAuth tokens and registered client (OAuthTokens.ts), in secret names. */
export const OAUTH_FIELD = "OAUTH"

/** The field of an HTTP server's pre-registered OAuth client secret (`--oauth-client-secret`), in secret names. */
export const OAUTH_CLIENT_SECRET_FIELD = "OAUTH_CLIENT_SECRET"

/** The field of an HTTP server's OAuth `private_key_jwt` key (`--oauth-private-key`), in secret names. */
export const OAUTH_PRIVATE_KEY_FIELD = "OAUTH_PRIVATE_KEY"

/**
 * Each field of a config that holds a secret reference: `API_KEY` → the api key,
 * `OAUTH_CLIENT_SECRET` → the OAuth client secret, `OAUTH_PRIVATE_KEY` → its `private_key_jwt`
 * key, an env key → its value.
 */
export const secretFields = (
  config: ServerConfig.ServerConfig
): ReadonlyArray<readonly [field: string, template: string]> =>
  config._tag === "http"
    ? [
      ...(config.apiKey === undefined ? [] : [[API_KEY_FIELD, config.apiKey] as const]),
      ...(config.oauth?.clientSecret === undefined
        ? []
        : [[OAUTH_CLIENT_SECRET_FIELD, config.oauth.clientSecret] as const]),
      ...(config.oauth?.privateKey === undefined
        ? []
        : [[OAUTH_PRIVATE_KEY_FIELD, config.oauth.privateKey] as const])
    ]
    : Object.entries(config.env)

/** The `${NAME}` references in a template, in order, without repeats. */
export const references = (template: string): ReadonlyArray<string> => [
  ...new Set(Array.from(template.matchAll(referencePattern), (m) => m[1]!))
]

/** The template with each `${NAME}` replaced by `value(NAME)`. */
export const substitute = (template: string, value: (name: string) => string): string =>
  template.replace(referencePattern, (_, name: string) => value(name))
