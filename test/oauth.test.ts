/**
 * OAuth over HTTP against a loopback authorization server of our own (fixtures/oauth-http.ts):
 * the authorization-code flow, refresh before expiry and on a 401, rotation, a refused refresh,
 * and what the failures say. Every token the fixture issues carries a marker; afterwards the
 * marker is searched in every log line and error message the client produced.
 */
import { assert, describe, it } from "@effect/vitest"
import { HttpTransport, McpLog, OAuth } from "@skald/mcp"
import { Effect, Exit } from "effect"
import { fixture } from "./fixtures/fixtures.js"
import { startHttpFixture } from "./http-support.js"
import { readRecords, tempRecordFile } from "./support.js"

const MARKER = "SKALD-OAUTH-MARKER"

/** The fixture, a token store, a log capture, and a client factory over them. */
const setup = (env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const record = yield* tempRecordFile("oauth")
    const server = yield* startHttpFixture(fixture("oauth-http", { FIXTURE_RECORD: record, ...env }))
    const store = OAuth.memoryTokenStore()
    const lines: Array<string> = []
    const sink: McpLog.Sink = { emit: (line) => Effect.sync(() => void lines.push(line.text)) }
    const connect = (config: OAuth.Config = {}, authorizer?: OAuth.Authorizer) =>
      Effect.gen(function*() {
        const auth = yield* OAuth.makeSession(
          "guarded",
          server.url,
          config,
          authorizer ?? OAuth.headlessAuthorizer("http://127.0.0.1:1/callback", "guarded")
        )
        return yield* HttpTransport.client({ server: "guarded", url: server.url, auth })
      }).pipe(Effect.provideService(OAuth.TokenStore, store), Effect.provideService(McpLog.McpLogSink, sink))
    const tokenRequests = () => readRecords(record).filter((r) => r.event === "token")
    return { server, store, lines, connect, tokenRequests, record }
  })

const echo = (client: { callTool: (name: string, args: Record<string, unknown>) => Effect.Effect<any, any> }) =>
  client.callTool("echo", { message: "hi" }).pipe(Effect.map((o) => JSON.stringify(o.result)))

describe("OAuth against a loopback authorization server", () => {
  it.scoped("authorizes on the first 401 (DCR, PKCE, resource) and keeps tokens and client in the store", () =>
    Effect.gen(function*() {
      const t = yield* setup()
      const client = yield* t.connect()
      assert.include(yield* echo(client), "hi")
      const saved = yield* t.store.get("guarded")
      assert.isTrue(saved.tokens?.accessToken.startsWith(MARKER))
      assert.isTrue(saved.tokens?.refreshToken?.startsWith(MARKER))
      assert.strictEqual(saved.client?.clientId, "fixture-client")
      assert.strictEqual(saved.client?.authMethod, "client_secret_post")
      assert.deepStrictEqual(t.tokenRequests().map((r) => r.grant), ["authorization_code"])
      for (const line of t.lines) assert.notInclude(line, MARKER)
    }))

  it.scoped("refreshes before expiry, with the rotated refresh token each time", () =>
    Effect.gen(function*() {
      const t = yield* setup()
      // A margin longer than the token's life: every use is "about to expire".
      const client = yield* t.connect({ refreshMarginMillis: 2 * 3600_000 })
      yield* echo(client)
      yield* echo(client)
      yield* echo(client)
      const grants = t.tokenRequests()
      assert.strictEqual(grants[0]?.grant, "authorization_code")
      const refreshes = grants.filter((r) => r.grant === "refresh_token")
      assert.isAtLeast(refreshes.length, 2)
      // Each refresh presented the token the last one issued (1, 2, 3, …): rotation was followed.
      refreshes.forEach((r, i) => assert.strictEqual(r.refreshToken, i + 1))
      for (const line of t.lines) assert.notInclude(line, MARKER)
    }))

  it.scoped("on a 401 with a token it refreshes and sends the request again", () =>
    Effect.gen(function*() {
      const t = yield* setup()
      const client = yield* t.connect()
      yield* echo(client)
      yield* Effect.promise(() => fetch(new URL("/revoke-access", t.server.url), { method: "POST" }))
      assert.include(yield* echo(client), "hi")
      assert.deepStrictEqual(t.tokenRequests().map((r) => r.grant), ["authorization_code", "refresh_token"])
    }))

  it.scoped("a refused refresh is OAuthRefreshFailed, naming the server and not the token", () =>
    Effect.gen(function*() {
      const t = yield* setup({ OAUTH_REFUSE_REFRESH: "1" })
      const client = yield* t.connect()
      yield* echo(client)
      const session = yield* OAuth.makeSession("guarded", t.server.url, { refreshMarginMillis: 2 * 3600_000 }).pipe(
        Effect.provideService(OAuth.TokenStore, t.store)
      )
      const exit = yield* Effect.exit(session.token)
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
        assert.strictEqual(error?._tag, "OAuthRefreshFailed")
        assert.include(error?.message ?? "", "'guarded'")
        assert.include(error?.message ?? "", "invalid_grant")
        assert.notInclude(error?.message ?? "", MARKER)
      }
    }))

  it.scoped("with no authorizer (the host), a refused refresh fails the request as an expired login", () =>
    Effect.gen(function*() {
      const t = yield* setup({ OAUTH_REFUSE_REFRESH: "1" })
      yield* echo(yield* t.connect())
      yield* Effect.promise(() => fetch(new URL("/revoke-access", t.server.url), { method: "POST" }))
      const hostSession = OAuth.makeSession("guarded", t.server.url).pipe(
        Effect.provideService(OAuth.TokenStore, t.store)
      )
      const exit = yield* Effect.exit(
        Effect.flatMap(hostSession, (auth) => HttpTransport.client({ server: "guarded", url: t.server.url, auth }))
      )
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.strictEqual(error?._tag, "McpHttpError")
      if (error?._tag === "McpHttpError") {
        assert.strictEqual(error.oauth, "expired")
        assert.strictEqual(error.status, 401)
        assert.include(error.message, "login expired")
        assert.include(error.message, "invalid_grant")
        assert.notInclude(error.message, "api key")
        assert.notInclude(error.message, MARKER)
      }
      // Refused once: no second grant was attempted (there is no one to ask).
      assert.deepStrictEqual(t.tokenRequests().map((r) => r.grant), ["authorization_code", "refresh_token"])
    }))

  it.scoped("with no authorizer and no tokens, the request fails as authorization required", () =>
    Effect.gen(function*() {
      const t = yield* setup()
      const exit = yield* Effect.exit(
        OAuth.makeSession("guarded", t.server.url).pipe(
          Effect.flatMap((auth) => HttpTransport.client({ server: "guarded", url: t.server.url, auth })),
          Effect.provideService(OAuth.TokenStore, t.store)
        )
      )
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.strictEqual(error?._tag === "McpHttpError" ? error.oauth : undefined, "required")
      assert.include(error?.message ?? "", "needs authorization")
      assert.deepStrictEqual(t.tokenRequests(), [])
    }))

  it.scoped("with no one to authorize, the request fails with a reason and no secret", () =>
    Effect.gen(function*() {
      const t = yield* setup()
      const refuse: OAuth.Authorizer = {
        redirectUri: "http://127.0.0.1:1/callback",
        authorize: () => Effect.fail(new OAuth.OAuthError({ server: "guarded", reason: "the user declined" }))
      }
      const exit = yield* Effect.exit(t.connect({}, refuse))
      assert.isTrue(Exit.isFailure(exit))
      const text = String(Exit.isFailure(exit) ? exit.cause : "")
      assert.include(text, "the user declined")
      assert.notInclude(text, MARKER)
      for (const line of t.lines) assert.notInclude(line, MARKER)
      // The registered client's secret is in the store, nowhere else it could have gone.
      assert.isTrue((yield* t.store.get("guarded")).client?.clientSecret?.startsWith(MARKER))
    }))

  it("a Bearer challenge's parameters, quoted or not", () => {
    assert.deepStrictEqual(
      OAuth.parseBearerChallenge(`Bearer error="insufficient_scope", scope="a b", resource_metadata=http://x/y`),
      { error: "insufficient_scope", scope: "a b", resource_metadata: "http://x/y" }
    )
    assert.deepStrictEqual(OAuth.parseBearerChallenge(undefined), {})
  })
})
