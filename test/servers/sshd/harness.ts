/**
 * Test harness for the SSH server (test/servers/ssh.test.ts): the throwaway sshd of setup.sh,
 * launching `scripts/ssh-server.ts` through our own client engine with a scripted elicitation
 * handler, calling tools, and reading sshd's own log (the ground truth for connection counts).
 *
 * Everything every launched server logged (stderr and notifications/message) and every tool
 * result is kept in `seen`, so one test can search all of it for secrets.
 */
import type { McpError } from "@skald/domain"
import { Elicitation, McpClient, McpLog, StdioTransport } from "@skald/mcp"
import { isAlive } from "@skald/server/host/ProcessAlive"
import { Effect } from "effect"
import type { Scope } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { tempDir } from "../../support.js"

export const here = path.dirname(fileURLToPath(import.meta.url))
export const repoRoot = path.resolve(here, "..", "..", "..")
export const serverScript = path.join(repoRoot, "scripts", "ssh-server.ts")
export const STATE_DIR = process.env.SKALD_SSHD_STATE ?? "/tmp/skald-sshd"

export interface SshdState {
  readonly host: string
  readonly port: number
  readonly state: string
  readonly pid: number
  readonly log: string
  readonly knownHosts: string
  readonly hostPublicKey: string
  readonly passwordUser: {
    readonly name: string
    readonly password: string
    readonly home: string
    readonly key: string
    readonly encryptedKey: string
    readonly keyPassphrase: string
  }
  readonly nopasswdUser: { readonly name: string; readonly home: string; readonly key: string }
}

const setupSh = path.join(here, "setup.sh")
/** What installs the suite's packages: the script .ci/run runs (root, apt-get). */
export const installScript = path.join(repoRoot, ".ci", "setup-sshd.sh")
/** The command a person runs to install them, from the repository root. */
export const installCommand = "bash .ci/setup-sshd.sh"

const run = (script: string, args: ReadonlyArray<string>, timeout: number, env: NodeJS.ProcessEnv = process.env) => {
  try {
    return execFileSync("/bin/bash", [script, ...args], {
      env: { ...env, SKALD_SSHD_STATE: STATE_DIR },
      stdio: ["ignore", "pipe", "pipe"],
      timeout,
      encoding: "utf8"
    })
  } catch (error) {
    const e = error as { status?: number | null; signal?: string | null; stderr?: string }
    const ended = e.signal
      ? `killed by ${e.signal}${e.signal === "SIGTERM" ? ` after ${timeout / 1000} s` : ""}`
      : `exit ${e.status ?? "?"}`
    throw new Error(
      `${path.relative(repoRoot, script)} ${args.join(" ")} failed (${ended}): ${e.stderr?.trim() || String(error)}`
    )
  }
}

/** What the machine has: the suite's missing packages, and whether apt-get could install them. */
export interface Probe {
  readonly missing: ReadonlyArray<string>
  readonly aptGet: boolean
}

/** Asks setup.sh (the one list of what the suite needs) what is missing, with this PATH and env. */
export const probe = (env: NodeJS.ProcessEnv = process.env): Probe =>
  JSON.parse(run(setupSh, ["--probe"], 30_000, env)) as Probe

/** What to do before setup.sh can run. */
export type Plan =
  | { readonly _tag: "Ready" }
  | { readonly _tag: "Install"; readonly packages: ReadonlyArray<string> }
  | { readonly _tag: "Fail"; readonly message: string }

/**
 * The decision: root with everything → ready; root on Debian (apt-get) with something missing →
 * install it; otherwise fail, saying why and the exact command that fixes it. Never skip.
 */
export const plan = (uid: number, probed: Probe): Plan => {
  const missing = probed.missing.join(" ")
  const install = `${installCommand} (apt-get update, then apt-get install -y --no-install-recommends ${missing}, ` +
    `with a policy-rc.d so no sshd starts on :22)`
  if (uid !== 0) {
    return {
      _tag: "Fail",
      message: "The SSH tests need root: they create two users and a sudoers drop-in and start an sshd on 127.0.0.1. " +
        (probed.missing.length === 0
          ? "Run the tests as root."
          : `They also need ${missing}, not installed here: as root, run ${install}; or run the tests as root on Debian, which installs it.`)
    }
  }
  if (probed.missing.length === 0) return { _tag: "Ready" }
  if (probed.aptGet) return { _tag: "Install", packages: probed.missing }
  return {
    _tag: "Fail",
    message: `The SSH tests need ${missing}, not installed here, and there is no apt-get to install it with ` +
      `(the tests install it themselves only on Debian): install ${missing} with this system's package manager.`
  }
}

export interface SetupOptions {
  /** The user the tests run as (default: this process's). */
  readonly uid?: number
  /** The environment of the probe (default: this process's; a test gives a stub PATH). */
  readonly env?: NodeJS.ProcessEnv
}

/**
 * The test sshd, its users and their passwords are one resource for the whole machine (setup.sh
 * gives the users new passwords, teardown.sh stops the sshd), and vitest runs test files in
 * parallel forks: a file holds this lock from its setup to its teardown, so two files never use the
 * sshd at once (ssh.test.ts's passphrase and TTL tests failed when ssh-inbox.test.ts set up or tore
 * down the sshd under them). A lock whose holder is gone (a run killed midway) is taken over.
 */
const LOCK_DIR = `${STATE_DIR}.lock`
const LOCK_WAIT_MS = 400_000

const sleepSync = (millis: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, millis)

const lockHolder = (): number | undefined => {
  try {
    const pid = Number(fs.readFileSync(path.join(LOCK_DIR, "pid"), "utf8"))
    return pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

const acquireLock = () => {
  const deadline = Date.now() + LOCK_WAIT_MS
  while (true) {
    try {
      fs.mkdirSync(LOCK_DIR)
      fs.writeFileSync(path.join(LOCK_DIR, "pid"), String(process.pid))
      return
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    }
    const holder = lockHolder()
    if (holder === process.pid) return
    if (holder !== undefined && !isAlive(holder)) {
      fs.rmSync(LOCK_DIR, { recursive: true, force: true })
      continue
    }
    if (Date.now() > deadline) {
      throw new Error(
        `The test sshd is in use by process ${holder ?? "(unknown)"} (lock ${LOCK_DIR}) and was not released ` +
          `within ${LOCK_WAIT_MS / 1000} s: end that run, or remove ${LOCK_DIR} if nothing holds it.`
      )
    }
    sleepSync(250)
  }
}

const releaseLock = () => {
  if (lockHolder() === process.pid) fs.rmSync(LOCK_DIR, { recursive: true, force: true })
}

/**
 * Brings up the test sshd: installs its packages when root on Debian (the script .ci/run uses),
 * runs setup.sh and reads what it wrote. Throws — never skips — when it cannot, saying what to run.
 * Holds the sshd's lock (above) until `teardownSshd`.
 */
export const setupSshd = (options: SetupOptions = {}): SshdState => {
  const decided = plan(options.uid ?? process.getuid?.() ?? -1, probe(options.env))
  if (decided._tag === "Fail") throw new Error(decided.message)
  acquireLock()
  if (decided._tag === "Install") run(installScript, [], 300_000, options.env)
  run(setupSh, [], 120_000, options.env)
  return readState()
}

export const readState = (): SshdState =>
  JSON.parse(fs.readFileSync(path.join(STATE_DIR, "state.json"), "utf8")) as SshdState

export const teardownSshd = (): void => {
  try {
    run(path.join(here, "teardown.sh"), [], 60_000)
  } finally {
    releaseLock()
  }
}

// --- what everything said -----------------------------------------------------------------------

/** Every log line and tool result text of every server launched here. */
export const seen: Array<string> = []
/** The tags of those log lines (`stderr`, `info`, … — both channels must have been heard). */
export const seenTags = new Set<string>()

// --- a scripted elicitation handler -------------------------------------------------------------

/** The user's answer to one question: a value to give, or a refusal. */
export type Reply = { readonly value: string } | "decline" | "cancel"

/** What the handler was asked: the request and which secret it looked like. */
export interface Asked {
  readonly request: Elicitation.Request
  readonly kind: "login" | "sudo" | "passphrase"
}

const kindOf = (message: string): Asked["kind"] =>
  /passphrase/i.test(message) ? "passphrase" : /sudo/i.test(message) ? "sudo" : "login"

/**
 * A handler answering each question with `reply(asked)`. Form requests get `{<field>: value}`;
 * URL requests are answered the way a person would: the page is opened (GET), the form posted,
 * then `accept` is returned.
 */
export const secretHandler = (url: boolean) => {
  const asked: Array<Asked> = []
  let reply: (asked: Asked) => Reply = () => "decline"
  const handler: Elicitation.Handler = {
    url,
    elicit: (request) =>
      Effect.suspend((): Effect.Effect<Elicitation.Response> => {
        const entry = { request, kind: kindOf(request.message) }
        asked.push(entry)
        const r = reply(entry)
        if (r === "decline" || r === "cancel") return Effect.succeed({ action: r })
        if (request._tag === "Form") {
          const field = request.fields[0]?.name ?? "password"
          return Effect.succeed({ action: "accept" as const, content: { [field]: r.value } })
        }
        return Effect.promise(() => submitPage(request.url, r.value)).pipe(Effect.as({ action: "accept" as const }))
      })
  }
  return {
    handler,
    asked,
    /** Forgets what was asked and answers with `next` from now on. */
    reset: (next: (asked: Asked) => Reply) => {
      asked.length = 0
      reply = next
    }
  }
}

/** Opens a one-time page and posts `value` into its (only) field; returns the page's HTML. */
export const submitPage = async (url: string, value: string): Promise<string> => {
  const page = await fetch(url)
  const html = await page.text()
  if (page.status !== 200) throw new Error(`GET ${url} answered ${page.status}`)
  const field = /<input[^>]*name="([^"]+)"/.exec(html)?.[1]
  if (field === undefined) throw new Error("the page has no input field")
  const posted = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ [field]: value }).toString()
  })
  if (posted.status !== 200) throw new Error(`POST answered ${posted.status}`)
  await posted.text()
  return html
}

// --- launching the server -----------------------------------------------------------------------

export interface Launched {
  readonly client: McpClient.Service
  /** The server's private temp dir: HOME, secrets/, known_hosts. */
  readonly dir: string
  readonly aliasesFile: string
  readonly knownHostsFile: string
  /** This server's log lines (stderr and notifications/message), as text. */
  readonly logs: Array<McpLog.McpLogLine>
}

export interface LaunchOptions {
  readonly env?: Readonly<Record<string, string>>
  readonly handler?: Elicitation.Handler
  /** The known_hosts file's content (default: setup.sh's, i.e. the sshd's real key). */
  readonly knownHosts?: string
}

/** Starts `scripts/ssh-server.ts` in a fresh HOME with its own secrets dir and known_hosts. */
export const launch = (
  sshd: SshdState,
  options: LaunchOptions = {}
): Effect.Effect<Launched, McpError.McpError, Scope.Scope> =>
  Effect.gen(function*() {
    const dir = yield* tempDir("ssh-test")
    const home = path.join(dir, "home")
    fs.mkdirSync(home)
    const knownHostsFile = path.join(dir, "known_hosts")
    fs.writeFileSync(knownHostsFile, options.knownHosts ?? fs.readFileSync(sshd.knownHosts, "utf8"), { mode: 0o600 })
    const secretsDir = path.join(dir, "secrets")
    const logs: Array<McpLog.McpLogLine> = []
    const sink: McpLog.Sink = {
      emit: (line) =>
        Effect.sync(() => {
          logs.push(line)
          seen.push(line.text)
          seenTags.add(line.tag)
        })
    }
    let connecting = StdioTransport.client({
      server: "ssh",
      command: process.execPath,
      args: ["--import", "tsx", serverScript],
      cwd: repoRoot,
      env: {
        HOME: home,
        SKALD_SECRETS_DIR: secretsDir,
        SSH_MCP_KNOWN_HOSTS: knownHostsFile,
        SSH_AUTH_SOCK: "",
        SSH_MCP_KEY_PASSPHRASE: "",
        ...options.env
      },
      stdinGrace: "3 seconds",
      termGrace: "1 second"
    })
    if (options.handler !== undefined) {
      connecting = Effect.provideService(connecting, Elicitation.ElicitationHandler, options.handler)
    }
    const client = yield* Effect.provideService(connecting, McpLog.McpLogSink, sink)
    return { client, dir, aliasesFile: path.join(secretsDir, "ssh_aliases.json"), knownHostsFile, logs }
  })

// --- calling tools ------------------------------------------------------------------------------

export interface Called {
  readonly text: string
  readonly isError: boolean
  readonly structured: Record<string, unknown> | undefined
}

export const call = (client: McpClient.Service, name: string, args: Record<string, unknown> = {}) =>
  client.callTool(name, args, { timeout: "90 seconds" }).pipe(
    Effect.map((outcome): Called => {
      const wire = outcome.wire
      const content = Array.isArray(wire.content) ? (wire.content as Array<{ type?: string; text?: string }>) : []
      const text = content.filter((c) => c.type === "text").map((c) => c.text ?? "").join("\n")
      seen.push(JSON.stringify(wire))
      return {
        text,
        isError: wire.isError === true,
        structured: typeof wire.structuredContent === "object" && wire.structuredContent !== null
          ? (wire.structuredContent as Record<string, unknown>)
          : undefined
      }
    })
  )

// --- sshd's own record --------------------------------------------------------------------------

/** How far sshd's log has got (a mark for `acceptedPorts`). */
export const logMark = (sshd: SshdState): number => fs.statSync(sshd.log).size

/** The client ports of the logins sshd accepted for `user` (one per SSH connection), after a mark. */
export const acceptedPorts = (sshd: SshdState, user: string, since = 0): Array<number> =>
  [
    ...fs.readFileSync(sshd.log).subarray(since).toString("utf8").matchAll(
      new RegExp(
        `Accepted (?:publickey|password|keyboard-interactive/pam) for ${user} from 127\\.0\\.0\\.1 port (\\d+)`,
        "g"
      )
    )
  ]
    .map((m) => Number(m[1]))

/** The client ports of the connections of `user` that sshd saw end. */
export const disconnectedPorts = (sshd: SshdState, user: string): Array<number> =>
  [
    ...fs.readFileSync(sshd.log, "utf8").matchAll(
      new RegExp(`Disconnected from user ${user} 127\\.0\\.0\\.1 port (\\d+)`, "g")
    )
  ]
    .map((m) => Number(m[1]))

/** The client port in `$SSH_CONNECTION` ("client-ip client-port server-ip server-port"). */
export const clientPort = (sshConnection: string): number => Number(sshConnection.trim().split(/\s+/)[1])
