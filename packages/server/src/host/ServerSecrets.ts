/**
 * The secrets the host moved into the store for a server (a literal api key, a secret env value,
 * an imported token): named by `SecretNames.secretNameFor(server, field)`, so no two servers
 * share one. Here: moving the secrets an older rule named (`<SERVER>_<FIELD>` upper-cased, which
 * gave `a-b` and `A_B` the same name) to their new names when a home is opened, and removing the
 * secrets moved in for a server when it is removed, or replaced by an entry that no longer uses them.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { McpServerEntry, ServerConfig, type ServerName } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { CorruptRow, DatabaseError, InvalidSecretName, SecretStoreError } from "./HostError.js"
import { McpServerRepo } from "./McpServerRepo.js"
import * as Rows from "./Rows.js"
import {
  legacySecretNameFor,
  OAUTH_CLIENT_SECRET_FIELD,
  OAUTH_FIELD,
  OAUTH_PRIVATE_KEY_FIELD,
  references,
  secretFields,
  secretNameFor
} from "./SecretNames.js"
import { SecretStore } from "./SecretStore.js"

/** `entry` with the template of `field` replaced. */
const withField = (
  entry: McpServerEntry.McpServerEntry,
  field: string,
  template: string
): McpServerEntry.McpServerEntry => {
  const config = entry.config
  return McpServerEntry.McpServerEntry.make({
    ...entry,
    config: config._tag === "http"
      ? ServerConfig.HttpServerConfig.make(
        field === OAUTH_CLIENT_SECRET_FIELD && config.oauth !== undefined
          ? { ...config, oauth: { ...config.oauth, clientSecret: template } }
          : field === OAUTH_PRIVATE_KEY_FIELD && config.oauth !== undefined
          ? { ...config, oauth: { ...config.oauth, privateKey: template } }
          : { ...config, apiKey: template }
      )
      : ServerConfig.StdioServerConfig.make({ ...config, env: { ...config.env, [field]: template } })
  })
}

/** Every `${NAME}` of every server, with who refers to it. */
const referrers = (entries: ReadonlyArray<McpServerEntry.McpServerEntry>): Map<string, Array<string>> => {
  const out = new Map<string, Array<string>>()
  for (const entry of entries) {
    for (const [, template] of secretFields(entry.config)) {
      for (const name of references(template)) {
        const list = out.get(name) ?? []
        if (!list.includes(entry.name)) list.push(entry.name)
        out.set(name, list)
      }
    }
  }
  return out
}

/** The moved secrets `entry` refers to: each field whose template is exactly `${secretNameFor(server, field)}`. */
export const movedSecrets = (entry: McpServerEntry.McpServerEntry): ReadonlyArray<string> =>
  secretFields(entry.config).flatMap(([field, template]) => {
    const name = secretNameFor(entry.name, field)
    return template === `\${${name}}` ? [name] : []
  })

/** What a migration did. */
export interface Migration {
  /** Secrets moved to their new name: `[server, old name, new name]`. */
  readonly moved: ReadonlyArray<readonly [server: string, from: string, to: string]>
  /** Old names left as they are because several servers (or fields) refer to them. */
  readonly shared: ReadonlyArray<readonly [name: string, servers: ReadonlyArray<string>]>
}

/**
 * Moves the secrets the older naming rule created to their new names. A server's field qualifies
 * when its template is exactly `${<old name for that server and field>}` and the store holds that
 * name: the value is stored under the new name, the row is rewritten to refer to it (in a
 * transaction, only if it still refers to the old one), and the old file is removed once no row
 * refers to it. A name that more than one server (or field) refers to — two servers whose names
 * the old rule folded together, or a secret the user shared on purpose — is left as it is, with a
 * warning. Runs on every open; a home with nothing to move costs one read of the registry.
 */
export const migrate: Effect.Effect<
  Migration,
  DatabaseError | CorruptRow | SecretStoreError | InvalidSecretName,
  McpServerRepo | SecretStore | SqlClient.SqlClient
> = Effect
  .gen(function*() {
    const repo = yield* McpServerRepo
    const store = yield* SecretStore
    const sql = yield* SqlClient.SqlClient
    const entries = yield* repo.list
    const users = referrers(entries)
    const moved: Array<readonly [string, string, string]> = []
    const shared = new Map<string, ReadonlyArray<string>>()
    for (const entry of entries) {
      for (const [field, template] of secretFields(entry.config)) {
        const from = legacySecretNameFor(entry.name, field)
        const to = secretNameFor(entry.name, field)
        if (template !== `\${${from}}` || from === to) continue
        const value = yield* store.get(from)
        if (Option.isNone(value)) continue // a variable of the environment, or a secret not stored (yet)
        const fieldsUsing = entries.flatMap((e) =>
          secretFields(e.config).filter(([, t]) => references(t).includes(from)).map(() => e.name)
        )
        if (fieldsUsing.length > 1) {
          shared.set(from, users.get(from) ?? [entry.name])
          continue
        }
        yield* store.set(to, value.value)
        const rewritten = yield* sql.withTransaction(Effect.gen(function*() {
          const current = yield* repo.get(entry.name)
          if (Option.isNone(current)) return false
          const now = secretFields(current.value.config).find(([f]) => f === field)
          if (now === undefined || now[1] !== template) return false
          yield* repo.upsert(withField(current.value, field, `\${${to}}`))
          return true
        })).pipe(Rows.storage(`move the secret ${from} of MCP server '${entry.name}' to ${to}`))
        if (!rewritten) continue
        moved.push([entry.name, from, to])
        if (!(referrers(yield* repo.list).has(from))) yield* store.remove(from)
      }
    }
    for (const [server, from, to] of moved) {
      yield* Effect.logWarning(
        `moved the stored secret ${from} of MCP server '${server}' to ${to} (secrets moved in for a server are ` +
          `now named so that no two servers share one); anything else that refers to \${${from}} must now refer to \${${to}}`
      )
    }
    for (const [name, servers] of shared) {
      const who = servers.length > 1
        ? `MCP servers ${servers.map((s) => `'${s}'`).join(" and ")}`
        : `several settings of MCP server '${servers[0]}'`
      yield* Effect.logWarning(
        `the stored secret ${name} is used by ${who}; left as it is (the older naming rule gave the secrets of ` +
          "servers whose names differ only in case, '-' or '_' one name, so they may send each other's key). " +
          "Register each server again with its own key to give it a secret of its own."
      )
    }
    return { moved, shared: [...shared] }
  })
  .pipe(Effect.withSpan("ServerSecrets.migrate"))

/** Removes the moved secrets of `previous` (a replaced entry) that no row refers to any more. */
const prune = (previous: McpServerEntry.McpServerEntry) =>
  Effect.gen(function*() {
    const repo = yield* McpServerRepo
    const store = yield* SecretStore
    const remaining = referrers(yield* repo.list)
    const removed: Array<string> = []
    for (const secret of movedSecrets(previous)) {
      if (remaining.has(secret)) continue
      const gone = yield* store.remove(secret).pipe(
        Effect.catchAll((error) =>
          Effect.as(
            Effect.logWarning(`could not remove the secret ${secret} of '${previous.name}': ${error.message}`),
            false
          )
        )
      )
      if (gone) removed.push(secret)
    }
    return removed as ReadonlyArray<string>
  })

/**
 * Stores `entry` (inserting or replacing the row) and removes the secrets moved in for the entry
 * it replaced that it no longer refers to (a literal api key given up for a reference). Returns
 * their names.
 */
export const upsert = (
  entry: McpServerEntry.McpServerEntry
): Effect.Effect<ReadonlyArray<string>, DatabaseError | CorruptRow, McpServerRepo | SecretStore> =>
  Effect.gen(function*() {
    const repo = yield* McpServerRepo
    const previous = yield* repo.get(entry.name)
    yield* repo.upsert(entry)
    return Option.isNone(previous) ? [] : yield* prune(previous.value)
  }).pipe(Effect.withSpan("ServerSecrets.upsert", { attributes: { "mcp.server": entry.name } }))

/**
 * Deletes a server's registration and the secrets moved in for it (by the naming rule; a secret
 * another row still refers to is kept). References the user wrote to other names are never
 * touched; a secret that cannot be removed is a warning, not a failure (the row is gone). Returns the
 * removed secrets' names, or none when no such server is registered.
 */
export const unregister = (
  name: ServerName.ServerName
): Effect.Effect<Option.Option<ReadonlyArray<string>>, DatabaseError | CorruptRow, McpServerRepo | SecretStore> =>
  Effect.gen(function*() {
    const repo = yield* McpServerRepo
    const entry = yield* repo.get(name)
    if (Option.isNone(entry) || !(yield* repo.remove(name))) return Option.none()
    const removed = [...yield* prune(entry.value)]
    // Its OAuth tokens and registered client (OAuthTokens.ts) go with it.
    const oauth = secretNameFor(name, OAUTH_FIELD)
    const gone = yield* (yield* SecretStore).remove(oauth).pipe(
      Effect.catchAll((error) =>
        Effect.as(Effect.logWarning(`could not remove the secret ${oauth} of '${name}': ${error.message}`), false)
      )
    )
    if (gone) removed.push(oauth)
    return Option.some(removed as ReadonlyArray<string>)
  }).pipe(Effect.withSpan("ServerSecrets.unregister", { attributes: { "mcp.server": name } }))
