/**
 * The access token in the page (issue 23), in real headless Chromium against a real `skald serve`
 * given a token (still on 127.0.0.1, where a given token is required just the same): without it
 * the page says it needs one and opens no WebSocket (so the browser logs no refused upgrade); a
 * wrong one pasted is refused; the right one pasted connects; opened with `#token=…` the page
 * takes it, removes it from the address and keeps it in sessionStorage only — after which the
 * token is in no DOM node, no input and no address; serve's stderr (not a terminal) never prints it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ChildProcess } from "node:child_process"
import { startServe, stopProcess } from "./cli-support.js"
import { tempHome } from "./host-support.js"
import { assertNoProblems, launchBrowser, openPage, screenshot } from "./support/browser.js"

const TOKEN = "web-token-7b3e91c0a5d2f4e8"

describe("the page and the host's access token", () => {
  it.scopedLive(
    "asks for the token, refuses a wrong one, takes it from the fragment and hides it",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        let child: ChildProcess | undefined
        yield* Effect.addFinalizer(() => child === undefined ? Effect.void : Effect.promise(() => stopProcess(child!)))
        const served = yield* Effect.promise(() => startServe(home, { SKALD_TOKEN: TOKEN }))
        child = served.child
        const browser = yield* launchBrowser
        const wait = <A>(what: Promise<A>) => Effect.promise(() => what)
        const sockets: Array<string> = []

        // No token: the page says it needs one (and opened no WebSocket).
        const tab = yield* openPage(browser)
        const page = tab.page
        page.on("websocket", (ws) => sockets.push(ws.url()))
        yield* wait(page.goto(served.url))
        const badge = page.getByRole("status").first()
        yield* wait(badge.filter({ hasText: "The host needs its access token" }).waitFor())
        const prompt = page.getByRole("form", { name: "Access token" })
        yield* wait(prompt.getByRole("alert").filter({ hasText: "This host needs its access token" }).waitFor())
        assert.deepStrictEqual(sockets, [])
        yield* screenshot(page, "token-needed")

        // A wrong one: refused, asked again.
        yield* wait(prompt.getByLabel("Access token").fill("not-the-token-0000"))
        yield* wait(prompt.getByRole("button", { name: "Connect" }).click())
        yield* wait(badge.filter({ hasText: "The host refused the access token" }).waitFor())
        yield* wait(prompt.getByRole("alert").filter({ hasText: "did not accept the access token" }).waitFor())
        assert.deepStrictEqual(sockets, [])

        // The right one: connected, the page works.
        yield* wait(prompt.getByLabel("Access token").fill(TOKEN))
        yield* wait(prompt.getByRole("button", { name: "Connect" }).click())
        yield* wait(badge.filter({ hasText: "Connected" }).waitFor())
        yield* wait(page.getByTestId("state-demo").filter({ hasText: /^connected/ }).waitFor())
        yield* wait(prompt.waitFor({ state: "detached" }))
        /** Whether the token is in the page's DOM, an input's value, or its address. */
        const hidden = (p: typeof page) =>
          p.evaluate<{ html: boolean; inputs: boolean; address: boolean }>(`(() => {
          const token = ${JSON.stringify(TOKEN)}
          return {
            html: document.documentElement.outerHTML.includes(token),
            inputs: Array.from(document.querySelectorAll("input, textarea")).some((i) => i.value.includes(token)),
            address: location.href.includes(token)
          }
        })()`)
        assert.deepStrictEqual(yield* wait(hidden(page)), { html: false, inputs: false, address: false })
        assert.lengthOf(sockets, 1)
        assertNoProblems(tab)

        // Opened with the token in the fragment: taken, removed from the address, kept for the tab.
        const linked = yield* openPage(browser)
        yield* wait(linked.page.goto(`${served.url}/servers#token=${TOKEN}`))
        yield* wait(linked.page.getByRole("status").first().filter({ hasText: "Connected" }).waitFor())
        assert.strictEqual(linked.page.url(), `${served.url}/servers`)
        assert.strictEqual(
          yield* wait(linked.page.evaluate<string | null>("sessionStorage.getItem('skald-token')")),
          TOKEN
        )
        assert.deepStrictEqual(yield* wait(hidden(linked.page)), { html: false, inputs: false, address: false })
        // A reload keeps it (this tab's storage), with no token in the address.
        yield* wait(linked.page.reload())
        yield* wait(linked.page.getByTestId("state-demo").filter({ hasText: /^connected/ }).waitFor())
        yield* screenshot(linked.page, "token-connected")
        assertNoProblems(linked)

        // serve's stderr is no terminal here: it names the web UI but never prints the token.
        assert.include(served.stderr(), `skald: web UI at ${served.url}/ (append #token=`)
        assert.notInclude(served.stderr(), TOKEN)
      }),
    { timeout: 90_000 }
  )
})
