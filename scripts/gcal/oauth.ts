/**
 * The pieces of Google's OAuth flow for installed apps: the client id/secret from a
 * `client_secret_….json` download, PKCE (S256), and the consent URL.
 */
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import { GcalError } from "./credentials.js"

export interface OAuthClient {
  readonly client_id: string
  readonly client_secret: string
}

const base64url = (bytes: Buffer): string => bytes.toString("base64url")

/** A PKCE verifier (43 characters of base64url) and its S256 challenge. */
export const pkcePair = (): { readonly verifier: string; readonly challenge: string } => {
  const verifier = base64url(randomBytes(32))
  return { verifier, challenge: s256(verifier) }
}

/** `BASE64URL(SHA256(verifier))`, RFC 7636 §4.2. */
export const s256 = (verifier: string): string => base64url(createHash("sha256").update(verifier, "ascii").digest())

/** An unguessable `state` value. */
export const randomState = (): string => base64url(randomBytes(24))

/** The consent URL: offline access (a refresh token), the consent screen every time, PKCE S256. */
export const consentUrl = (options: {
  readonly authUrl: string
  readonly clientId: string
  readonly redirectUri: string
  readonly scope: string
  readonly state: string
  readonly challenge: string
}): string => {
  const url = new URL(options.authUrl)
  const params: Record<string, string> = {
    client_id: options.clientId,
    redirect_uri: options.redirectUri,
    response_type: "code",
    scope: options.scope,
    state: options.state,
    code_challenge: options.challenge,
    code_challenge_method: "S256",
    access_type: "offline",
    prompt: "consent"
  }
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value)
  return url.toString()
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Reads a Google `client_secret_….json` of a Desktop app client (its `installed` section). */
export const readClientSecretsFile = async (file: string): Promise<OAuthClient> => {
  let raw: unknown
  try {
    raw = JSON.parse(await fs.readFile(file, "utf8"))
  } catch (error) {
    const reason = error instanceof SyntaxError ? "not valid JSON" : (error as Error).message
    throw new GcalError(`cannot read the client secrets file ${file}: ${reason}`)
  }
  if (!isObject(raw)) throw new GcalError(`${file} is not a Google client secrets file`)
  if (!isObject(raw.installed)) {
    if (isObject(raw.web)) {
      throw new GcalError(
        `${file} is for a "Web application" client; the setup needs a "Desktop app" client (its file has an "installed" section)`
      )
    }
    throw new GcalError(`${file} has no "installed" section: download the JSON of a "Desktop app" OAuth client`)
  }
  const { client_id, client_secret } = raw.installed
  if (
    typeof client_id !== "string" || client_id.length === 0 || typeof client_secret !== "string" ||
    client_secret.length === 0
  ) {
    throw new GcalError(`${file} lacks installed.client_id or installed.client_secret`)
  }
  return { client_id, client_secret }
}
