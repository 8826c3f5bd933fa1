/**
 * The environment the host gives its stdio servers. Not its own: `skald serve` often runs in a
 * shell that holds API keys (the model's, a cloud account's), and every server it starts —
 * third-party code — would see them all. A server gets instead:
 *
 * - from the host's environment, only what programs need to run and that is not a secret — the
 *   official MCP SDK's default list (HOME, LOGNAME, PATH, SHELL, TERM, USER), the locale (LANG,
 *   LANGUAGE, LC_*), TZ and TMPDIR, and where the CA certificates are (NODE_EXTRA_CA_CERTS,
 *   SSL_CERT_FILE, SSL_CERT_DIR);
 * - the host's home as SKALD_HOME and its secrets folder as SKALD_SECRETS_DIR (absolute), so the
 *   example servers find their files whether the home came from `--home` or the environment;
 * - its own `env` from its registration on top (`${VAR}` references resolved from the secret
 *   store, then the host's environment — the way to hand a server a variable on purpose).
 *
 * @since 0.1.0
 */
import type * as Paths from "./Paths.js"

/** The host variables every server inherits (besides `LC_*`). */
export const inherited: ReadonlyArray<string> = [
  "HOME",
  "LOGNAME",
  "PATH",
  "SHELL",
  "TERM",
  "USER",
  "LANG",
  "LANGUAGE",
  "TZ",
  "TMPDIR",
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR"
]

const isInherited = (name: string): boolean => inherited.includes(name) || name.startsWith("LC_")

/** The base environment of a stdio server of this home (its registered `env` goes on top). */
export const make = (
  paths: Paths.Service,
  parent: Readonly<Record<string, string | undefined>> = process.env
): Readonly<Record<string, string>> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(parent)) {
    if (value !== undefined && isInherited(name)) env[name] = value
  }
  env.SKALD_HOME = paths.home
  env.SKALD_SECRETS_DIR = paths.secretsDir
  return env
}
