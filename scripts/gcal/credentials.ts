/**
 * The OAuth credentials file (`<secrets dir>/google_creds.json`, mode 0600) and the access
 * tokens made from it: refreshed shortly before they expire, or once when Google answers 401,
 * and written back atomically. Tokens never reach a log line or an error message.
 */
import * as fs from "node:fs/promises"
import { readJsonIfExists, writeJsonAtomic } from "../lib/atomic-write.js"
import { log, SETUP_COMMAND } from "./config.js"

/** What the credentials file holds. */
export interface StoredCredentials {
  readonly client_id: string
  readonly client_secret: string
  readonly refresh_token: string
  /** The current access token (absent until the first refresh when the file was written by hand). */
  readonly access_token?: string | undefined
  /** When `access_token` expires, ISO 8601 UTC. */
  readonly expiry?: string | undefined
  /** The scopes Google granted, space-separated. */
  readonly scope?: string | undefined
  readonly token_type?: string | undefined
}

/** A failure the user has to act on: the message says what to do. */
export class GcalError extends Error {
  override readonly name = "GcalError"
}

/** The token endpoint refused a request (`{"error": …, "error_description": …}`). */
export class TokenEndpointError extends GcalError {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string | undefined
  ) {
    super(`the Google token endpoint answered ${status} ${error}${description !== undefined ? `: ${description}` : ""}`)
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const optionalString = (record: Record<string, unknown>, key: string): string | undefined => {
  const value = record[key]
  return typeof value === "string" && value.length > 0 ? value : undefined
}

/** Reads and checks the credentials file; a missing or broken file says to run the setup. */
export const readCredentials = async (file: string): Promise<StoredCredentials> => {
  let raw: unknown
  try {
    raw = await readJsonIfExists(file)
  } catch (error) {
    const reason = error instanceof SyntaxError ? "it is not valid JSON" : (error as Error).message
    throw new GcalError(
      `cannot read the Google credentials at ${file} (${reason}). Run the setup again: ${SETUP_COMMAND}`
    )
  }
  if (raw === undefined) {
    throw new GcalError(`no Google credentials at ${file}. Run the setup first: ${SETUP_COMMAND}`)
  }
  if (!isObject(raw)) {
    throw new GcalError(
      `the Google credentials at ${file} are not a JSON object. Run the setup again: ${SETUP_COMMAND}`
    )
  }
  const missing = ["client_id", "client_secret", "refresh_token"].filter((k) => optionalString(raw, k) === undefined)
  if (missing.length > 0) {
    throw new GcalError(
      `the Google credentials at ${file} lack ${missing.join(", ")}. Run the setup again: ${SETUP_COMMAND}`
    )
  }
  return {
    client_id: raw.client_id as string,
    client_secret: raw.client_secret as string,
    refresh_token: raw.refresh_token as string,
    access_token: optionalString(raw, "access_token"),
    expiry: optionalString(raw, "expiry"),
    scope: optionalString(raw, "scope"),
    token_type: optionalString(raw, "token_type")
  }
}

/** Writes the credentials file atomically with mode 0600 (its folder 0700). */
export const writeCredentials = async (file: string, credentials: StoredCredentials): Promise<void> => {
  const ordered: Record<string, string> = {}
  for (
    const key of [
      "client_id",
      "client_secret",
      "refresh_token",
      "access_token",
      "expiry",
      "scope",
      "token_type"
    ] as const
  ) {
    const value = credentials[key]
    if (value !== undefined) ordered[key] = value
  }
  await writeJsonAtomic(file, ordered)
  await fs.chmod(file, 0o600)
}

/** A successful token endpoint answer. */
export interface TokenResponse {
  readonly access_token: string
  readonly expires_in: number
  readonly refresh_token?: string | undefined
  readonly scope?: string | undefined
  readonly token_type?: string | undefined
}

/** POSTs a form to the token endpoint; a refusal is a `TokenEndpointError`. */
export const postTokenEndpoint = async (
  tokenUrl: string,
  form: Readonly<Record<string, string>>,
  timeoutSeconds: number
): Promise<TokenResponse> => {
  let response: Response
  try {
    response = await fetch(tokenUrl, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams(form).toString(),
      signal: AbortSignal.timeout(timeoutSeconds * 1000)
    })
  } catch (error) {
    throw new GcalError(`cannot reach the Google token endpoint ${tokenUrl}: ${describeFetchError(error)}`)
  }
  const text = await response.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = undefined
  }
  if (!response.ok) {
    if (isObject(body) && typeof body.error === "string") {
      throw new TokenEndpointError(response.status, body.error, optionalString(body, "error_description"))
    }
    throw new TokenEndpointError(response.status, response.statusText || "error", undefined)
  }
  if (!isObject(body) || typeof body.access_token !== "string" || body.access_token.length === 0) {
    throw new GcalError(`the Google token endpoint answered without an access_token`)
  }
  const expiresIn = typeof body.expires_in === "number" ? body.expires_in : Number(body.expires_in ?? 3600)
  return {
    access_token: body.access_token,
    expires_in: Number.isFinite(expiresIn) ? expiresIn : 3600,
    refresh_token: optionalString(body, "refresh_token"),
    scope: optionalString(body, "scope"),
    token_type: optionalString(body, "token_type")
  }
}

/** A fetch failure as words (a timeout, a refused connection, …). */
export const describeFetchError = (error: unknown): string => {
  if (error instanceof Error) {
    if (error.name === "TimeoutError") return "timed out"
    const cause = (error as { cause?: unknown }).cause
    if (cause instanceof Error && cause.message) return cause.message
    return error.message
  }
  return String(error)
}

/** The message for a refresh the token endpoint refused. */
const refreshRefused = (file: string, error: TokenEndpointError): GcalError => {
  if (error.error === "invalid_grant") {
    return new GcalError(
      `Google refused the stored refresh token (invalid_grant: ${error.description ?? "expired or revoked"}). ` +
        `Access was revoked or has expired; run the setup again to sign in anew: ${SETUP_COMMAND} ` +
        `(it rewrites ${file})`
    )
  }
  if (error.error === "invalid_client" || error.error === "unauthorized_client") {
    return new GcalError(
      `Google refused the OAuth client stored in ${file} (${error.error}${
        error.description !== undefined ? `: ${error.description}` : ""
      }). ` +
        `Check the client in the Google Cloud console and run the setup again: ${SETUP_COMMAND}`
    )
  }
  return new GcalError(`cannot refresh the Google access token: ${error.message}`)
}

/**
 * Hands out access tokens. The file is read for every token, so credentials written by a new
 * run of the setup are used without restarting the server; concurrent refreshes share one
 * request.
 */
export class TokenProvider {
  private refreshing: Promise<string> | undefined

  constructor(
    private readonly options: {
      readonly credentialsFile: string
      readonly tokenUrl: string
      readonly httpTimeoutSeconds: number
      readonly refreshMarginSeconds: number
      readonly now?: () => number
    }
  ) {}

  private now(): number {
    return this.options.now?.() ?? Date.now()
  }

  /** A token that is not about to expire (refreshing it first when it is). */
  async accessToken(): Promise<string> {
    const credentials = await readCredentials(this.options.credentialsFile)
    const expiry = credentials.expiry !== undefined ? Date.parse(credentials.expiry) : Number.NaN
    const fresh = credentials.access_token !== undefined &&
      Number.isFinite(expiry) &&
      expiry - this.options.refreshMarginSeconds * 1000 > this.now()
    if (fresh) return credentials.access_token!
    return this.refresh(credentials.access_token === undefined ? "no access token stored" : "the access token expires")
  }

  /**
   * A new token from the refresh token. `rejected` is the token Google just refused with 401:
   * when the file already holds a different one (another refresh won), that one is used.
   */
  async refresh(reason: string, rejected?: string): Promise<string> {
    if (this.refreshing !== undefined) return this.refreshing
    const run = (async () => {
      const credentials = await readCredentials(this.options.credentialsFile)
      if (rejected !== undefined && credentials.access_token !== undefined && credentials.access_token !== rejected) {
        return credentials.access_token
      }
      let answer: TokenResponse
      try {
        answer = await postTokenEndpoint(
          this.options.tokenUrl,
          {
            grant_type: "refresh_token",
            refresh_token: credentials.refresh_token,
            client_id: credentials.client_id,
            client_secret: credentials.client_secret
          },
          this.options.httpTimeoutSeconds
        )
      } catch (error) {
        if (error instanceof TokenEndpointError) {
          log(`access token refresh refused: ${error.error}`)
          throw refreshRefused(this.options.credentialsFile, error)
        }
        throw error
      }
      await writeCredentials(this.options.credentialsFile, {
        ...credentials,
        access_token: answer.access_token,
        expiry: new Date(this.now() + answer.expires_in * 1000).toISOString(),
        // Google may rotate the refresh token; keep the newest.
        refresh_token: answer.refresh_token ?? credentials.refresh_token,
        scope: answer.scope ?? credentials.scope,
        token_type: answer.token_type ?? credentials.token_type
      })
      log(`access token refreshed (${reason}); valid for ${answer.expires_in} s`)
      return answer.access_token
    })()
    this.refreshing = run
    try {
      return await run
    } finally {
      this.refreshing = undefined
    }
  }
}
