/**
 * Secrets asked for by elicitation (login passwords, key passphrases, sudo passwords) and the RAM
 * cache that keeps them for a while. Nothing here writes a secret anywhere: not to disk, not to a
 * log line, not into an error message. A secret is dropped when its TTL passes (checked on every
 * read) and whenever the remote side rejects it, so the next attempt asks again.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import type { RequestId } from "@modelcontextprotocol/sdk/types.js"
import { askSecret, ElicitationUnsupported } from "../lib/url-elicitation.js"
import type { SecretAnswer, SecretRequest } from "../lib/url-elicitation.js"
import { ToolError } from "./errors.js"
import type { Log } from "./log.js"

/** What a tool call carries: its cancellation and its request id (for the elicitation). */
export interface CallContext {
  readonly signal: AbortSignal
  readonly requestId: RequestId | undefined
}

export type SecretKind = "login" | "passphrase" | "sudo"

/** Values with a deadline, read lazily (an expired value is deleted when next looked at). */
export class SecretCache {
  private readonly values = new Map<string, { readonly value: string; readonly expires: number }>()

  constructor(private readonly now: () => number = Date.now) {}

  get(key: string): string | undefined {
    const entry = this.values.get(key)
    if (entry === undefined) return undefined
    if (entry.expires <= this.now()) {
      this.values.delete(key)
      return undefined
    }
    return entry.value
  }

  /** A TTL of 0 keeps nothing. */
  set(key: string, value: string, ttlMs: number): void {
    if (ttlMs > 0) this.values.set(key, { value, expires: this.now() + ttlMs })
  }

  delete(key: string): boolean {
    return this.values.delete(key)
  }

  deleteWhere(predicate: (key: string) => boolean): void {
    for (const key of [...this.values.keys()]) if (predicate(key)) this.values.delete(key)
  }

  /** The live values (for redaction). */
  live(): Array<string> {
    const now = this.now()
    const out: Array<string> = []
    for (const [key, entry] of this.values) {
      if (entry.expires <= now) this.values.delete(key)
      else out.push(entry.value)
    }
    return out
  }
}

export type Asker = (request: SecretRequest) => Promise<SecretAnswer>

export interface Prompt {
  readonly title: string
  readonly message: string
  readonly field: SecretRequest["field"]
}

export class Secrets {
  private readonly cache: SecretCache
  /** One question per secret at a time: concurrent calls needing the same secret share it. */
  private readonly asking = new Map<string, Promise<string>>()

  constructor(
    private readonly ask: Asker,
    private readonly ttls: { readonly login: number; readonly sudo: number },
    private readonly log: Log,
    now: () => number = Date.now,
    private readonly fixed: ReadonlyArray<string> = []
  ) {
    this.cache = new SecretCache(now)
  }

  /** Asks through the MCP client connected to `server` (URL mode or the form fallback). */
  static forServer(
    server: McpServer,
    ttls: { readonly login: number; readonly sudo: number },
    log: Log,
    fixed: ReadonlyArray<string>
  ): Secrets {
    return new Secrets((request) => askSecret(server, request), ttls, log, Date.now, fixed)
  }

  private ttl(kind: SecretKind): number {
    return kind === "sudo" ? this.ttls.sudo : this.ttls.login
  }

  /** The cached value, if any. */
  peek(kind: SecretKind, id: string): string | undefined {
    return this.cache.get(`${kind}:${id}`)
  }

  /** The cached value, or asks the user (and caches the answer). A refusal is a `ToolError`. */
  async obtain(kind: SecretKind, id: string, prompt: Prompt, ctx: CallContext): Promise<string> {
    const key = `${kind}:${id}`
    const cached = this.cache.get(key)
    if (cached !== undefined) return cached
    const inFlight = this.asking.get(key)
    if (inFlight !== undefined) return inFlight
    const asked = this.askUser(kind, id, prompt, ctx).then((value) => {
      this.cache.set(key, value, this.ttl(kind))
      return value
    })
    this.asking.set(key, asked)
    try {
      return await asked
    } finally {
      this.asking.delete(key)
    }
  }

  private async askUser(kind: SecretKind, id: string, prompt: Prompt, ctx: CallContext): Promise<string> {
    this.log.info(`asking the user for the ${describe(kind)} of ${id}`)
    let answer: SecretAnswer
    try {
      answer = await this.ask({
        ...prompt,
        signal: ctx.signal,
        ...(ctx.requestId !== undefined ? { relatedRequestId: ctx.requestId } : {})
      })
    } catch (error) {
      if (error instanceof ElicitationUnsupported) {
        throw new ToolError(
          `the ${
            describe(kind)
          } of ${id} is needed, but this MCP client cannot ask the user (it declared no elicitation)` +
            (kind === "passphrase" ? "; set SSH_MCP_KEY_PASSPHRASE or use an unencrypted key / ssh-agent" : "")
        )
      }
      throw new ToolError(
        `asking for the ${describe(kind)} of ${id} failed: ${error instanceof Error ? error.message : String(error)}`
      )
    }
    if (answer.action === "accept") {
      this.log.info(`the user answered the question for the ${describe(kind)} of ${id}`)
      return answer.value
    }
    const why = answer.action === "cancel" && answer.reason === "timeout"
      ? "the user did not answer in time"
      : answer.action === "cancel" && answer.reason === "aborted"
      ? "the call was cancelled"
      : `the user chose ${answer.action}`
    this.log.info(`no ${describe(kind)} for ${id}: ${why}`)
    throw new ToolError(`no ${describe(kind)} for ${id}: ${why}`)
  }

  /** Forgets a secret (it was rejected); true when one was cached. */
  drop(kind: SecretKind, id: string): boolean {
    const dropped = this.cache.delete(`${kind}:${id}`)
    if (dropped) this.log.info(`forgot the cached ${describe(kind)} of ${id}`)
    return dropped
  }

  /** Forgets every secret of an alias (it was removed or changed). */
  dropAlias(alias: string): void {
    this.cache.deleteWhere((key) => key === `login:${alias}` || key === `sudo:${alias}`)
  }

  /** Masks every secret held (cached, or given by the environment) in a text. */
  redact(text: string): string {
    let out = text
    for (const secret of [...this.cache.live(), ...this.fixed]) {
      if (secret.length >= 4 && out.includes(secret)) out = out.split(secret).join("[redacted]")
    }
    return out
  }
}

export const describe = (kind: SecretKind): string =>
  kind === "login" ? "login password" : kind === "passphrase" ? "key passphrase" : "sudo password"
