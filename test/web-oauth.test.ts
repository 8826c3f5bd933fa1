/**
 * Authorizing an OAuth server from the web UI, in real headless Chromium against a real `skald
 * serve` and the loopback authorization server (fixtures/oauth-http.ts): the host cannot ask anyone,
 * so the server fails as needing authorization and the Servers page offers "Authorize…"; the click
 * opens a tab, the host's `Mcp.Login` sends it to the authorization URL, the server redirects to the
 * host's own listener on 127.0.0.1, and the server reconnects with its tokens — which are in the
 * secret store and nowhere on the page.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ChildProcess } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runSkald, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import { tempHome } from "./host-support.js"
import { startHttpFixture } from "./http-support.js"
import { assertNoProblems, launchBrowser, openPage } from "./support/browser.js"

const MARKER = "SKALD-OAUTH-MARKER"

const stateOf = async (home: string, name: string): Promise<string | undefined> => {
  const out = await runSkald(["mcp", "list", "--json", "--home", home])
  if (out.status !== 0) return undefined
  return (JSON.parse(out.stdout) as Array<{ name: string; state: string }>).find((s) => s.name === name)?.state
}

const wait = (what: Promise<unknown>) => Effect.promise(() => what)

/** `skald serve` over `home` (stopped with the scope) and a page open on it. */
const servedPage = (home: string) =>
  Effect.gen(function*() {
    let child: ChildProcess | undefined
    yield* Effect.addFinalizer(() => child === undefined ? Effect.void : Effect.promise(() => stopProcess(child!)))
    const serve = yield* Effect.promise(() => startServe(home))
    child = serve.child
    const tab = yield* openPage(yield* launchBrowser)
    yield* wait(tab.page.goto(serve.url))
    return { serve, tab, page: tab.page }
  })

describe("the Servers page and OAuth", () => {
  it.scoped(
    "a server that needs a login is authorized from the page; it connects, and no token reaches the page",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const record = Path.join(home, "fixture.jsonl")
        const server = yield* startHttpFixture(fixture("oauth-http", { FIXTURE_RECORD: record }))
        const added = yield* Effect.promise(() =>
          runSkald(["mcp", "add", "guarded", "--http", server.url, "--home", home])
        )
        assert.strictEqual(added.status, 0, added.stderr)
        const { page, serve, tab } = yield* servedPage(home)
        // No login yet: the host cannot ask anyone, so the server fails and the page offers the login.
        yield* wait(page.getByTestId("state-guarded").filter({ hasText: "failed" }).waitFor())
        const authorize = page.getByRole("button", { name: "Authorize guarded" })
        yield* wait(authorize.waitFor())
        // A server that needs no login is offered none.
        assert.strictEqual(yield* Effect.promise(() => page.getByRole("button", { name: /^Authorize / }).count()), 1)

        const popup = page.waitForEvent("popup")
        yield* wait(authorize.click())
        const opened = yield* Effect.promise(() => popup)
        // The tab went to the authorization server, which approved at once and redirected to the host.
        yield* wait(opened.getByText("authorization received").waitFor())
        yield* wait(page.getByText("Authorized: the server reconnects with its new login.").waitFor())
        yield* wait(page.getByTestId("state-guarded").filter({ hasText: /^connected/ }).waitFor())
        assert.strictEqual(yield* Effect.promise(() => stateOf(home, "guarded")), "connected")
        // The button goes with the failure.
        yield* wait(authorize.waitFor({ state: "detached" }))

        const events = Fs.readFileSync(record, "utf8").trim().split("\n").map((l) => JSON.parse(l))
        assert.strictEqual(events.filter((e) => e.event === "authorize").length, 1)
        // One authorization; a connection attempt the host began before the tokens were stored may
        // have renewed them with the refresh token since (a 401, then a refresh), never a second login.
        const grants = events.filter((e) => e.event === "token").map((e) => e.grant)
        assert.strictEqual(grants[0], "authorization_code", JSON.stringify(events))
        assert.isTrue(grants.slice(1).every((g) => g === "refresh_token"), JSON.stringify(events))
        // The tokens: in the secret store; not on the page, not in the host's output.
        const text = yield* Effect.promise(() => page.locator("body").innerText())
        assert.notInclude(text, MARKER)
        assert.notInclude(serve.stderr(), MARKER)
        assert.isTrue(
          Fs.readdirSync(Path.join(home, "secrets", "vars")).includes("MCP_GUARDED__OAUTH"),
          "the tokens are stored as MCP_GUARDED__OAUTH"
        )
        assertNoProblems(tab)
      }),
    120_000
  )

  it.scoped(
    "a machine client added from the page: client id, its secret as a reference, client credentials; connected, no login",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const secret = `${MARKER}-web-machine-secret`
        const server = yield* startHttpFixture(
          fixture("oauth-http", { OAUTH_CLIENT_ID: "web-bot", OAUTH_CLIENT_SECRET: secret })
        )
        const stored = yield* Effect.promise(() =>
          runSkald(["secret", "set", "WEB_BOT_SECRET", "--home", home], { input: secret })
        )
        assert.strictEqual(stored.status, 0, stored.stderr)
        const { page, serve, tab } = yield* servedPage(home)
        yield* wait(page.getByRole("button", { name: "Add a server…" }).click())
        const form = page.getByRole("form", { name: "Add a server" })
        yield* wait(form.getByLabel("HTTP (a URL)").check())
        yield* wait(form.getByLabel("Name (required)").fill("bot"))
        yield* wait(form.getByLabel("URL (required)").fill(server.url))
        yield* wait(form.getByText("OAuth client (optional)").click())
        yield* wait(form.getByLabel("OAuth client id").fill("web-bot"))
        // The secret itself: refused, and the field emptied at once.
        yield* wait(form.getByLabel("OAuth client secret").fill(secret))
        yield* wait(form.getByLabel("OAuth grant").selectOption("client_credentials"))
        yield* wait(form.getByRole("button", { name: "Add", exact: true }).click())
        const alert = form.getByRole("alert").filter({ hasText: "The server was not added" })
        yield* wait(alert.filter({ hasText: "OAuth client secret: a secret is given as a reference" }).waitFor())
        assert.strictEqual(yield* Effect.promise(() => form.getByLabel("OAuth client secret").inputValue()), "")
        yield* wait(form.getByLabel("OAuth client secret").fill("${WEB_BOT_SECRET}"))
        yield* wait(form.getByRole("button", { name: "Add", exact: true }).click())
        yield* wait(page.getByTestId("state-bot").filter({ hasText: /^connected/ }).waitFor())
        // No login was needed, so none is offered.
        assert.strictEqual(yield* Effect.promise(() => page.getByRole("button", { name: "Authorize bot" }).count()), 0)
        const shown = yield* Effect.promise(() => runSkald(["mcp", "show", "bot", "--json", "--home", home]))
        assert.deepStrictEqual((JSON.parse(shown.stdout) as { oauth?: unknown }).oauth, {
          clientId: "web-bot",
          clientSecret: "${WEB_BOT_SECRET}",
          grant: "client_credentials"
        })
        const html = yield* Effect.promise(() => page.evaluate<string>("document.documentElement.outerHTML"))
        assert.notInclude(html, MARKER)
        assert.notInclude(serve.stderr(), MARKER)
        assertNoProblems(tab)
      }),
    120_000
  )
})
