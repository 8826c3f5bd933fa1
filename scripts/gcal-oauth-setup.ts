/**
 * gcal_oauth_setup: signs in to Google once and stores the credentials the Calendar server
 * uses (`<secrets dir>/google_creds.json`, mode 0600). The installed-app loopback flow: listen
 * on 127.0.0.1 (any free port), print the consent URL, catch the browser's redirect, check
 * `state`, exchange the code with the PKCE verifier.
 *
 *   node --import tsx scripts/gcal-oauth-setup.ts --client-secrets client_secret_….json
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { CALENDAR_SCOPE, ConfigError, loadConfig } from "./gcal/config.js"
import { GcalError, postTokenEndpoint, TokenEndpointError, writeCredentials } from "./gcal/credentials.js"
import { consentUrl, type OAuthClient, pkcePair, randomState, readClientSecretsFile } from "./gcal/oauth.js"

const HELP = `Usage: node --import tsx scripts/gcal-oauth-setup.ts [options]

Signs in to Google and stores the Calendar server's credentials in
<secrets dir>/google_creds.json (mode 0600), replacing any there.

It prints a consent URL: open it in a browser, sign in, allow access. Google then sends the
browser back to this program on http://127.0.0.1:<port>/ (the browser must run on this
machine — or forward the port, e.g. ssh -L <port>:127.0.0.1:<port>, together with --port).

Options:
  --client-secrets FILE  the client_secret_….json of a "Desktop app" OAuth client
  --client-id ID         the client id (instead of the file; or GCAL_CLIENT_ID)
  --client-secret SECRET the client secret (instead of the file; better GCAL_CLIENT_SECRET,
                         since a command line is visible to other users)
  --port N               the loopback port to listen on (default 0: any free port)
  --timeout SECONDS      how long to wait for the browser (default 300)
  -h, --help             this help

Environment:
  SKALD_SECRETS_DIR      the secrets folder (default: $SKALD_HOME/secrets, home defaulting to .)
  GCAL_CLIENT_ID, GCAL_CLIENT_SECRET   the client, when no file or flags are given
  GCAL_AUTH_URL          consent endpoint (default https://accounts.google.com/o/oauth2/v2/auth)
  GCAL_TOKEN_URL         token endpoint (default https://oauth2.googleapis.com/token)

Exit status: 0 stored; 1 the sign-in failed; 2 usage.
`

class UsageError extends Error {}

interface Options {
  readonly clientSecretsFile: string | undefined
  readonly clientId: string | undefined
  readonly clientSecret: string | undefined
  readonly port: number
  readonly timeoutSeconds: number
}

const parseArgs = (argv: ReadonlyArray<string>): Options | "help" => {
  const values: Record<string, string> = {}
  const known = ["--client-secrets", "--client-id", "--client-secret", "--port", "--timeout"]
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === "--help" || arg === "-h") return "help"
    const eq = arg.indexOf("=")
    const name = eq > 0 ? arg.slice(0, eq) : arg
    if (!known.includes(name)) throw new UsageError(`unknown argument ${JSON.stringify(arg)}`)
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i]
    if (value === undefined || value === "") throw new UsageError(`${name} needs a value`)
    values[name] = value
  }
  const number = (name: string, fallback: number, ok: (n: number) => boolean): number => {
    const raw = values[name]
    if (raw === undefined) return fallback
    const n = Number(raw)
    if (!Number.isFinite(n) || !ok(n)) throw new UsageError(`${name}: not a valid value: ${JSON.stringify(raw)}`)
    return n
  }
  return {
    clientSecretsFile: values["--client-secrets"],
    clientId: values["--client-id"] ?? (process.env.GCAL_CLIENT_ID || undefined),
    clientSecret: values["--client-secret"] ?? (process.env.GCAL_CLIENT_SECRET || undefined),
    port: number("--port", 0, (n) => Number.isInteger(n) && n >= 0 && n <= 65535),
    timeoutSeconds: number("--timeout", 300, (n) => n > 0)
  }
}

const resolveClient = async (options: Options): Promise<OAuthClient> => {
  if (options.clientSecretsFile !== undefined) return readClientSecretsFile(options.clientSecretsFile)
  if (options.clientId !== undefined && options.clientSecret !== undefined) {
    return { client_id: options.clientId, client_secret: options.clientSecret }
  }
  throw new UsageError(
    "give --client-secrets FILE, or the client id and secret (--client-id/--client-secret or GCAL_CLIENT_ID/GCAL_CLIENT_SECRET)"
  )
}

const page = (title: string, body: string): string =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><h1>${title}</h1><p>${body}</p>`

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** Runs the flow; resolves with the file written. */
const run = async (options: Options): Promise<string> => {
  const config = loadConfig()
  const client = await resolveClient(options)
  const { verifier, challenge } = pkcePair()
  const state = randomState()

  const server = http.createServer()
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port, "127.0.0.1", () => resolve())
  })
  const port = (server.address() as AddressInfo).port
  const redirectUri = `http://127.0.0.1:${port}/`

  try {
    const url = consentUrl({
      authUrl: config.authUrl,
      clientId: client.client_id,
      redirectUri,
      scope: CALENDAR_SCOPE,
      state,
      challenge
    })
    process.stderr.write(
      `Open this URL in a browser, sign in and allow access to Google Calendar:\n\n  ${url}\n\n` +
        `Waiting up to ${options.timeoutSeconds} s for the browser to come back to ${redirectUri} …\n`
    )

    return await new Promise<string>((resolve, reject) => {
      let done = false
      const finish = (outcome: { file: string } | { error: Error }) => {
        if (done) return
        done = true
        clearTimeout(timer)
        if ("file" in outcome) resolve(outcome.file)
        else reject(outcome.error)
      }
      const timer = setTimeout(
        () =>
          finish({
            error: new GcalError(`no answer from the browser within ${options.timeoutSeconds} s; run the setup again`)
          }),
        options.timeoutSeconds * 1000
      )

      server.on("request", (req, res) => {
        const reply = (status: number, title: string, body: string) => {
          res.writeHead(status, {
            "content-type": "text/html; charset=utf-8",
            "cache-control": "no-store",
            connection: "close"
          })
          res.end(page(title, body))
        }
        const incoming = new URL(req.url ?? "/", redirectUri)
        if (req.method !== "GET" || incoming.pathname !== "/") {
          return reply(404, "Not found", "This is the Skald Google Calendar setup.")
        }
        if (done) return reply(409, "Already done", "The setup has finished; you can close this window.")
        const params = incoming.searchParams
        if (params.get("state") !== state) {
          reply(
            400,
            "Sign-in refused",
            "The answer does not belong to this sign-in (state mismatch). Run the setup again."
          )
          return finish({
            error: new GcalError(
              "the redirect's state does not match this sign-in (a stale or forged answer); nothing was stored. Run the setup again"
            )
          })
        }
        const error = params.get("error")
        if (error !== null) {
          reply(400, "No access", `Google did not grant access (${escapeHtml(error)}). Run the setup again to retry.`)
          return finish({ error: new GcalError(`Google did not grant access (${error}); nothing was stored`) })
        }
        const code = params.get("code")
        if (code === null || code.length === 0) {
          return reply(400, "No code", "The answer carries no authorization code.")
        }
        done = true
        clearTimeout(timer)
        exchange(code)
          .then((file) => {
            reply(200, "Signed in", "Skald can now use your Google Calendar. You can close this window.")
            resolve(file)
          })
          .catch((failure: Error) => {
            reply(500, "Sign-in failed", escapeHtml(failure.message))
            reject(failure)
          })
      })
    })
  } finally {
    server.closeAllConnections()
    server.close()
  }

  async function exchange(code: string): Promise<string> {
    let answer
    try {
      answer = await postTokenEndpoint(
        config.tokenUrl,
        {
          grant_type: "authorization_code",
          code,
          client_id: client.client_id,
          client_secret: client.client_secret,
          redirect_uri: redirectUri,
          code_verifier: verifier
        },
        config.httpTimeoutSeconds
      )
    } catch (error) {
      if (error instanceof TokenEndpointError) {
        throw new GcalError(
          `Google refused to exchange the authorization code: ${error.error}${
            error.description !== undefined ? ` (${error.description})` : ""
          }`
        )
      }
      throw error
    }
    if (answer.refresh_token === undefined) {
      throw new GcalError(
        "Google sent no refresh token. Remove Skald's access at https://myaccount.google.com/permissions and run the setup again"
      )
    }
    if (answer.scope !== undefined && !answer.scope.split(/\s+/).includes(CALENDAR_SCOPE)) {
      throw new GcalError(
        `Google Calendar access was not granted (granted: ${answer.scope}). Run the setup again and allow calendar access`
      )
    }
    await writeCredentials(config.credentialsFile, {
      client_id: client.client_id,
      client_secret: client.client_secret,
      refresh_token: answer.refresh_token,
      access_token: answer.access_token,
      expiry: new Date(Date.now() + answer.expires_in * 1000).toISOString(),
      scope: answer.scope ?? CALENDAR_SCOPE,
      token_type: answer.token_type ?? "Bearer"
    })
    return config.credentialsFile
  }
}

let options: Options | "help"
try {
  options = parseArgs(process.argv.slice(2))
} catch (error) {
  process.stderr.write(`gcal-oauth-setup: ${(error as Error).message}\n\n${HELP}`)
  process.exit(2)
}
if (options === "help") {
  process.stdout.write(HELP)
  process.exit(0)
}
try {
  const file = await run(options)
  process.stdout.write(`Stored Google Calendar credentials in ${file}\n`)
  process.exit(0)
} catch (error) {
  if (error instanceof UsageError || error instanceof ConfigError) {
    process.stderr.write(`gcal-oauth-setup: ${error.message}\n`)
    process.exit(2)
  }
  process.stderr.write(`gcal-oauth-setup: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
}
