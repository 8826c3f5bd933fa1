/**
 * Opening one SSH connection for an alias: login credentials (asked for before connecting, so
 * no person is ever raced against the handshake timeout), the host key check against
 * known_hosts, and errors a user can act on.
 *
 * - `auth: password`: the login password from the RAM cache or elicitation; only the password
 *   (and keyboard-interactive answered with it) is offered — no agent or key probing. Rejected:
 *   the cached password is dropped, so the next attempt asks again.
 * - `auth: key`: `key_path` alone when set; otherwise the ssh-agent (`SSH_AUTH_SOCK`) and the
 *   default keys. An encrypted key's passphrase is asked for lazily — only when the key file
 *   turns out to be encrypted — unless `SSH_MCP_KEY_PASSPHRASE` is set. Without `key_path`, an
 *   encrypted default key is used only when nothing else (agent, unencrypted key) is available
 *   or its passphrase is already known. A wrong passphrase is dropped the same way.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import ssh2 from "ssh2"
import type { AnyAuthMethod, AuthenticationType, ConnectConfig, ParsedKey, Prompt as KbdPrompt } from "ssh2"
import type { Alias } from "./aliases.js"
import type { Config } from "./config.js"
import { ToolError } from "./errors.js"
import * as KnownHosts from "./knownHosts.js"
import type { Log } from "./log.js"
import type { CallContext, Secrets } from "./secrets.js"

// ssh2 is CommonJS: Node's ESM loader sees only its default export.
const { Client, utils } = ssh2
type Client = InstanceType<typeof Client>

export const expandHome = (p: string): string =>
  p === "~" ? os.homedir() : p.startsWith("~/") ? path.join(os.homedir(), p.slice(2)) : path.resolve(p)

const target = (alias: Alias) => `${alias.user}@${alias.host}:${alias.port}`

interface Credentials {
  readonly methods: ReadonlyArray<AnyAuthMethod>
  /** What to forget when the server rejects these credentials. */
  readonly onRejected: () => void
  readonly describe: string
}

const ENCRYPTED = /no passphrase given/i

/** Reads and parses a private key, asking for its passphrase when it is encrypted. */
const loadKey = async (
  file: string,
  ask: boolean,
  deps: { readonly config: Config; readonly secrets: Secrets; readonly ctx: CallContext; readonly aliasName: string }
): Promise<ParsedKey | "needs-passphrase"> => {
  let data: Buffer
  try {
    data = await fs.readFile(file)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new ToolError(
      `cannot read the key ${file}: ${
        code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : String(code)
      }`
    )
  }
  const plain = utils.parseKey(data)
  if (!(plain instanceof Error)) return Array.isArray(plain) ? plain[0]! : plain
  if (!ENCRYPTED.test(plain.message)) throw new ToolError(`cannot use the key ${file}: ${plain.message}`)

  const fromEnv = deps.config.keyPassphrase
  let passphrase = fromEnv ?? deps.secrets.peek("passphrase", file)
  if (passphrase === undefined) {
    if (!ask) return "needs-passphrase"
    passphrase = await deps.secrets.obtain("passphrase", file, {
      title: `Passphrase for the SSH key ${path.basename(file)}`,
      message: `The SSH key ${file} (used for alias ${deps.aliasName}) is encrypted. Enter its passphrase.`,
      field: "passphrase"
    }, deps.ctx)
  }
  const parsed = utils.parseKey(data, passphrase)
  if (parsed instanceof Error) {
    if (fromEnv !== undefined) throw new ToolError(`SSH_MCP_KEY_PASSPHRASE does not decrypt the key ${file}`)
    deps.secrets.drop("passphrase", file)
    throw new ToolError(`the passphrase for the key ${file} is wrong; it was forgotten and the next call asks again`)
  }
  return Array.isArray(parsed) ? parsed[0]! : parsed
}

const credentials = async (
  aliasName: string,
  alias: Alias,
  deps: { readonly config: Config; readonly secrets: Secrets; readonly ctx: CallContext }
): Promise<Credentials> => {
  const username = alias.user
  if (alias.auth === "password") {
    const password = await deps.secrets.obtain("login", aliasName, {
      title: `SSH password for ${target(alias)}`,
      message: `Enter the SSH login password for ${target(alias)} (alias ${aliasName}).`,
      field: "password"
    }, deps.ctx)
    return {
      methods: [
        { type: "password", username, password },
        {
          type: "keyboard-interactive",
          username,
          prompt: (
            _name: string,
            _instructions: string,
            _lang: string,
            prompts: Array<KbdPrompt>,
            finish: (answers: Array<string>) => void
          ) => finish(prompts.map((p) => (p.echo === true ? "" : password)))
        }
      ],
      onRejected: () => deps.secrets.drop("login", aliasName),
      describe: "password"
    }
  }

  const keyDeps = { ...deps, aliasName }
  if (alias.key_path !== undefined) {
    const file = expandHome(alias.key_path)
    const key = await loadKey(file, true, keyDeps)
    if (key === "needs-passphrase") throw new ToolError(`the key ${file} needs a passphrase`)
    return { methods: [{ type: "publickey", username, key }], onRejected: () => {}, describe: `key ${file}` }
  }

  const methods: Array<AnyAuthMethod> = []
  const used: Array<string> = []
  if (deps.config.agentSocket !== undefined) {
    methods.push({ type: "agent", username, agent: deps.config.agentSocket })
    used.push("ssh-agent")
  }
  const encrypted: Array<string> = []
  for (const file of deps.config.defaultKeys) {
    try {
      await fs.access(file)
    } catch {
      continue
    }
    const key = await loadKey(file, false, keyDeps)
    if (key === "needs-passphrase") {
      encrypted.push(file)
      continue
    }
    methods.push({ type: "publickey", username, key })
    used.push(`key ${file}`)
  }
  if (methods.length === 0 && encrypted[0] !== undefined) {
    const file = encrypted[0]
    const key = await loadKey(file, true, keyDeps)
    if (key !== "needs-passphrase") {
      methods.push({ type: "publickey", username, key })
      used.push(`key ${file}`)
    }
  }
  if (methods.length === 0) {
    throw new ToolError(
      `alias ${aliasName} uses key authentication but there is no key: set key_path with add_alias, ` +
        `put a key at ${deps.config.defaultKeys.join(", ")}, or run an ssh-agent (SSH_AUTH_SOCK)`
    )
  }
  return { methods, onRejected: () => {}, describe: used.join(", ") }
}

/** Tries the planned methods in order, skipping those the server does not offer. */
const authHandler = (methods: ReadonlyArray<AnyAuthMethod>) => {
  let next = 0
  return (
    authsLeft: Array<AuthenticationType> | null,
    _partial: boolean | null,
    callback: (auth: AnyAuthMethod | false) => void
  ) => {
    while (next < methods.length) {
      const method = methods[next++]!
      const wire: AuthenticationType = method.type === "agent" ? "publickey" : method.type
      if (authsLeft === null || authsLeft.length === 0 || authsLeft.includes(wire)) return callback(method)
    }
    return callback(false)
  }
}

export interface Opened {
  readonly client: Client
  /** `SHA256:…` of the host key the server presented. */
  readonly hostKey: string
}

/** Opens and authenticates a connection, or fails with a `ToolError` that says why. */
export const open = async (
  aliasName: string,
  alias: Alias,
  deps: { readonly config: Config; readonly secrets: Secrets; readonly log: Log; readonly ctx: CallContext }
): Promise<Opened> => {
  const { config, log } = deps
  // Before any question: a host we would reject anyway is rejected now.
  const entries = await KnownHosts.load(config.knownHostsFile).catch((error: unknown) => {
    throw new ToolError(
      `cannot read ${config.knownHostsFile}: ${error instanceof Error ? error.message : String(error)}`
    )
  })
  const knownTypes = KnownHosts.knownTypes(entries, alias.host, alias.port)
  if (knownTypes.length === 0 && !alias.accept_new_host_key) {
    throw new ToolError(
      `the host key of ${KnownHosts.hostName(alias.host, alias.port)} is not in ${config.knownHostsFile}: ` +
        `refusing to connect (add the key to that file, e.g. from ssh-keyscan after checking its fingerprint, ` +
        `or re-add the alias with accept_new_host_key=true to trust it on first use)`
    )
  }
  const creds = await credentials(aliasName, alias, deps)

  let hostProblem: string | undefined
  let presented = ""
  const hostVerifier = (blob: Buffer, verify: (ok: boolean) => void): void => {
    const key = KnownHosts.hostKeyOf(blob)
    presented = KnownHosts.fingerprint(blob)
    const name = KnownHosts.hostName(alias.host, alias.port)
    // Re-read: another process may have changed the file since.
    KnownHosts.load(config.knownHostsFile).then(async (now) => {
      const verdict = KnownHosts.check(now, alias.host, alias.port, key)
      switch (verdict.status) {
        case "known":
          return verify(true)
        case "revoked":
          hostProblem =
            `the host key of ${name} (${key.type} ${presented}) is marked @revoked in ${config.knownHostsFile}`
          return verify(false)
        case "changed":
          hostProblem = `HOST KEY CHANGED: ${name} presented ${key.type} ${presented}, which does not match the ` +
            `${verdict.knownTypes.join("/")} key recorded in ${config.knownHostsFile}. This could be an attack ` +
            `(or the host was reinstalled); refusing to connect. If the change is expected, remove the old entry ` +
            `(ssh-keygen -R '${name}' -f ${config.knownHostsFile}) and connect again.`
          return verify(false)
        case "unknown":
          if (!alias.accept_new_host_key) {
            hostProblem = `the host key of ${name} is not in ${config.knownHostsFile}: refusing to connect`
            return verify(false)
          }
          await KnownHosts.append(config.knownHostsFile, alias.host, alias.port, key, config.hashKnownHosts)
          log.warn(
            `alias ${aliasName}: added the new host key of ${name} (${key.type} ${presented}) to ${config.knownHostsFile}`
          )
          return verify(true)
      }
    }).catch((error: unknown) => {
      hostProblem = `checking the host key of ${name} failed: ${error instanceof Error ? error.message : String(error)}`
      verify(false)
    })
  }

  const client = new Client()
  const connectConfig: ConnectConfig = {
    host: alias.host,
    port: alias.port,
    username: alias.user,
    readyTimeout: config.connectTimeoutMs,
    keepaliveInterval: 30_000,
    keepaliveCountMax: 3,
    hostVerifier,
    authHandler: authHandler(creds.methods) as unknown as NonNullable<ConnectConfig["authHandler"]>,
    ...(knownTypes.length > 0
      ? {
        // ssh2 takes {remove, prepend} edits of its default list (its types only know arrays).
        algorithms: {
          serverHostKey: { remove: KnownHosts.algorithmsFor(knownTypes), prepend: KnownHosts.algorithmsFor(knownTypes) }
        } as unknown as NonNullable<ConnectConfig["algorithms"]>
      }
      : {})
  }

  log.info(`alias ${aliasName}: connecting to ${target(alias)} (${creds.describe})`)
  await new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      client.end()
      reject(new ToolError(`connecting to ${target(alias)} was cancelled`))
    }
    if (deps.ctx.signal.aborted) return onAbort()
    deps.ctx.signal.addEventListener("abort", onAbort, { once: true })
    client.once("ready", () => {
      deps.ctx.signal.removeEventListener("abort", onAbort)
      resolve()
    })
    client.once("error", (error: Error & { level?: string }) => {
      deps.ctx.signal.removeEventListener("abort", onAbort)
      client.end()
      reject(connectError(aliasName, alias, error, hostProblem, creds, log))
    })
    try {
      client.connect(connectConfig)
    } catch (error) {
      reject(
        new ToolError(`cannot connect to ${target(alias)}: ${error instanceof Error ? error.message : String(error)}`)
      )
    }
  })
  return { client, hostKey: presented }
}

const connectError = (
  aliasName: string,
  alias: Alias,
  error: Error & { level?: string; code?: string },
  hostProblem: string | undefined,
  creds: Credentials,
  log: Log
): ToolError => {
  if (hostProblem !== undefined) {
    log.error(`alias ${aliasName}: ${hostProblem}`)
    return new ToolError(hostProblem)
  }
  switch (error.level) {
    case "client-authentication": {
      creds.onRejected()
      const message = alias.auth === "password"
        ? `authentication failed for ${
          target(alias)
        }: the password was rejected; it was forgotten and the next call asks again`
        : `authentication failed for ${target(alias)} with ${creds.describe}: the server accepted none of them`
      log.warn(`alias ${aliasName}: ${message}`)
      return new ToolError(message)
    }
    case "client-timeout":
      return new ToolError(`connecting to ${target(alias)} timed out (SSH_MCP_CONNECT_TIMEOUT)`)
    case "client-socket":
      return new ToolError(
        `cannot connect to ${target(alias)}: ${error.code === "ECONNREFUSED" ? "connection refused" : error.message}`
      )
    default:
      return new ToolError(`SSH connection to ${target(alias)} failed: ${error.message}`)
  }
}
