/**
 * The command line's hints for OAuth failures (cli/CliError.ts): `skald mcp login NAME` for a
 * registered server, whichever form the failure takes (the session's own errors, or the HTTP
 * error marked as OAuth's, as a failed server's status cause keeps it); never the api-key hint for
 * those; for a refused configured client, its secret (a login would not help); and for the ad-hoc
 * `--http URL` (named by its host) no `mcp login` of a name that is not registered.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpError } from "@skald/domain"
import { OAuth } from "@skald/mcp"
import { hintFor, statusHint } from "@skald/server/cli/CliError"

const http = (server: string, oauth?: McpError.OAuthFailure) =>
  new McpError.McpHttpError({
    server,
    url: "http://127.0.0.1:1/mcp",
    status: 401,
    reason: "invalid_grant",
    ...(oauth === undefined ? {} : { oauth })
  })

describe("OAuth hints", () => {
  it("a registered server: log in (again), for every form of the failure", () => {
    assert.strictEqual(hintFor(http("notion", "expired")), "skald: authorize it again with `skald mcp login notion`")
    assert.strictEqual(hintFor(http("notion", "failed")), "skald: authorize it again with `skald mcp login notion`")
    assert.strictEqual(hintFor(http("notion", "required")), "skald: authorize it with `skald mcp login notion`")
    assert.strictEqual(
      hintFor(new OAuth.OAuthRefreshFailed({ server: "notion", reason: "x" })),
      "skald: authorize it again with `skald mcp login notion`"
    )
    assert.strictEqual(
      hintFor(new OAuth.OAuthAuthorizationRequired({ server: "notion" })),
      "skald: authorize it with `skald mcp login notion`"
    )
  })

  it("a failed server's status cause (the error's plain fields) gets the same hint", () => {
    const { _tag, server, url, status, reason, oauth } = http("notion", "expired")
    assert.strictEqual(
      statusHint({ name: "notion", errorCause: { _tag, server, url, status, reason, oauth: oauth! } }),
      "skald: 'notion': authorize it again with `skald mcp login notion`"
    )
  })

  it("without the marker a 401 is still the api key's", () => {
    assert.include(hintFor(http("notion")) ?? "", "--api-key-env")
    assert.notInclude(hintFor(http("notion", "expired")) ?? "", "api")
  })

  it("a refused configured client: correct its secret; a login is not the hint", () => {
    for (
      const hint of [
        hintFor(http("jobs", "client")),
        hintFor(new OAuth.OAuthError({ server: "jobs", reason: "invalid_client", clientRefused: true }))
      ]
    ) {
      assert.include(hint ?? "", "skald mcp show jobs")
      assert.include(hint ?? "", "skald secret set VAR")
      assert.include(hint ?? "", "skald mcp add jobs --replace")
      assert.notInclude(hint ?? "", "mcp login")
    }
    assert.include(http("jobs", "client").message, "refused the configured OAuth client id or secret")
    assert.include(
      new OAuth.OAuthError({ server: "jobs", reason: "invalid_client", clientRefused: true }).message,
      "authorizing again does not help"
    )
    // Any other OAuthError is still a login's.
    assert.strictEqual(
      hintFor(new OAuth.OAuthError({ server: "jobs", reason: "x" })),
      "skald: authorize it again with `skald mcp login jobs`"
    )
  })

  it("`--http URL` (a host, not a server name): no `mcp login` of that host", () => {
    for (
      const hint of [
        hintFor(http("127.0.0.1:8080", "failed")),
        hintFor(new OAuth.OAuthError({ server: "example.com", reason: "x" }))
      ]
    ) {
      assert.include(hint ?? "", "keeps no authorization")
      assert.notInclude(hint ?? "", "mcp login 127.0.0.1")
      assert.notInclude(hint ?? "", "mcp login example.com")
    }
  })
})
