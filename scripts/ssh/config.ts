/**
 * The SSH server's settings, all from the environment (read once at start-up; a bad value stops
 * the server with a message naming the variable).
 */
import * as os from "node:os"
import * as path from "node:path"

export interface Config {
  /** `SKALD_SECRETS_DIR`, else `$SKALD_HOME/secrets` (SKALD_HOME defaults to the working dir). */
  readonly secretsDir: string
  /** `<secretsDir>/ssh_aliases.json`. */
  readonly aliasesFile: string
  /** `SSH_MCP_KNOWN_HOSTS`, default `~/.ssh/known_hosts`. */
  readonly knownHostsFile: string
  /** `SSH_MCP_HASH_KNOWN_HOSTS=1`: accepted keys are written hashed (`|1|salt|hash`). */
  readonly hashKnownHosts: boolean
  /** `SSH_MCP_POOL_TTL` (s, default 300): an idle pooled connection is closed after this. */
  readonly poolTtlMs: number
  /** `SSH_MCP_LOGIN_PW_TTL` (s, default 300): how long an elicited login password or key passphrase stays in RAM. */
  readonly loginSecretTtlMs: number
  /** `SSH_MCP_SUDO_PW_TTL` (s, default 300): how long an elicited sudo password stays in RAM. */
  readonly sudoSecretTtlMs: number
  /** `SSH_MCP_KEY_PASSPHRASE`: the passphrase of encrypted keys, so none is asked for. */
  readonly keyPassphrase: string | undefined
  /** `SSH_MCP_CONNECT_TIMEOUT` (s, default 20): TCP connect + handshake + authentication. */
  readonly connectTimeoutMs: number
  /** `SSH_MCP_EXEC_TIMEOUT` (s, default 600): the default `timeout` of `exec`. */
  readonly execTimeoutMs: number
  /** `SSH_MCP_MAX_OUTPUT` (bytes, default 65536): the most of stdout and of stderr kept per command. */
  readonly maxOutputBytes: number
  /** `SSH_MCP_MAX_FILE_BYTES` (bytes, default 10 MiB): the largest file the text tools read. */
  readonly maxFileBytes: number
  /** Keys tried for `auth: key` aliases without `key_path` (`~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`). */
  readonly defaultKeys: ReadonlyArray<string>
  /** `SSH_AUTH_SOCK`: an ssh-agent, tried for `auth: key` aliases without `key_path`. */
  readonly agentSocket: string | undefined
}

export class ConfigError extends Error {
  override readonly name = "ConfigError"
}

const seconds = (env: NodeJS.ProcessEnv, name: string, fallback: number): number => {
  const raw = env[name]
  if (raw === undefined || raw.trim() === "") return fallback * 1000
  const value = Number(raw)
  if (!Number.isFinite(value) || value < 0) {
    throw new ConfigError(`${name} must be a number of seconds >= 0, got ${JSON.stringify(raw)}`)
  }
  return Math.round(value * 1000)
}

const bytes = (env: NodeJS.ProcessEnv, name: string, fallback: number): number => {
  const raw = env[name]
  if (raw === undefined || raw.trim() === "") return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigError(`${name} must be a whole number of bytes >= 1, got ${JSON.stringify(raw)}`)
  }
  return value
}

const nonEmpty = (u: string | undefined): string | undefined => (u === undefined || u === "" ? undefined : u)

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => {
  const home = os.homedir()
  const secretsDir = path.resolve(
    nonEmpty(env.SKALD_SECRETS_DIR) ?? path.join(nonEmpty(env.SKALD_HOME) ?? ".", "secrets")
  )
  return {
    secretsDir,
    aliasesFile: path.join(secretsDir, "ssh_aliases.json"),
    knownHostsFile: path.resolve(nonEmpty(env.SSH_MCP_KNOWN_HOSTS) ?? path.join(home, ".ssh", "known_hosts")),
    hashKnownHosts: env.SSH_MCP_HASH_KNOWN_HOSTS === "1" || env.SSH_MCP_HASH_KNOWN_HOSTS === "true",
    poolTtlMs: seconds(env, "SSH_MCP_POOL_TTL", 300),
    loginSecretTtlMs: seconds(env, "SSH_MCP_LOGIN_PW_TTL", 300),
    sudoSecretTtlMs: seconds(env, "SSH_MCP_SUDO_PW_TTL", 300),
    keyPassphrase: nonEmpty(env.SSH_MCP_KEY_PASSPHRASE),
    connectTimeoutMs: Math.max(1000, seconds(env, "SSH_MCP_CONNECT_TIMEOUT", 20)),
    execTimeoutMs: Math.max(1000, seconds(env, "SSH_MCP_EXEC_TIMEOUT", 600)),
    maxOutputBytes: bytes(env, "SSH_MCP_MAX_OUTPUT", 64 * 1024),
    maxFileBytes: bytes(env, "SSH_MCP_MAX_FILE_BYTES", 10 * 1024 * 1024),
    defaultKeys: ["id_ed25519", "id_ecdsa", "id_rsa"].map((k) => path.join(home, ".ssh", k)),
    agentSocket: nonEmpty(env.SSH_AUTH_SOCK)
  }
}

export const HELP = `ssh-server — an MCP server (stdio) that works on remote hosts over SSH

Usage: node --import tsx scripts/ssh-server.ts [--help]

Tools: list_aliases, add_alias, remove_alias, exec, read_file, list_files, grep_files,
edit_file, replace_lines, upload, download, sysinfo, systemd (see docs/servers.md).

Environment:
  SKALD_SECRETS_DIR         where ssh_aliases.json lives (default: $SKALD_HOME/secrets,
                            SKALD_HOME defaulting to the working directory); it never holds a secret
  SSH_MCP_KNOWN_HOSTS       the known_hosts file checked and appended to (default ~/.ssh/known_hosts)
  SSH_MCP_HASH_KNOWN_HOSTS  1: write accepted host keys hashed (|1|salt|hash)
  SSH_MCP_POOL_TTL          seconds an idle pooled connection is kept (default 300)
  SSH_MCP_LOGIN_PW_TTL      seconds an elicited login password / key passphrase stays in RAM (default 300)
  SSH_MCP_SUDO_PW_TTL       seconds an elicited sudo password stays in RAM (default 300)
  SSH_MCP_KEY_PASSPHRASE    passphrase for encrypted keys (no elicitation then)
  SSH_MCP_CONNECT_TIMEOUT   seconds for connect + handshake + authentication (default 20)
  SSH_MCP_EXEC_TIMEOUT      default exec timeout in seconds (default 600)
  SSH_MCP_MAX_OUTPUT        bytes of stdout and of stderr kept per command (default 65536)
  SSH_MCP_MAX_FILE_BYTES    largest file the text tools read or edit (default 10485760)
  MCP_ELICITATION_TIMEOUT   seconds a question waits for the user (default 600)
  SSH_AUTH_SOCK             ssh-agent socket, tried for key aliases without key_path

Secrets (login passwords, key passphrases, sudo passwords) are asked for by MCP elicitation —
a one-time page on 127.0.0.1 when the client supports URL mode, else a form field — and kept
only in this process's memory.
`
