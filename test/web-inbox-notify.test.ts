/**
 * The Inbox page's notifications, in real headless Chromium against a real `skald serve` with the
 * stand-in model (issue 23): the demo server (registered by serve's first run, ticking) pushes
 * events into the host's table; `skald tic run` runs one tick in the host, whose model calls the
 * TIC agent's `notify` twice — the Inbox page, already open, shows both live (title, when posted,
 * the briefing with its line breaks, a link to the session they came from, which opens its transcript); one dismissed in the page is gone for
 * `skald inbox` and the RPC list too, and logged `dismissed`; a reload shows what is still pending,
 * and after the last is dismissed, nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import * as RpcHost from "@skald/server/cli/RpcHost"
import { InboxLog } from "@skald/server/inbox/InboxLog"
import { Context, Effect, Layer } from "effect"
import { runSkald, startServe, stopProcess } from "./cli-support.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { servicesLayer, tempHome, until } from "./host-support.js"
import { modelEnv } from "./serve-support.js"
import { assertNoProblems, launchBrowser, openPage, screenshot } from "./support/browser.js"

const BRIEFING = "The demo server ticked twice.\nNothing needs an answer; look when you have a minute."
const UNTITLED = "Second briefing, untitled: its title is this line.\nAnd a second line."

/** The outcome log of the home, read from its database in this process. */
const outcomes = (home: string) =>
  Effect.scoped(
    Effect.flatMap(
      Layer.build(Layer.provideMerge(InboxLog.Default, servicesLayer(home))),
      (context) => Context.get(context, InboxLog).list
    )
  ).pipe(Effect.orDie)

describe("the Inbox page's notifications", () => {
  it.scopedLive(
    "the TIC agent's notify shown live; dismissed in the page, gone for skald inbox; reloads agree",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls([
            { id: "n1", name: "notify", arguments: { briefing: BRIEFING, title: "Demo ticks" } },
            { id: "n2", name: "notify", arguments: { briefing: UNTITLED } }
          ]),
          ModelStandin.text("Read the ticks; notified twice.")
        ])
        const served = yield* Effect.acquireRelease(
          Effect.promise(() =>
            startServe(home, {
              ...modelEnv(standin.url),
              // No scheduled ticks: the one tick is `skald tic run`'s. The first run's demo server ticks.
              SKALD_TIC_INTERVAL: "0",
              DEMO_TICK_SECONDS: "0.3"
            })
          ),
          (s) => Effect.promise(() => stopProcess(s.child))
        )
        const browser = yield* launchBrowser
        const tab = yield* openPage(browser)
        const page = tab.page
        const wait = <A>(what: Promise<A>) => Effect.promise(() => what)
        const nav = page.getByRole("navigation", { name: "Pages" })
        const notifications = page.locator("li[data-kind=Notification]")

        yield* wait(page.goto(`${served.url}/inbox`))
        yield* wait(page.getByRole("status").filter({ hasText: "Connected" }).waitFor())
        yield* wait(page.getByText("Nothing waits for you.").waitFor())

        // The demo server's events, in the host's table.
        yield* Effect.promise(() =>
          until(
            "two demo ticks recorded",
            async () => JSON.parse((await runSkald(["events", "--json", "--pending", "--home", home])).stdout || "[]"),
            (l: Array<{ method: string }>) => l.filter((e) => e.method === "event/demo_tick").length >= 2
          )
        )
        const run = yield* Effect.promise(() => runSkald(["tic", "run", "--json", "--home", home]))
        assert.strictEqual(run.status, 0, run.stderr)
        const report = JSON.parse(run.stdout)
        assert.strictEqual(report.outcome, "done")
        assert.isAbove(report.processed.length, 1)
        assert.deepStrictEqual(
          report.notified.map((n: { title: string; body: string }) => [n.title, n.body]),
          [["Demo ticks", BRIEFING], ["Second briefing, untitled: its title is this line.", UNTITLED]]
        )
        assert.strictEqual(standin.requests.length, 2)
        assert.include(JSON.stringify(standin.requests[0]!.body.messages), "demo event/demo_tick")
        const [first, second] = report.notified as Array<{ id: string }>

        // Live: the watch already open shows both, oldest first, with the briefing's line breaks.
        yield* wait(nav.getByRole("link", { name: "Inbox (2)" }).waitFor())
        const shown = yield* wait(
          page.getByRole("article", { name: `Notification ${first!.id}` }).waitFor().then(() =>
            notifications.evaluateAll((lis) =>
              lis.map((li) => {
                const e = li as unknown as {
                  querySelector: (s: string) => { innerText: string } | null
                }
                return [e.querySelector("h3")!.innerText, e.querySelector(".body")!.innerText]
              })
            )
          )
        )
        assert.deepStrictEqual(shown, [
          ["Demo ticks", BRIEFING],
          ["Second briefing, untitled: its title is this line.", UNTITLED]
        ])
        const card = page.getByRole("article", { name: `Notification ${first!.id}` })
        const client = yield* RpcHost.connectTo(served.url, undefined)
        const pending = yield* client.Inbox.List()
        assert.deepStrictEqual(pending.map((i) => i.id), [first!.id, second!.id])
        assert.strictEqual(
          yield* wait(card.locator("time").getAttribute("datetime")),
          new Date(pending[0]!.createdAt).toISOString()
        )
        const session = card.getByRole("link", { name: "Open the session" })
        assert.strictEqual(yield* wait(session.getAttribute("href")), `/chat/${report.sessionId}`)
        yield* screenshot(page, "inbox-notifications")

        // A reload: both still pending.
        yield* wait(page.reload())
        yield* wait(nav.getByRole("link", { name: "Inbox (2)" }).waitFor())
        assert.strictEqual(yield* wait(notifications.count()), 2)

        // Dismissed in the page: gone here, for `skald inbox` and the RPC list; logged.
        yield* wait(card.getByRole("button", { name: "Dismiss Demo ticks" }).click())
        yield* wait(card.waitFor({ state: "detached" }))
        yield* wait(nav.getByRole("link", { name: "Inbox (1)" }).waitFor())
        const listed = yield* Effect.promise(() => runSkald(["inbox", "--json", "--home", home]))
        assert.strictEqual(listed.status, 0, listed.stderr)
        assert.deepStrictEqual(JSON.parse(listed.stdout).map((i: { id: string }) => i.id), [second!.id])
        assert.deepStrictEqual((yield* client.Inbox.List()).map((i) => i.id), [second!.id])
        const logged = yield* outcomes(home)
        assert.deepStrictEqual(
          logged.map((r) => [r.id, r.kind, r.tool, r.session_id, r.outcome]),
          [[first!.id, "notification", "notify", report.sessionId, "dismissed"]]
        )

        // A reload shows the one still pending; dismissed too, and nothing is left, reloaded or not.
        yield* wait(page.reload())
        yield* wait(nav.getByRole("link", { name: "Inbox (1)" }).waitFor())
        assert.deepStrictEqual(yield* wait(notifications.locator("h3").allInnerTexts()), [
          "Second briefing, untitled: its title is this line."
        ])
        // Its session link opens the TIC turn's transcript (the batch, both notify calls, the answer).
        yield* wait(notifications.getByRole("link", { name: "Open the session" }).click())
        assert.strictEqual(new URL(page.url()).pathname, `/chat/${report.sessionId}`)
        const transcript = page.getByTestId("transcript")
        yield* wait(transcript.getByText("Read the ticks; notified twice.").waitFor())
        assert.strictEqual(yield* wait(transcript.getByRole("article", { name: "Tool call notify" }).count()), 2)
        yield* wait(nav.getByRole("link", { name: "Inbox (1)" }).click())
        yield* wait(
          page.getByRole("button", { name: "Dismiss Second briefing, untitled: its title is this line." }).click()
        )
        yield* wait(page.getByText("Nothing waits for you.").waitFor())
        yield* wait(nav.getByRole("link", { name: "Inbox", exact: true }).waitFor())
        yield* wait(page.reload())
        yield* wait(page.getByText("Nothing waits for you.").waitFor())
        assert.strictEqual(yield* wait(notifications.count()), 0)
        assert.deepStrictEqual((yield* client.Inbox.List()).map((i) => i.id), [])
        assert.deepStrictEqual((yield* outcomes(home)).map((r) => [r.id, r.outcome]), [
          [first!.id, "dismissed"],
          [second!.id, "dismissed"]
        ])
        assertNoProblems(tab)
      }),
    { timeout: 120_000 }
  )
})
