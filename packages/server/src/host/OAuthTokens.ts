/**
 * OAuth for registered HTTP servers: the token store over the secret store (one secret per
 * server, `MCP_<SERVER>__OAUTH`, holding its tokens and registered client as JSON: 0600, written
 * atomically, never in the database, a log line or an error), the session the connector hands
 * the HTTP transport, and `login`/`logout` (what `skald mcp login|logout` run).
 *
 * @since 0.1.0
 */
import type { ServerName } from "@skald/domain"
import { HttpTransport, McpClient, OAuth, Transport } from "@skald/mcp"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Http from "node:http"
import { UnknownServer } from "./HostError.js"
import { McpServerRepo } from "./McpServerRepo.js"
import { OAUTH_FIELD, secretNameFor } from "./SecretNames.js"
import { type ResolvedOAuth, SecretStore } from "./SecretStore.js"
import * as ServerList from "./ServerList.js"

/** Authorization cannot be run for this server. */
export class OAuthNotApplicable extends Schema.TaggedError<OAuthNotApplicable>("@skald/server/OAuthNotApplicable")(
  "OAuthNotApplicable",
  { name: Schema.String, reason: Schema.String }
) {
  override get message(): string {
    return `server '${this.name}' cannot be authorized: ${this.reason}`
  }
}

const SavedJson = Schema.parseJson(Schema.Struct({
  tokens: Schema.optional(Schema.Struct({
    accessToken: Schema.String,
    refreshToken: Schema.optional(Schema.String),
    expiresAt: Schema.optional(Schema.Number),
    scope: Schema.optional(Schema.String)
  })),
  client: Schema.optional(Schema.Struct({
    clientId: Schema.String,
    clientSecret: Schema.optional(Schema.String),
    authMethod: Schema.optional(Schema.String),
    issuer: Schema.String
  }))
}))

/** The OAuth token store over the secret store. A store that cannot be read is empty (logged, no value shown). */
export const tokenStore = (secrets: SecretStore): Context.Tag.Service<OAuth.TokenStore> => {
  const nameOf = (server: string) => secretNameFor(server, OAUTH_FIELD)
  const warn = (what: string) => (error: { readonly message: string }) =>
    Effect.logWarning(`OAuth tokens: could not ${what}: ${error.message}`)
  return {
    get: (server) =>
      secrets.get(nameOf(server)).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.succeed({}),
          onSome: (value) =>
            Schema.decode(SavedJson)(Redacted.value(value)).pipe(
              // The parse error would quote the document: say only that it is unreadable.
              Effect.mapError(() => ({ message: `${nameOf(server)} is not a readable OAuth record` }))
            )
        })),
        Effect.catchAll((error) => warn("read them")(error).pipe(Effect.as({})))
      ),
    set: (server, saved) =>
      secrets.set(nameOf(server), Redacted.make(JSON.stringify(saved))).pipe(Effect.catchAll(warn("store them"))),
    clear: (server) => secrets.remove(nameOf(server)).pipe(Effect.asVoid, Effect.catchAll(warn("forget them")))
  }
}

/** A registered server's OAuth client settings (secret resolved) as the session's configuration. */
export const configOf = (oauth: ResolvedOAuth | undefined): OAuth.Config =>
  oauth === undefined ? {} : {
    clientId: oauth.clientId,
    clientSecret: oauth.clientSecret === undefined ? undefined : Redacted.value(oauth.clientSecret),
    privateKeyPem: oauth.privateKey === undefined ? undefined : Redacted.value(oauth.privateKey),
    signingAlgorithm: oauth.signingAlgorithm,
    clientMetadataUrl: oauth.clientMetadataUrl,
    scope: oauth.scope,
    grant: oauth.grant
  }

/**
 * The session a registered HTTP server's transport gets: stored tokens, refreshed; no user step
 * (a `client_credentials` client needs none).
 */
export const session = (server: string, url: string, oauth?: ResolvedOAuth) =>
  Effect.flatMap(
    SecretStore,
    (secrets) =>
      OAuth.makeSession(server, url, configOf(oauth)).pipe(
        Effect.provideService(OAuth.TokenStore, tokenStore(secrets))
      )
  )

/**
 * The user step on this machine: a redirect server on 127.0.0.1 (a free port, closed with the
 * scope); `show` is given the authorization URL to print or open. Waits at most `timeout`.
 */
export const loopbackAuthorizer = (
  show: (url: URL) => Effect.Effect<void>,
  timeout: Duration.DurationInput = "5 minutes",
  serverName = "login"
): Effect.Effect<OAuth.Authorizer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const arrived = yield* Deferred.make<URL>()
    const server = yield* Effect.acquireRelease(
      Effect.async<Http.Server>((resume) => {
        const s = Http.createServer((req, res) => {
          const url = new URL(req.url ?? "/", "http://127.0.0.1")
          if (url.pathname !== "/callback") {
            res.writeHead(404).end()
            return
          }
          res.writeHead(200, { "content-type": "text/plain; charset=utf-8" })
          res.end("Skald: authorization received; you can close this window.\n")
          Deferred.unsafeDone(arrived, Effect.succeed(url))
        })
        s.listen(0, "127.0.0.1", () => void resume(Effect.succeed(s)))
      }),
      (s) =>
        Effect.async<void>((resume) => {
          s.closeAllConnections()
          s.close(() => resume(Effect.void))
        })
    )
    const port = (server.address() as { port: number }).port
    const redirectUri = `http://127.0.0.1:${port}/callback`
    return {
      redirectUri,
      authorize: (url) =>
        show(url).pipe(
          Effect.zipRight(Deferred.await(arrived)),
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: () =>
              new OAuth.OAuthError({ server: serverName, reason: "no authorization arrived in time; try again" })
          })
        )
    }
  })

const httpConfigOf = (name: ServerName.ServerName) =>
  Effect.gen(function*() {
    const entry = yield* (yield* McpServerRepo).get(name)
    if (Option.isNone(entry)) return yield* new UnknownServer({ name })
    const config = entry.value.config
    if (config._tag !== "http") {
      return yield* new OAuthNotApplicable({ name, reason: "it is a stdio server (OAuth is for HTTP servers)" })
    }
    return config
  })

/**
 * Runs the authorization for a registered HTTP server (forgetting its old tokens first), with its
 * configured client, scope and grant.
 */
export const login = (name: ServerName.ServerName, authorizer: OAuth.Authorizer) =>
  Effect.gen(function*() {
    const config = yield* httpConfigOf(name)
    const secrets = yield* SecretStore
    const resolved = yield* secrets.resolve(name, config)
    const store = tokenStore(secrets)
    const saved = yield* store.get(name)
    yield* store.set(name, { client: saved.client })
    const auth = yield* OAuth.makeSession(
      name,
      config.url,
      configOf(resolved._tag === "http" ? resolved.oauth : undefined),
      authorizer
    ).pipe(Effect.provideService(OAuth.TokenStore, store))
    yield* auth.challenge(401, undefined)
  })

/**
 * `login`, then a running host (in this process or another) is asked to reconnect the server at
 * once — its next retry could be a minute away: what `skald mcp login` and the host's `Mcp.Login`
 * both run.
 */
export const authorize = (name: ServerName.ServerName, authorizer: OAuth.Authorizer) =>
  Effect.zipRight(login(name, authorizer), ServerList.requestRestart(name))

/** Forgets a server's tokens and registered client. True when there were any. */
export const logout = (name: ServerName.ServerName) =>
  Effect.gen(function*() {
    yield* httpConfigOf(name)
    const secrets = yield* SecretStore
    const had = Option.isSome(yield* secrets.get(secretNameFor(name, OAUTH_FIELD)))
    yield* secrets.remove(secretNameFor(name, OAUTH_FIELD))
    return had
  })

/**
 * A one-off client of `url` (no registration): a 401 runs the authorization with the loopback
 * redirect, `say` telling the user the URL; the tokens live in memory for this client only.
 */
export const adHocClientLayer = (
  server: string,
  url: string,
  clientOptions: McpClient.Options,
  say: (line: string) => Effect.Effect<void>
) =>
  Layer.scoped(
    Transport.Transport,
    Effect.gen(function*() {
      const authorizer = yield* loopbackAuthorizer(
        (authorization) =>
          say(`skald: ${server} asks for authorization; open this URL in a browser:\n${authorization.href}`),
        undefined,
        server
      )
      const auth = yield* OAuth.makeSession(server, url, {}, authorizer).pipe(
        Effect.provideService(OAuth.TokenStore, OAuth.memoryTokenStore())
      )
      return yield* HttpTransport.make({ server, url, auth })
    })
  ).pipe((transport) => Layer.provide(McpClient.layer(clientOptions), transport))
