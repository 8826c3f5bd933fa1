/**
 * The Inbox page's other elicitations, in real headless Chromium against a real `skald serve` with
 * the stand-in model (issue 23): a form with every field kind (fixture `elicit-form`: integer and
 * number with bounds, boolean, an enum, a titled enum, a multi-select, required and optional
 * fields, defaults) shown with the right inputs and defaults and answered — the content the server
 * receives checked value by value, typed (numbers as numbers, the boolean as a boolean, the
 * multi-select as an array, the empty optional field left out); then a URL-mode elicitation
 * (fixture `elicit`, `url_flow` with `visit`): the page shows the link, **Open the page** opens it
 * in a new tab (which visits the server's one-time page) and lists it as waiting; the server
 * completes the elicitation and the tool's answer says so.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runSkald, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { tempHome, until } from "./host-support.js"
import { modelEnv } from "./serve-support.js"
import { readRecords, tempFile } from "./support.js"
import { assertNoProblems, launchBrowser, openPage, screenshot } from "./support/browser.js"

describe("the Inbox page's form kinds and URL mode", () => {
  it.scopedLive(
    "every field kind answered with typed values; a URL elicitation opened and completed",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const record = tempFile("web-kinds")
        for (const [name, file] of [["form", "elicit-form"], ["vault", "elicit"]] as const) {
          const f = fixture(file)
          const added = yield* Effect.promise(() =>
            runSkald([
              "mcp",
              "add",
              name,
              "--home",
              home,
              "--env",
              `FIXTURE_RECORD=${record}`,
              "--",
              f.command,
              ...f.args
            ])
          )
          assert.strictEqual(added.status, 0, added.stderr)
          // Approvals are the other Inbox test's: these tools are allowed by a rule.
          const rule = yield* Effect.promise(() =>
            runSkald(["approvals", "set", "--home", home, `mcp__${name}__*`, "allow"])
          )
          assert.strictEqual(rule.status, 0, rule.stderr)
        }
        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls([{ id: "g0", name: "activate_tools", arguments: { groups: ["form", "vault"] } }]),
          ModelStandin.toolCalls([{ id: "p1", name: "mcp__form__ask_profile", arguments: {} }]),
          ModelStandin.toolCalls([{ id: "u1", name: "mcp__vault__url_flow", arguments: { visit: true } }]),
          ModelStandin.text("All done.")
        ])
        const served = yield* Effect.acquireRelease(
          Effect.promise(() => startServe(home, modelEnv(standin.url))),
          (s) => Effect.promise(() => stopProcess(s.child))
        )
        const browser = yield* launchBrowser
        const tab = yield* openPage(browser)
        const page = tab.page
        const wait = <A>(what: Promise<A>) => Effect.promise(() => what)

        yield* wait(page.goto(`${served.url}/chat`))
        yield* wait(page.getByRole("status").filter({ hasText: "Connected" }).waitFor())
        yield* wait(page.getByLabel("Message").fill("fill in my profile"))
        yield* wait(page.getByLabel("Message").press("Enter"))
        const nav = page.getByRole("navigation", { name: "Pages" })
        yield* wait(nav.getByRole("link", { name: "Inbox (1)" }).click())

        // The form: each kind its input, bounds and defaults as asked.
        const form = page.getByRole("form", { name: "Tell us about you" })
        yield* wait(form.waitFor())
        const age = form.getByLabel("Age (required)")
        assert.deepStrictEqual(
          yield* wait(age.evaluate((e) => {
            const i = e as unknown as { type: string; step: string; min: string; max: string; required: boolean }
            return [i.type, i.step, i.min, i.max, i.required]
          })),
          ["number", "1", "0", "150", true]
        )
        const ratio = form.getByLabel("Ratio", { exact: true })
        assert.strictEqual(yield* wait(ratio.inputValue()), "0.5")
        assert.strictEqual(yield* wait(ratio.getAttribute("step")), "any")
        const subscribe = form.getByLabel("Subscribe")
        assert.strictEqual(yield* wait(subscribe.getAttribute("type")), "checkbox")
        assert.isTrue(yield* wait(subscribe.isChecked()))
        const color = form.getByLabel("Color (required)")
        assert.deepStrictEqual(
          yield* wait(color.locator("option").allTextContents()),
          ["—", "red", "green", "blue"]
        )
        const size = form.getByLabel("Size", { exact: true })
        assert.deepStrictEqual(yield* wait(size.locator("option").allTextContents()), ["—", "Small", "Large"])
        assert.strictEqual(yield* wait(size.inputValue()), "l")
        const tags = form.getByRole("group", { name: "Tags" })
        assert.isTrue(yield* wait(tags.getByLabel("b").isChecked()))
        assert.isFalse(yield* wait(tags.getByLabel("a").isChecked()))
        const nickname = form.getByLabel("Nickname", { exact: true })
        assert.strictEqual(yield* wait(nickname.inputValue()), "")

        // Out of bounds: the browser keeps the form (nothing sent); then a valid answer.
        yield* wait(age.fill("151"))
        yield* wait(color.selectOption("green"))
        yield* wait(form.getByRole("button", { name: "Submit" }).click())
        assert.isFalse(
          yield* wait(age.evaluate((e) => (e as unknown as { validity: { valid: boolean } }).validity.valid))
        )
        assert.isUndefined(readRecords(record).find((r) => r.event === "profile"))
        yield* wait(age.fill("42"))
        yield* wait(subscribe.uncheck())
        yield* wait(size.selectOption({ label: "Small" }))
        yield* wait(tags.getByLabel("a").check())
        yield* screenshot(page, "inbox-form-kinds")
        yield* wait(form.getByRole("button", { name: "Submit" }).click())
        const answered = yield* Effect.promise(() =>
          until(
            "the profile answered",
            async () => readRecords(record).find((r) => r.event === "profile"),
            (r) => r !== undefined
          )
        )
        assert.deepStrictEqual(answered, {
          event: "profile",
          action: "accept",
          content: { age: 42, ratio: 0.5, subscribe: false, color: "green", size: "s", tags: ["a", "b"] }
        })

        // URL mode: the link shown; opened in a new tab (which visits it), listed as waiting.
        const question = page.locator("li[data-kind=Elicitation]")
        yield* wait(question.filter({ hasText: "Open this page to finish signing in" }).waitFor())
        const link = question.getByRole("link")
        const href = String(yield* wait(link.getAttribute("href")))
        assert.match(href, /^http:\/\/127\.0\.0\.1:\d+\//)
        assert.strictEqual(yield* wait(link.getAttribute("rel")), "noopener noreferrer")
        const popup = page.context().waitForEvent("page")
        yield* wait(question.getByRole("button", { name: "Open the page" }).click())
        const opened = yield* wait(popup)
        yield* wait(opened.waitForLoadState())
        assert.strictEqual(opened.url(), href)
        yield* wait(page.getByRole("heading", { name: "Opened in another tab" }).waitFor())
        yield* wait(page.locator(".waiting a", { hasText: href }).waitFor())
        yield* screenshot(page, "inbox-url-waiting")
        // The server completed it: the tool's answer says so, and the turn ends.
        yield* wait(nav.getByRole("link", { name: "Chat" }).click())
        const transcript = page.getByTestId("transcript")
        yield* wait(transcript.getByText("All done.").waitFor())
        const card = transcript.getByRole("article", { name: "Tool call mcp__vault__url_flow" })
        assert.match(String(yield* wait(card.getByTestId("result").textContent())), /^url_flow: accept, completed \S+$/)
        assert.isDefined(readRecords(record).find((r) => r.event === "completion-sent"))
        assertNoProblems(tab)
      }),
    { timeout: 120_000 }
  )
})
