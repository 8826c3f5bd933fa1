/**
 * The Inbox page in real headless Chromium against a real `skald serve` with the stand-in model
 * and the SDK fixture `elicit` (issue 23): a turn sent from the Chat page calls a tool that is not
 * read-only, so serve holds it for approval — the item shows up live (the navigation counts it),
 * is allowed from the page; the server then asks for a password — a masked input — answered from
 * the page: the server gets the value (it records only that it matched), the turn ends, and the
 * marker is afterwards in no DOM node nor input value, no table of skald.db, no file under the
 * home (logs included) and not in serve's own output.
 */
import { SqliteClient } from "@effect/sql-sqlite-node"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { stopProcess } from "./cli-support.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { filesUnder, tempHome } from "./host-support.js"
import { addFixture, modelEnv, serve, vaultScript } from "./serve-support.js"
import { readRecords, tempFile } from "./support.js"
import { assertNoProblems, launchBrowser, openPage, screenshot } from "./support/browser.js"

const MARKER = "web-marker-5c2e-never-kept"

/** Every row of every table of the database, as text. */
const dumpTables = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
  const out: Array<string> = []
  for (const { name } of tables) out.push(name, JSON.stringify(yield* sql.unsafe(`SELECT * FROM "${name}"`)))
  return { count: tables.length, text: out.join("\n") }
})

describe("the Inbox page", () => {
  it.scopedLive(
    "an approval allowed and a password elicitation answered in the page; the marker kept nowhere",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const record = tempFile("web-elicit")
        yield* addFixture(home, "vault", "elicit", [
          "--env",
          `FIXTURE_RECORD=${record}`,
          "--env",
          "EXPECTED_SECRET=${WEB_SECRET}"
        ])
        const standin = yield* ModelStandin.start(vaultScript("Opened."))
        // The expected value reaches the server as a reference resolved from serve's environment
        // (`${WEB_SECRET}`), so that no registry row holds it.
        const served = yield* serve(home, { ...modelEnv(standin.url), WEB_SECRET: MARKER })
        const browser = yield* launchBrowser
        const tab = yield* openPage(browser)
        const page = tab.page
        const wait = <A>(what: Promise<A>) => Effect.promise(() => what)
        const step = (what: string) => Effect.sync(() => console.log(`step: ${what}`))

        yield* step("a turn from the chat")
        yield* wait(page.goto(served.url))
        yield* wait(page.getByRole("status").filter({ hasText: "Connected" }).waitFor())
        yield* wait(page.getByTestId("state-vault").filter({ hasText: /^connected/ }).waitFor())
        const nav = page.getByRole("navigation", { name: "Pages" })
        yield* wait(nav.getByRole("link", { name: "Chat" }).click())
        yield* wait(page.getByLabel("Message").fill("open the vault"))
        yield* wait(page.getByLabel("Message").press("Enter"))
        // The call waits for approval: the navigation counts it on every page.
        yield* wait(nav.getByRole("link", { name: "Inbox (1)" }).click())
        assert.match(page.url(), /\/inbox$/)

        yield* step("the approval")
        const approval = page.locator("li[data-kind=Approval]")
        yield* wait(approval.waitFor())
        assert.include(String(yield* wait(approval.textContent())), "mcp__vault__ask_secret")
        assert.include(String(yield* wait(approval.textContent())), "not marked read-only")
        yield* screenshot(page, "inbox-approval")
        yield* wait(page.getByRole("button", { name: "Allow mcp__vault__ask_secret", exact: true }).click())
        yield* wait(approval.waitFor({ state: "detached" }))

        yield* step("the password elicitation")
        const question = page.locator("li[data-kind=Elicitation]")
        yield* wait(question.waitFor())
        assert.include(String(yield* wait(question.textContent())), "Enter the password for the vault")
        // A countdown to the item's deadline.
        assert.match(String(yield* wait(question.getByRole("timer").textContent())), /^(\d+ min )?\d+ s left$/)
        const password = question.getByLabel("Password (required)")
        // Masked: a password input (the field is named `password`, the seed's rule).
        assert.strictEqual(yield* wait(password.getAttribute("type")), "password")
        yield* wait(password.fill(MARKER))
        assert.strictEqual(yield* wait(password.inputValue()), MARKER)
        yield* screenshot(page, "inbox-elicitation")
        yield* wait(question.getByRole("button", { name: "Submit" }).click())
        yield* wait(question.waitFor({ state: "detached" }))
        yield* wait(page.getByText("Nothing waits for you.").waitFor())
        yield* wait(nav.getByRole("link", { name: "Inbox", exact: true }).waitFor())

        yield* step("the turn ends; the server got the value")
        // The Chat link goes back to the session (replayed, its turn attached if still running).
        yield* wait(nav.getByRole("link", { name: "Chat" }).click())
        assert.match(page.url(), /\/chat\/[^/]+$/)
        const transcript = page.getByTestId("transcript")
        yield* wait(transcript.getByText("Opened.").waitFor())
        const card = transcript.getByRole("article", { name: "Tool call mcp__vault__ask_secret" })
        assert.strictEqual(yield* wait(card.getByTestId("result").textContent()), "ask_secret: accept")
        assert.deepInclude(readRecords(record).find((r) => r.event === "secret"), { matched: true })

        yield* step("the marker is nowhere")
        // No DOM node, no input's value (the inbox page again, then the chat: both visited).
        for (const path of ["/inbox", "/chat"]) {
          yield* wait(nav.getByRole("link", { name: path === "/inbox" ? "Inbox" : "Chat", exact: true }).click())
          yield* wait(page.waitForURL(new RegExp(`${path}(/|$)`)))
          const html = yield* wait(page.evaluate<string>("document.documentElement.outerHTML"))
          assert.isAbove(html.length, 500)
          assert.notInclude(html, MARKER)
          const values = yield* wait(page.evaluate<Array<string>>(
            "Array.from(document.querySelectorAll('input, textarea, select')).map((e) => e.value)"
          ))
          assert.notInclude(values.join("\n"), MARKER)
        }
        assertNoProblems(tab)

        // The host stopped (its files flushed): no table, no file under the home, not its output.
        yield* Effect.promise(() => stopProcess(served.child))
        assert.notInclude(served.stderr(), MARKER)
        const db = Path.join(home, "data", "skald.db")
        const tables = yield* dumpTables.pipe(Effect.provide(SqliteClient.layer({ filename: db })))
        assert.isAbove(tables.count, 3)
        assert.include(tables.text, "ask_secret: accept")
        assert.notInclude(tables.text, MARKER)
        const files = filesUnder(home)
        assert.isTrue(files.some((file) => file.endsWith(".log")), files.join("\n"))
        const leaks = files.filter((file) => Fs.readFileSync(file).includes(MARKER))
        assert.deepStrictEqual(leaks, [], "the marker leaked into files")
      }),
    { timeout: 120_000 }
  )
})
