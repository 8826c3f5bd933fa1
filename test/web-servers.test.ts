/**
 * The Servers page in real headless Chromium against a real `skald serve` (issue 23): status live,
 * a server disabled and enabled from the page as `skald mcp list` sees it, its tools with their
 * input schemas and its log; the host restarted — the page says so, refuses a call while
 * disconnected, reconnects and re-subscribes the log.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ChildProcess } from "node:child_process"
import { runSkald, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import { tempHome, until } from "./host-support.js"
import { assertNoProblems, launchBrowser, openPage, screenshot } from "./support/browser.js"

interface Summary {
  readonly name: string
  readonly state: string
  readonly enabled: boolean
}

const list = async (home: string): Promise<Array<Summary> | string> => {
  const out = await runSkald(["mcp", "list", "--json", "--home", home])
  return out.status === 0 ? (JSON.parse(out.stdout) as Array<Summary>) : out.stderr
}

const stateOf = (l: Array<Summary> | string, name: string) =>
  typeof l === "string" ? undefined : l.find((s) => s.name === name)

describe("the Servers page", () => {
  it.scoped(
    "status live, disable and enable from the page, tools, log; the host restarted and recovered",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const echo = fixture("echo")
        const added = yield* Effect.promise(() =>
          runSkald(["mcp", "add", "echo", "--home", home, "--", echo.command, ...echo.args])
        )
        assert.strictEqual(added.status, 0, added.stderr)
        // A raw server that pushes 50 `event/eager` events as soon as it is initialized.
        const eager = fixture("eager-events")
        const addedEager = yield* Effect.promise(() =>
          runSkald(["mcp", "add", "eager", "--home", home, "--", eager.command, ...eager.args])
        )
        assert.strictEqual(addedEager.status, 0, addedEager.stderr)
        let child: ChildProcess | undefined
        yield* Effect.addFinalizer(() => child === undefined ? Effect.void : Effect.promise(() => stopProcess(child!)))
        const first = yield* Effect.promise(() => startServe(home))
        child = first.child
        const url = first.url
        const port = new URL(url).port

        const browser = yield* launchBrowser
        const tab = yield* openPage(browser)
        const page = tab.page
        const wait = (what: Promise<unknown>) => Effect.promise(() => what)
        /** Says where the test is (shown when it fails). */
        const step = (what: string) => Effect.sync(() => console.log(`step: ${what}`))
        yield* step("open the page")
        yield* wait(page.goto(url))
        const badge = page.getByRole("status")
        yield* wait(badge.filter({ hasText: "Connected" }).waitFor())
        const echoState = page.getByTestId("state-echo")
        yield* wait(echoState.filter({ hasText: /^connected/ }).waitFor())

        yield* step("disable")
        // Disabled from the page: the registry says so (skald mcp list), the page shows it.
        yield* wait(page.getByRole("button", { name: "Disable echo" }).click())
        const disabled = yield* Effect.promise(() =>
          until("echo disabled", () => list(home), (l) => stateOf(l, "echo")?.state === "disabled")
        )
        assert.isFalse(stateOf(disabled, "echo")!.enabled)
        yield* wait(echoState.filter({ hasText: "disabled" }).waitFor())
        yield* step("enable")
        // And enabled again.
        yield* wait(page.getByRole("button", { name: "Enable echo" }).click())
        yield* Effect.promise(() =>
          until("echo connected", () => list(home), (l) => stateOf(l, "echo")?.state === "connected")
        )
        yield* wait(echoState.filter({ hasText: /^connected/ }).waitFor())

        yield* step("tools and log")
        // Its tools with their input schemas, and its log.
        yield* wait(page.getByRole("button", { name: "echo", exact: true }).click())
        const detail = page.getByRole("region", { name: "Server echo" })
        yield* wait(detail.getByRole("heading", { name: /^Tools \(\d+\)$/ }).waitFor())
        const firstTool = detail.locator(".tools summary").first()
        yield* wait(firstTool.click())
        const schema = yield* wait(detail.locator("pre.json").first().textContent())
        assert.include(String(schema), "\"type\": \"object\"")
        const log = page.getByTestId("log")
        yield* wait(log.filter({ hasText: /\S/ }).waitFor())
        yield* screenshot(page, "servers-page")
        // Another server's recent events, newest first.
        yield* wait(page.getByRole("button", { name: "eager", exact: true }).click())
        const eagerDetail = page.getByRole("region", { name: "Server eager" })
        const newest = eagerDetail.locator(".events li").first()
        yield* wait(newest.filter({ hasText: "event/eager" }).filter({ hasText: "\"n\": 49" }).waitFor())
        assert.strictEqual(yield* wait(eagerDetail.locator(".events li").count()), 20)
        yield* screenshot(page, "servers-events")
        yield* wait(page.getByRole("button", { name: "echo", exact: true }).click())
        yield* wait(detail.getByRole("heading", { name: /^Tools \(\d+\)$/ }).waitFor())
        assertNoProblems(tab)

        yield* step("stop the host")
        // The host goes away: the page says so, and a call made now says it was not sent.
        yield* Effect.promise(() => stopProcess(child!))
        child = undefined
        yield* wait(badge.filter({ hasText: "Disconnected from the host" }).waitFor())
        yield* wait(page.getByTestId("stale").waitFor())
        yield* wait(page.getByRole("button", { name: "Restart echo" }).click())
        yield* wait(page.getByRole("alert").filter({ hasText: "Not connected to the Skald host" }).waitFor())
        yield* screenshot(page, "servers-disconnected")

        yield* step("start the host again")
        // It comes back on the same port: the page reconnects and re-subscribes (status, log).
        const logBefore = String(yield* wait(log.textContent()))
        const second = yield* Effect.promise(() => startServe(home, { SKALD_PORT: port }))
        child = second.child
        yield* wait(badge.filter({ hasText: "Connected" }).waitFor())
        yield* wait(echoState.filter({ hasText: /^connected/ }).waitFor())
        yield* wait(page.getByTestId("stale").waitFor({ state: "detached" }))
        yield* wait(detail.getByRole("heading", { name: /^Tools \([1-9]\d*\)$/ }).waitFor())
        yield* step("log re-subscribed")
        // The log's stream was subscribed again: it shows what the second host wrote.
        yield* Effect.promise(() => until("the log followed again", () => log.textContent(), (t) => t !== logBefore))
        yield* step("restart from the page")
        // And works: a restart from the page goes through.
        yield* wait(page.getByRole("button", { name: "Restart echo" }).click())
        yield* wait(echoState.filter({ hasText: /^connected/ }).waitFor())
        yield* screenshot(page, "servers-reconnected")

        yield* step("remove from the page")
        // Removed from the page, after a confirmation (Cancel first: nothing happens).
        yield* wait(page.getByRole("button", { name: "Remove echo…" }).click())
        yield* wait(page.getByRole("button", { name: "Cancel" }).click())
        assert.isDefined(stateOf(yield* Effect.promise(() => list(home)), "echo"))
        yield* wait(page.getByRole("button", { name: "Remove echo…" }).click())
        yield* wait(page.getByRole("button", { name: "Remove echo", exact: true }).click())
        yield* Effect.promise(() =>
          until("echo removed", () => list(home), (l) => typeof l !== "string" && stateOf(l, "echo") === undefined)
        )
        yield* wait(echoState.waitFor({ state: "detached" }))

        // The only problems (none before the host stopped: asserted above): the browser's own lines
        // for the reconnect attempts while the host was down — the WebSocket's, and the token
        // check's (`GET /rpc/auth`, after every 5 refused: its failed request, and its console
        // line, which names no address).
        const rpc = `ws://127.0.0.1:${port}/rpc`
        const auth = `http://127.0.0.1:${port}/rpc/auth`
        const refused = "console: Failed to load resource: net::ERR_CONNECTION_REFUSED"
        const others = tab.problems().filter((p) => !p.includes(rpc) && !p.includes(auth) && p !== refused)
        assert.deepStrictEqual(others, [], JSON.stringify(others))
      }),
    { timeout: 120_000 }
  )
})
