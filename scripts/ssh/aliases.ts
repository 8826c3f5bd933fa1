/**
 * Aliases: named SSH targets in `<secrets dir>/ssh_aliases.json`, written atomically at 0600.
 * The file holds connection facts only — never a password, passphrase or key material: the
 * serializer writes an explicit list of fields, and unknown fields in a hand-edited file are
 * dropped (with a warning) on the next write.
 *
 * File format (version 1):
 * ```json
 * {"version": 1, "aliases": {"web": {"host": "10.0.0.5", "port": 22, "user": "deploy",
 *   "auth": "key", "key_path": "~/.ssh/id_ed25519", "sudo": {"method": "prompt"},
 *   "accept_new_host_key": false}}}
 * ```
 */
import { z } from "zod"
import { readJsonIfExists, writeJsonAtomic } from "../lib/atomic-write.js"
import { ToolError } from "./errors.js"
import type { Log } from "./log.js"

export const AUTH_METHODS = ["key", "password"] as const
export const SUDO_METHODS = ["prompt", "nopasswd", "none"] as const
export type AuthMethod = (typeof AUTH_METHODS)[number]
export type SudoMethod = (typeof SUDO_METHODS)[number]

export const ALIAS_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
/** A host name, IPv4 or IPv6 address: no spaces, commas, brackets or a leading dash. */
export const HOST = /^(?!-)[A-Za-z0-9._:%-]{1,253}$/
export const USER = /^(?!-)[A-Za-z0-9._][A-Za-z0-9._@-]{0,63}$/

export interface Alias {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly auth: AuthMethod
  /** Private key file (`~/` expanded) for `auth: key`; unset: ssh-agent and the default keys. */
  readonly key_path?: string | undefined
  readonly sudo: { readonly method: SudoMethod }
  /** Accept (and record in known_hosts) the key of a host not yet in known_hosts. */
  readonly accept_new_host_key: boolean
}

const StoredAlias = z.object({
  host: z.string().regex(HOST),
  port: z.number().int().min(1).max(65535).default(22),
  user: z.string().regex(USER),
  auth: z.enum(AUTH_METHODS).default("key"),
  key_path: z.string().min(1).optional(),
  sudo: z.object({ method: z.enum(SUDO_METHODS).default("prompt") }).default({ method: "prompt" }),
  accept_new_host_key: z.boolean().default(false)
})

const StoredFile = z.object({
  version: z.literal(1).default(1),
  aliases: z.record(z.string(), z.unknown()).default({})
})

/** Only these fields are ever written. */
const serialize = (alias: Alias) => ({
  host: alias.host,
  port: alias.port,
  user: alias.user,
  auth: alias.auth,
  ...(alias.key_path !== undefined ? { key_path: alias.key_path } : {}),
  sudo: { method: alias.sudo.method },
  accept_new_host_key: alias.accept_new_host_key
})

/** A stable description of what a connection depends on (a changed alias needs a new connection). */
export const connectionKey = (alias: Alias): string =>
  JSON.stringify([alias.host, alias.port, alias.user, alias.auth, alias.key_path ?? null, alias.accept_new_host_key])

export class AliasStore {
  /** Writes are serialized, so two concurrent add_alias calls never lose one another. */
  private queue: Promise<unknown> = Promise.resolve()

  constructor(readonly file: string, private readonly log: Log) {}

  async all(): Promise<Map<string, Alias>> {
    let raw: unknown
    try {
      raw = await readJsonIfExists(this.file)
    } catch (error) {
      throw new ToolError(
        `cannot read the aliases file ${this.file}: ${error instanceof Error ? error.message : String(error)}`
      )
    }
    const out = new Map<string, Alias>()
    if (raw === undefined) return out
    const file = StoredFile.safeParse(raw)
    if (!file.success) throw new ToolError(`the aliases file ${this.file} is not an aliases file (version 1)`)
    for (const [name, value] of Object.entries(file.data.aliases)) {
      const parsed = StoredAlias.safeParse(value)
      if (!ALIAS_NAME.test(name) || !parsed.success) {
        this.log.warn(`aliases file: skipping the invalid alias ${JSON.stringify(name)}`)
        continue
      }
      const extra = typeof value === "object" && value !== null
        ? Object.keys(value).filter((k) => !(k in StoredAlias.shape))
        : []
      if (extra.length > 0) {
        // Field names only: a hand-edited value might be a secret.
        this.log.warn(
          `aliases file: alias ${name} has unknown fields (${
            extra.join(", ")
          }); they are ignored and dropped on the next write`
        )
      }
      const a = parsed.data
      out.set(name, {
        host: a.host,
        port: a.port,
        user: a.user,
        auth: a.auth,
        ...(a.key_path !== undefined ? { key_path: a.key_path } : {}),
        sudo: { method: a.sudo.method },
        accept_new_host_key: a.accept_new_host_key
      })
    }
    return out
  }

  async get(name: string): Promise<Alias> {
    const alias = (await this.all()).get(name)
    if (alias === undefined) {
      throw new ToolError(
        `no alias named ${JSON.stringify(name)}: add it with add_alias (list_aliases shows the known ones)`
      )
    }
    return alias
  }

  /** Adds or replaces an alias; true when it replaced one. */
  put(name: string, alias: Alias): Promise<boolean> {
    return this.update((aliases) => {
      const existed = aliases.has(name)
      aliases.set(name, alias)
      return existed
    })
  }

  /** Removes an alias; false when there was none. */
  remove(name: string): Promise<boolean> {
    return this.update((aliases) => aliases.delete(name))
  }

  private update<A>(change: (aliases: Map<string, Alias>) => A): Promise<A> {
    const run = this.queue.then(async () => {
      const aliases = await this.all()
      const result = change(aliases)
      const sorted = [...aliases.entries()].sort(([a], [b]) => a.localeCompare(b))
      await writeJsonAtomic(this.file, {
        version: 1,
        aliases: Object.fromEntries(sorted.map(([n, a]) => [n, serialize(a)]))
      })
      return result
    })
    this.queue = run.catch(() => {})
    return run
  }
}
