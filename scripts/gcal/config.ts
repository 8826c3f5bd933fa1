/**
 * Where the Google Calendar server and its setup keep their files, which Google endpoints they
 * talk to, and how the poller is paced — all from the environment, so tests point them at a
 * stand-in on 127.0.0.1 and poll every fraction of a second.
 */
import * as path from "node:path"

/** The OAuth scope both the setup and the server use: read/write access to every calendar. */
export const CALENDAR_SCOPE = "https://www.googleapis.com/auth/calendar"

export const DEFAULT_API_BASE = "https://www.googleapis.com/calendar/v3"
export const DEFAULT_TOKEN_URL = "https://oauth2.googleapis.com/token"
export const DEFAULT_AUTH_URL = "https://accounts.google.com/o/oauth2/v2/auth"

/** The command that (re)creates the credentials file, for error messages. */
export const SETUP_COMMAND = "node --import tsx scripts/gcal-oauth-setup.ts --client-secrets <client_secret_….json>"

/** A setting that cannot be used; its message says which and why. */
export class ConfigError extends Error {
  override readonly name = "ConfigError"
}

export interface GcalConfig {
  /** `SKALD_SECRETS_DIR`, else `$SKALD_HOME/secrets` (home defaults to the current directory). */
  readonly secretsDir: string
  /** `<secrets dir>/google_creds.json`. */
  readonly credentialsFile: string
  /** `<secrets dir>/gcal_poll_state.json`: what the poller has already seen. */
  readonly pollStateFile: string
  /** `GCAL_API_BASE`: the Calendar API v3 root, no trailing slash. */
  readonly apiBase: string
  /** `GCAL_TOKEN_URL`: the OAuth token endpoint. */
  readonly tokenUrl: string
  /** `GCAL_AUTH_URL`: the OAuth consent (authorization) endpoint. */
  readonly authUrl: string
  /** `GCAL_POLL_SECONDS` (default 300; 0 turns the poller off). */
  readonly pollSeconds: number
  /** `GCAL_POLL_CALENDARS`: comma-separated calendar ids the poller watches (default `primary`). */
  readonly pollCalendars: ReadonlyArray<string>
  /** `GCAL_POLL_OVERLAP_SECONDS` (default 300): how far back each poll looks before the last one, against clock skew. */
  readonly pollOverlapSeconds: number
  /** `GCAL_HTTP_TIMEOUT_SECONDS` (default 30): the longest wait for one Google request. */
  readonly httpTimeoutSeconds: number
  /** `GCAL_REFRESH_MARGIN_SECONDS` (default 60): refresh an access token this long before it expires. */
  readonly refreshMarginSeconds: number
}

type Env = Readonly<Record<string, string | undefined>>

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value.trim()

/** The secrets folder of DESIGN §5, as an absolute path. */
export const resolveSecretsDir = (env: Env = process.env): string => {
  const explicit = nonEmpty(env.SKALD_SECRETS_DIR)
  if (explicit !== undefined) return path.resolve(explicit)
  return path.resolve(nonEmpty(env.SKALD_HOME) ?? ".", "secrets")
}

const seconds = (env: Env, name: string, fallback: number, { allowZero }: { allowZero: boolean }): number => {
  const raw = nonEmpty(env[name])
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw new ConfigError(
      `${name} must be a number of seconds${allowZero ? " (0 or more)" : " above 0"}, got ${JSON.stringify(raw)}`
    )
  }
  return value
}

const url = (env: Env, name: string, fallback: string): string => {
  const raw = nonEmpty(env[name]) ?? fallback
  try {
    const parsed = new URL(raw)
    if (parsed.protocol !== "https:" && parsed.protocol !== "http:") throw new Error("not http(s)")
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`)
  }
  return raw.replace(/\/+$/, "")
}

/** Reads the configuration; throws a `ConfigError` for a setting that cannot be used. */
export const loadConfig = (env: Env = process.env): GcalConfig => {
  const secretsDir = resolveSecretsDir(env)
  const calendars = (nonEmpty(env.GCAL_POLL_CALENDARS) ?? "primary")
    .split(",")
    .map((c) => c.trim())
    .filter((c) => c.length > 0)
  return {
    secretsDir,
    credentialsFile: path.join(secretsDir, "google_creds.json"),
    pollStateFile: path.join(secretsDir, "gcal_poll_state.json"),
    apiBase: url(env, "GCAL_API_BASE", DEFAULT_API_BASE),
    tokenUrl: url(env, "GCAL_TOKEN_URL", DEFAULT_TOKEN_URL),
    authUrl: url(env, "GCAL_AUTH_URL", DEFAULT_AUTH_URL),
    pollSeconds: seconds(env, "GCAL_POLL_SECONDS", 300, { allowZero: true }),
    pollCalendars: calendars.length > 0 ? calendars : ["primary"],
    pollOverlapSeconds: seconds(env, "GCAL_POLL_OVERLAP_SECONDS", 300, { allowZero: true }),
    httpTimeoutSeconds: seconds(env, "GCAL_HTTP_TIMEOUT_SECONDS", 30, { allowZero: false }),
    refreshMarginSeconds: seconds(env, "GCAL_REFRESH_MARGIN_SECONDS", 60, { allowZero: true })
  }
}

/** One diagnostic line on stderr (stdout carries the MCP protocol). Never pass it a token. */
export const log = (message: string): void => {
  process.stderr.write(`gcal: ${message}\n`)
}
