/**
 * Running commands: one exec channel per command, never a pty (so a password written to sudo
 * can't be echoed back), output capped per stream, a timeout, and the call's cancellation.
 *
 * sudo (the alias's `sudo.method`):
 * - `nopasswd`: `sudo -n` — never prompts; when sudo wants a password it fails at once and the
 *   result says so.
 * - `prompt`: `sudo -S` with a one-off random prompt string (`-p <marker>`) that sudo writes to
 *   stderr only when it actually wants the password. Only then is the password taken from the
 *   RAM cache or asked for, written to stdin, and stdin closed. A second prompt means the
 *   password was wrong: it is forgotten and the call fails with a clear message. The command
 *   itself runs under `sh -c` after sudo has printed a second marker, so the password never
 *   reaches the command's stdin (even when a NOPASSWD rule makes sudo skip the prompt) and both
 *   markers are removed from the output.
 * - `none`: sudo is refused.
 */
import { randomBytes } from "node:crypto"
import type { ClientChannel } from "ssh2"
import type { Alias } from "./aliases.js"
import { ToolError } from "./errors.js"
import type { Log } from "./log.js"
import { channelError, type Connection } from "./pool.js"
import type { CallContext, Secrets } from "./secrets.js"

/** How long a killed command's channel may take to close before the result is given anyway. */
const KILL_GRACE_MS = 1000

/**
 * Sends a signal to the remote command (sshd delivers it with killpg, so to its whole process
 * group). ssh2's `channel.signal` does nothing once our side has sent EOF — which we always do,
 * stdin being closed — so the request goes through its protocol object then (ssh2 1.17 internals,
 * pinned in package.json).
 */
const sendSignal = (channel: ClientChannel, name: string): void => {
  try {
    if (channel.writable) return void channel.signal(name)
    const internal = channel as unknown as {
      readonly outgoing?: { readonly id?: number; readonly state?: string }
      readonly _client?: { readonly _protocol?: { signal?: (id: number, name: string) => void } }
    }
    const id = internal.outgoing?.id
    const state = internal.outgoing?.state
    if ((state === "open" || state === "eof") && id !== undefined) internal._client?._protocol?.signal?.(id, name)
  } catch {
    // the channel is gone already
  }
}

/** Single-quotes a word for a POSIX shell. */
export const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`

/** Keeps the first and the last half of at most `max` bytes, and counts what it drops. */
export class Capture {
  private readonly headMax: number
  private readonly tailMax: number
  private readonly head: Array<Buffer> = []
  private headLength = 0
  private tail: Array<Buffer> = []
  private tailLength = 0
  total = 0

  constructor(max: number) {
    this.headMax = Math.ceil(max / 2)
    this.tailMax = max - this.headMax
  }

  push(chunk: Buffer): void {
    this.total += chunk.length
    let rest = chunk
    if (this.headLength < this.headMax) {
      const take = rest.subarray(0, this.headMax - this.headLength)
      this.head.push(take)
      this.headLength += take.length
      rest = rest.subarray(take.length)
    }
    if (rest.length === 0) return
    this.tail.push(rest)
    this.tailLength += rest.length
    while (this.tailLength > this.tailMax && this.tail.length > 0) {
      const first = this.tail[0]!
      const excess = this.tailLength - this.tailMax
      if (first.length <= excess) {
        this.tail.shift()
        this.tailLength -= first.length
      } else {
        this.tail[0] = first.subarray(excess)
        this.tailLength -= excess
      }
    }
  }

  get omitted(): number {
    return this.total - this.headLength - this.tailLength
  }

  text(): string {
    const head = Buffer.concat(this.head).toString("utf8")
    const tail = Buffer.concat(this.tail).toString("utf8")
    return this.omitted > 0 ? `${head}\n… [${this.omitted} bytes omitted] …\n${tail}` : head + tail
  }
}

export interface ExecOutcome {
  readonly exitCode: number | null
  readonly signal: string | null
  readonly stdout: string
  readonly stderr: string
  readonly stdoutOmitted: number
  readonly stderrOmitted: number
  readonly timedOut: boolean
}

interface Hooks {
  /** Sees stderr first; returns what is left to keep. Default: everything. */
  readonly stderr?: (chunk: Buffer, channel: ClientChannel) => Buffer
  /** Called when the channel is open. Default: close stdin at once. */
  readonly opened?: (channel: ClientChannel) => void
}

export interface RunOptions {
  readonly timeoutMs: number
  readonly maxBytes: number
  readonly ctx: CallContext
}

/** A timer that can be paused while a person is being asked something. */
export interface Timer {
  pause(): void
  resume(): void
}

/** Runs one command on a connection and collects its output. */
export const run = (
  connection: Connection,
  command: string,
  options: RunOptions,
  hooks: Hooks & { readonly timer?: (timer: Timer) => void } = {}
): Promise<ExecOutcome> =>
  new Promise<ExecOutcome>((resolve, reject) => {
    connection.client.exec(command, (error, channel) => {
      if (error) return reject(channelError(connection.alias, "opening a command channel", error))
      const stdout = new Capture(options.maxBytes)
      const stderr = new Capture(options.maxBytes)
      let exitCode: number | null = null
      let exitSignal: string | null = null
      let timedOut = false
      let cancelled = false
      let timer: NodeJS.Timeout | undefined
      let remaining = options.timeoutMs
      let armedAt = 0

      let settled = false
      let finish: () => void = () => {}
      // sshd delivers the SIGKILL to the command's process group, but it ends the session only when
      // every holder of its output is gone, and some may be out of reach (a process that left the
      // group, one running as root under sudo): after a short grace the result is given anyway.
      const kill = () => {
        sendSignal(channel, "KILL")
        channel.close()
        setTimeout(() => finish(), KILL_GRACE_MS).unref()
      }
      const arm = () => {
        armedAt = Date.now()
        timer = setTimeout(() => {
          timedOut = true
          kill()
        }, Math.max(0, remaining))
      }
      const disarm = () => {
        if (timer !== undefined) {
          clearTimeout(timer)
          timer = undefined
          remaining -= Date.now() - armedAt
        }
      }
      const onAbort = () => {
        cancelled = true
        kill()
      }
      arm()
      hooks.timer?.({ pause: disarm, resume: () => !settled && timer === undefined && arm() })
      if (options.ctx.signal.aborted) onAbort()
      else options.ctx.signal.addEventListener("abort", onAbort, { once: true })

      channel.on("data", (chunk: Buffer) => stdout.push(chunk))
      channel.stderr.on("data", (chunk: Buffer) => {
        const kept = hooks.stderr === undefined ? chunk : hooks.stderr(chunk, channel)
        if (kept.length > 0) stderr.push(kept)
      })
      channel.on("exit", (code: number | null, signal?: string) => {
        exitCode = code
        if (typeof signal === "string") exitSignal = signal
      })
      finish = () => {
        if (settled) return
        settled = true
        disarm()
        options.ctx.signal.removeEventListener("abort", onAbort)
        if (cancelled) {
          return reject(new ToolError(`the command on alias ${connection.alias} was cancelled (sent SIGKILL)`))
        }
        resolve({
          exitCode,
          signal: exitSignal,
          stdout: stdout.text(),
          stderr: stderr.text(),
          stdoutOmitted: stdout.omitted,
          stderrOmitted: stderr.omitted,
          timedOut
        })
      }
      channel.on("close", () => finish())
      if (hooks.opened !== undefined) hooks.opened(channel)
      else channel.end()
    })
  })

// --- sudo ---------------------------------------------------------------------------------------

export interface SudoOptions {
  readonly aliasName: string
  readonly alias: Alias
  /** Run as this user (`sudo -u`); root when unset. */
  readonly user: string | undefined
  readonly secrets: Secrets
  readonly log: Log
}

/** Runs `command` with sudo per the alias's method (see the top of this file). */
export const runSudo = async (
  connection: Connection,
  command: string,
  options: RunOptions,
  sudo: SudoOptions
): Promise<ExecOutcome> => {
  const method = sudo.alias.sudo.method
  if (method === "none") {
    throw new ToolError(
      `sudo is disabled for alias ${sudo.aliasName} (sudo method none); re-add the alias with sudo_method=prompt or nopasswd to allow it`
    )
  }
  const prompt = `SKALD-SUDO-PROMPT-${randomBytes(12).toString("hex")}:`
  const started = Buffer.from(`SKALD-SUDO-STARTED-${randomBytes(12).toString("hex")}\n`)
  const promptBytes = Buffer.from(prompt)
  const asUser = sudo.user === undefined ? "" : ` -u ${shellQuote(sudo.user)}`
  const wrapper = shellQuote(`printf '%s\\n' ${started.toString().trim()} >&2; exec /bin/sh -c "$1"`)
  const flags = method === "nopasswd" ? "-n" : `-S -p ${shellQuote(prompt)}`
  const full = `sudo ${flags}${asUser} -- /bin/sh -c ${wrapper} sh ${shellQuote(command)}`
  const login = `${sudo.alias.user} on alias ${sudo.aliasName}`

  let before = Buffer.alloc(0)
  let isStarted = false
  let prompts = 0
  let stdinClosed = false
  let failure: unknown
  let timer: Timer | undefined

  const closeStdin = (channel: ClientChannel) => {
    if (!stdinClosed) {
      stdinClosed = true
      channel.end()
    }
  }
  const answerPrompt = (channel: ClientChannel) => {
    const cached = sudo.secrets.peek("sudo", sudo.aliasName)
    const write = (password: string) => {
      if (!stdinClosed) channel.write(`${password}\n`)
      closeStdin(channel)
    }
    if (cached !== undefined) return write(cached)
    timer?.pause()
    sudo.secrets.obtain("sudo", sudo.aliasName, {
      title: `sudo password for ${login}`,
      message:
        `sudo on ${sudo.alias.host} asks for the password of ${sudo.alias.user} (alias ${sudo.aliasName}). Enter it to run the command with sudo.`,
      field: "password"
    }, options.ctx).then(write, (error: unknown) => {
      failure = error
      closeStdin(channel)
    }).finally(() => timer?.resume())
  }

  const outcome = await run(connection, full, options, {
    timer: (t) => (timer = t),
    // stdin stays open until sudo either prompts (the password goes there) or starts the command.
    opened: () => {},
    stderr: (chunk, channel) => {
      if (isStarted) return chunk
      before = Buffer.concat([before, chunk])
      for (let at = before.indexOf(promptBytes); at !== -1; at = before.indexOf(promptBytes)) {
        before = Buffer.concat([before.subarray(0, at), before.subarray(at + promptBytes.length)])
        prompts++
        if (prompts === 1) answerPrompt(channel)
        else closeStdin(channel) // a second prompt: the password was wrong
      }
      const at = before.indexOf(started)
      if (at === -1) return Buffer.alloc(0)
      isStarted = true
      closeStdin(channel)
      const kept = Buffer.concat([before.subarray(0, at), before.subarray(at + started.length)])
      before = Buffer.alloc(0)
      return kept
    }
  })

  if (failure !== undefined) throw failure
  if (isStarted) return outcome
  const said = before.toString("utf8").trim()
  if (outcome.timedOut) {
    throw new ToolError(`sudo on alias ${sudo.aliasName} did not finish before the timeout${said ? `: ${said}` : ""}`)
  }
  if (prompts >= 2 || /incorrect password attempt/.test(said)) {
    sudo.secrets.drop("sudo", sudo.aliasName)
    sudo.log.warn(`alias ${sudo.aliasName}: sudo rejected the password of ${sudo.alias.user}`)
    throw new ToolError(`sudo rejected the password for ${login}; it was forgotten and the next call asks again`)
  }
  if (method === "nopasswd" && /password is required/.test(said)) {
    throw new ToolError(
      `sudo -n on alias ${sudo.aliasName}: sudo wants a password for ${sudo.alias.user} (no NOPASSWD rule covers this). ` +
        `The alias's sudo method is nopasswd, which never prompts; re-add the alias with sudo_method=prompt to be asked for the password.`
    )
  }
  throw new ToolError(
    `sudo failed on alias ${sudo.aliasName} (exit ${outcome.exitCode ?? outcome.signal ?? "?"})${
      said ? `: ${said}` : ""
    }`
  )
}
