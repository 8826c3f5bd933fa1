/**
 * One SSH connection per alias, reused by every tool call. Eviction is lazy: each use first
 * closes the connections idle for longer than the TTL (`SSH_MCP_POOL_TTL`), and a light sweep
 * (every TTL, never keeping the process alive) does the same when no call comes. A connection in
 * use is never evicted; one that dropped is forgotten and the next use opens a new one. Calls
 * racing to open the same alias share one connection attempt.
 */
import type { Client } from "ssh2"
import type { Alias } from "./aliases.js"
import { connectionKey } from "./aliases.js"
import type { Config } from "./config.js"
import * as Connect from "./connect.js"
import { ToolError } from "./errors.js"
import type { Log } from "./log.js"
import type { CallContext, Secrets } from "./secrets.js"
import { Sftp } from "./sftp.js"

/** Opening a channel failed because the connection is gone: the pool retries once on a new one. */
export class StaleConnection extends ToolError {}

/** Maps ssh2's "the connection is gone" errors to `StaleConnection`. */
export const channelError = (alias: string, what: string, error: Error): ToolError =>
  /not connected|no response from server|connection lost/i.test(error.message)
    ? new StaleConnection(`alias ${alias}: the connection was lost (${what})`)
    : new ToolError(`alias ${alias}: ${what} failed: ${error.message}`)

export interface Connection {
  /** Counts connections opened by this process (1, 2, …): it names them in log lines. */
  readonly id: number
  readonly alias: string
  readonly client: Client
  /** The alias as it was when connecting; a changed alias gets a new connection. */
  readonly key: string
  readonly openedAt: number
  lastUsed: number
  busy: number
  closed: boolean
  sftp: Promise<Sftp> | undefined
}

export class Pool {
  private readonly connections = new Map<string, Connection>()
  private readonly opening = new Map<string, Promise<Connection>>()
  private nextId = 1
  private readonly sweeper: NodeJS.Timeout | undefined

  constructor(
    private readonly config: Config,
    private readonly secrets: Secrets,
    private readonly log: Log,
    private readonly now: () => number = Date.now
  ) {
    if (config.poolTtlMs > 0) {
      this.sweeper = setInterval(() => this.evictIdle(), Math.max(1000, config.poolTtlMs))
      this.sweeper.unref()
    }
  }

  /** Runs `use` with the alias's connection (opened when needed), keeping it from eviction meanwhile. */
  async use<A>(
    aliasName: string,
    alias: Alias,
    ctx: CallContext,
    use: (connection: Connection) => Promise<A>
  ): Promise<A> {
    this.evictIdle()
    for (let attempt = 1;; attempt++) {
      const connection = await this.acquire(aliasName, alias, ctx)
      const reused = connection.lastUsed !== connection.openedAt || connection.busy > 0
      connection.busy++
      try {
        return await use(connection)
      } catch (error) {
        // A pooled connection that died unnoticed (the host rebooted, a NAT forgot it): once, anew.
        if (error instanceof StaleConnection && reused && attempt === 1) {
          this.close(connection, "it no longer answers")
          continue
        }
        throw error
      } finally {
        connection.busy--
        connection.lastUsed = this.now()
        if (connection.busy === 0 && (this.config.poolTtlMs === 0 || this.connections.get(aliasName) !== connection)) {
          this.close(connection, this.config.poolTtlMs === 0 ? "the pool TTL is 0" : "the alias changed")
        }
      }
    }
  }

  /** The connection's SFTP session (one per connection, opened on first use). */
  sftp(connection: Connection): Promise<Sftp> {
    if (connection.sftp === undefined) {
      connection.sftp = new Promise<Sftp>((resolve, reject) => {
        connection.client.sftp((error, raw) => {
          if (error) {
            connection.sftp = undefined
            return reject(channelError(connection.alias, "starting SFTP", error))
          }
          raw.on("close", () => (connection.sftp = undefined))
          resolve(new Sftp(raw))
        })
      })
    }
    return connection.sftp
  }

  /** Closes the alias's connection (the alias was removed or changed). */
  closeAlias(aliasName: string, why: string): void {
    const connection = this.connections.get(aliasName)
    if (connection !== undefined) this.close(connection, why)
  }

  closeAll(why: string): void {
    if (this.sweeper !== undefined) clearInterval(this.sweeper)
    for (const connection of [...this.connections.values()]) this.close(connection, why)
  }

  /** What list_aliases shows: per alias, the pooled connection's id and idle time. */
  status(aliasName: string): { readonly id: number; readonly idleMs: number; readonly busy: boolean } | undefined {
    const connection = this.connections.get(aliasName)
    if (connection === undefined || connection.closed) return undefined
    return { id: connection.id, idleMs: this.now() - connection.lastUsed, busy: connection.busy > 0 }
  }

  evictIdle(): void {
    const now = this.now()
    for (const connection of [...this.connections.values()]) {
      if (connection.busy === 0 && now - connection.lastUsed >= this.config.poolTtlMs) {
        this.close(
          connection,
          `idle for ${Math.round((now - connection.lastUsed) / 1000)} s (SSH_MCP_POOL_TTL ${
            this.config.poolTtlMs / 1000
          } s)`
        )
      }
    }
  }

  private async acquire(aliasName: string, alias: Alias, ctx: CallContext): Promise<Connection> {
    const key = connectionKey(alias)
    const current = this.connections.get(aliasName)
    if (current !== undefined && !current.closed) {
      if (current.key === key) return current
      if (current.busy === 0) this.close(current, "the alias changed")
    }
    const pending = this.opening.get(aliasName)
    if (pending !== undefined) return pending
    const opening = this.open(aliasName, alias, key, ctx)
    this.opening.set(aliasName, opening)
    try {
      return await opening
    } finally {
      this.opening.delete(aliasName)
    }
  }

  private async open(aliasName: string, alias: Alias, key: string, ctx: CallContext): Promise<Connection> {
    const { client, hostKey } = await Connect.open(aliasName, alias, {
      config: this.config,
      secrets: this.secrets,
      log: this.log,
      ctx
    })
    const openedAt = this.now()
    const connection: Connection = {
      id: this.nextId++,
      alias: aliasName,
      client,
      key,
      openedAt,
      lastUsed: openedAt,
      busy: 0,
      closed: false,
      sftp: undefined
    }
    client.on("error", (error: Error) => {
      this.log.warn(`alias ${aliasName}: connection #${connection.id} failed: ${error.message}`)
    })
    client.on("close", () => {
      if (!connection.closed) this.log.info(`alias ${aliasName}: connection #${connection.id} closed by the other side`)
      connection.closed = true
      if (this.connections.get(aliasName) === connection) this.connections.delete(aliasName)
    })
    this.connections.set(aliasName, connection)
    this.log.info(`alias ${aliasName}: connected (connection #${connection.id}, host key ${hostKey})`)
    return connection
  }

  private close(connection: Connection, why: string): void {
    if (this.connections.get(connection.alias) === connection) this.connections.delete(connection.alias)
    if (connection.closed) return
    connection.closed = true
    this.log.info(`alias ${connection.alias}: closing connection #${connection.id}: ${why}`)
    connection.client.end()
  }
}
