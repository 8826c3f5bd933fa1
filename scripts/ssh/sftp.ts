/**
 * SFTP as promises, with errors turned into messages that name the path and what went wrong
 * (ssh2 reports SFTP status codes: 2 no such file, 3 permission denied, 4 failure).
 */
import * as path from "node:path"
import type { FileEntryWithStats, SFTPWrapper, Stats } from "ssh2"
import { ToolError } from "./errors.js"

const P = path.posix

/** A remote path as SFTP takes it: `~` and `~/x` are relative to the login user's home. */
export const remotePath = (p: string): string => {
  if (p === "~") return "."
  if (p.startsWith("~/")) return p.slice(2) === "" ? "." : p.slice(2)
  return p
}

const describeError = (error: unknown, what: string): ToolError => {
  const code = (error as { code?: unknown }).code
  if (code === 2) return new ToolError(`${what}: no such file or directory`)
  if (code === 3) return new ToolError(`${what}: permission denied`)
  const message = error instanceof Error ? error.message : String(error)
  return new ToolError(`${what}: ${message}`)
}

export const isNoSuchFile = (error: unknown): boolean => (error as { code?: unknown }).code === 2

export class Sftp {
  constructor(readonly raw: SFTPWrapper) {}

  private call<A>(what: string, run: (cb: (error: Error | null | undefined, value?: A) => void) => void): Promise<A> {
    return new Promise<A>((resolve, reject) => {
      run((error, value) => (error ? reject(describeError(error, what)) : resolve(value as A)))
    })
  }

  /** Stats (following symlinks), or `undefined` when nothing is there. */
  async stat(p: string): Promise<Stats | undefined> {
    return new Promise<Stats | undefined>((resolve, reject) => {
      this.raw.stat(p, (error, stats) => {
        if (error) return isNoSuchFile(error) ? resolve(undefined) : reject(describeError(error, p))
        resolve(stats)
      })
    })
  }

  async lstat(p: string): Promise<Stats | undefined> {
    return new Promise<Stats | undefined>((resolve, reject) => {
      this.raw.lstat(p, (error, stats) => {
        if (error) return isNoSuchFile(error) ? resolve(undefined) : reject(describeError(error, p))
        resolve(stats)
      })
    })
  }

  realpath(p: string): Promise<string> {
    return this.call(p, (cb) => this.raw.realpath(p, cb))
  }

  readdir(p: string): Promise<Array<FileEntryWithStats>> {
    return this.call(p, (cb) => this.raw.readdir(p, cb))
  }

  readlink(p: string): Promise<string> {
    return this.call(p, (cb) => this.raw.readlink(p, cb))
  }

  readFile(p: string): Promise<Buffer> {
    return this.call(p, (cb) => this.raw.readFile(p, cb))
  }

  writeFile(p: string, data: Buffer | string, mode?: number): Promise<void> {
    return this.call(p, (cb) => this.raw.writeFile(p, data, mode === undefined ? {} : { mode }, (e) => cb(e)))
  }

  mkdir(p: string, mode?: number): Promise<void> {
    return this.call(p, (cb) => this.raw.mkdir(p, mode === undefined ? {} : { mode }, (e) => cb(e)))
  }

  chmod(p: string, mode: number): Promise<void> {
    return this.call(p, (cb) => this.raw.chmod(p, mode, (e) => cb(e)))
  }

  unlink(p: string): Promise<void> {
    return this.call(p, (cb) => this.raw.unlink(p, (e) => cb(e)))
  }

  /** Replaces `to` atomically when the server has `posix-rename@openssh.com`; false when it has not. */
  async posixRename(from: string, to: string): Promise<boolean> {
    try {
      await this.call<void>(to, (cb) => this.raw.ext_openssh_rename(from, to, (e) => cb(e)))
      return true
    } catch (error) {
      // ssh2 throws (synchronously, inside the promise executor) when the extension is missing.
      if (error instanceof Error && /does not support/i.test(error.message)) return false
      throw error
    }
  }

  fastPut(local: string, remote: string, mode?: number): Promise<void> {
    return this.call(remote, (cb) => this.raw.fastPut(local, remote, mode === undefined ? {} : { mode }, (e) => cb(e)))
  }

  fastGet(remote: string, local: string): Promise<void> {
    return this.call(remote, (cb) => this.raw.fastGet(remote, local, {}, (e) => cb(e)))
  }

  /** `mkdir -p`: creates every missing directory of `p`; fails when a part is not a directory. */
  async mkdirp(p: string): Promise<void> {
    const stats = await this.stat(p)
    if (stats !== undefined) {
      if (!stats.isDirectory()) throw new ToolError(`${p} exists and is not a directory`)
      return
    }
    const parent = P.dirname(p)
    if (parent !== p && parent !== "." && parent !== "/") await this.mkdirp(parent)
    try {
      await this.mkdir(p)
    } catch (error) {
      // Another writer may have made it meanwhile.
      const again = await this.stat(p)
      if (again === undefined || !again.isDirectory()) throw error
    }
  }
}
