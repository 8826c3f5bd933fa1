/**
 * The Chat page in real headless Chromium against a real `skald serve` with the stand-in model
 * and real MCP fixture servers (issue 23): a message sent with Enter streams in; the model calls a
 * structured tool (the card shows its result as pretty JSON) and an image tool (the image renders);
 * the turn's usage; a reload replays the session from its history with the same cards; a turn
 * stopped with Esc.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runSkald, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { tempHome } from "./host-support.js"
import { assertNoProblems, launchBrowser, openPage, screenshot } from "./support/browser.js"

/** What the test reads of an `<img>` (the test is compiled without the DOM lib). */
interface Img {
  readonly complete: boolean
  readonly naturalWidth: number
}

const PRETTY = "{\n  \"city\": \"Oslo\",\n  \"temperature\": 21.5,\n  \"conditions\": \"sunny\"\n}"

describe("the Chat page", () => {
  it.scopedLive(
    "a turn with a structured tool (pretty JSON) and an image tool (rendered), its usage; replayed the same after a reload; Esc stops a turn",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        for (const [name, file] of [["weather", "structured"], ["media", "media"]] as const) {
          const f = fixture(file)
          const added = yield* Effect.promise(() =>
            runSkald(["mcp", "add", name, "--home", home, "--", f.command, ...f.args])
          )
          assert.strictEqual(added.status, 0, added.stderr)
          // Their tools are not read-only: allowed by a rule (approvals are the Inbox test's).
          const rule = yield* Effect.promise(() =>
            runSkald(["approvals", "set", "--home", home, `mcp__${name}__*`, "allow"])
          )
          assert.strictEqual(rule.status, 0, rule.stderr)
        }
        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["weather", "media"] } }]),
          ModelStandin.toolCalls([
            { id: "w1", name: "mcp__weather__weather", arguments: { city: "Oslo" } },
            { id: "i1", name: "mcp__media__image", arguments: {} }
          ]),
          ModelStandin.text(["It is ", "sunny in Oslo."], { usage: { prompt_tokens: 30, completion_tokens: 5 } }),
          ModelStandin.hanging(["Counting: one, ", "two, "])
        ])
        const served = yield* Effect.acquireRelease(
          Effect.promise(() =>
            startServe(home, { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" })
          ),
          (s) => Effect.promise(() => stopProcess(s.child))
        )
        const browser = yield* launchBrowser
        const tab = yield* openPage(browser)
        const page = tab.page
        const wait = <A>(what: Promise<A>) => Effect.promise(() => what)
        const step = (what: string) => Effect.sync(() => console.log(`step: ${what}`))

        yield* step("open the chat")
        yield* wait(page.goto(`${served.url}/chat`))
        yield* wait(page.getByRole("status").filter({ hasText: "Connected" }).waitFor())
        const box = page.getByLabel("Message")
        // Shift+Enter is a new line, not a send.
        yield* wait(box.click())
        yield* wait(box.pressSequentially("What is the weather"))
        yield* wait(box.press("Shift+Enter"))
        yield* wait(box.pressSequentially("in Oslo?"))
        assert.strictEqual(yield* wait(box.inputValue()), "What is the weather\nin Oslo?")
        assert.strictEqual(standin.requests.length, 0)
        yield* step("send with Enter")
        yield* wait(box.press("Enter"))
        const transcript = page.getByTestId("transcript")
        yield* wait(transcript.getByText("It is sunny in Oslo.").waitFor())
        // The new session is in the address and the list.
        yield* wait(page.waitForURL(/\/chat\/[^/]+$/))
        const sessionUrl = page.url()

        /** The cards as rendered: the weather card's pretty JSON, the image's decoded width. */
        const checkCards = (when: string) =>
          Effect.gen(function*() {
            const weather = transcript.getByRole("article", { name: "Tool call mcp__weather__weather" })
            yield* wait(weather.waitFor())
            assert.strictEqual(yield* wait(weather.locator(".call-status").textContent()), "done", when)
            const result = weather.getByTestId("result")
            assert.strictEqual(yield* wait(result.getAttribute("class")), "json result", when)
            assert.strictEqual(yield* wait(result.textContent()), PRETTY, when)
            const image = transcript.getByRole("article", { name: "Tool call mcp__media__image" }).locator("img")
            yield* wait(image.waitFor())
            const src = String(yield* wait(image.getAttribute("src")))
            assert.match(src, /\/api\/mcp-media\/[^/]+\.png$/, when)
            yield* wait(page.waitForFunction(
              (el) => (el as unknown as Img).complete && (el as unknown as Img).naturalWidth > 0,
              yield* wait(image.elementHandle())
            ))
            const width = yield* wait(image.evaluate((el) => (el as unknown as Img).naturalWidth))
            assert.isAbove(width, 0, when)
            // The user's message kept its new line.
            yield* wait(
              transcript.locator(".msg.user .text").filter({ hasText: "What is the weather\nin Oslo?" }).waitFor()
            )
          })

        yield* step("the cards, live")
        yield* checkCards("live")
        // Live calls show how long they took; the turn's usage (over its rounds).
        assert.match(
          String(
            yield* wait(transcript.getByRole("article", { name: "Tool call mcp__weather__weather" }).textContent())
          ),
          /\d+(\.\d)? m?s/
        )
        const usage = String(yield* wait(transcript.getByTestId("usage").textContent()))
        assert.match(usage, /^Tokens: \d+ in · \d+ out · 3 rounds$/)
        yield* screenshot(page, "chat-live")

        yield* step("reload: the history replayed")
        yield* wait(page.reload())
        yield* wait(page.getByRole("status").filter({ hasText: "Connected" }).waitFor())
        assert.strictEqual(page.url(), sessionUrl)
        yield* wait(transcript.getByText("It is sunny in Oslo.").waitFor())
        yield* checkCards("replayed")
        const session = page.getByRole("complementary", { name: "Sessions" }).locator("a[aria-current=page]")
        assert.strictEqual(yield* wait(session.count()), 1)
        yield* screenshot(page, "chat-replayed")

        yield* step("a turn stopped with Esc")
        yield* wait(box.fill("Count slowly"))
        yield* wait(box.press("Enter"))
        yield* wait(transcript.getByText("Counting: one, two,").waitFor())
        // Reloaded mid-turn: the history, and the running turn attached (its text streamed so far).
        yield* wait(page.reload())
        yield* wait(page.getByRole("status").filter({ hasText: "Connected" }).waitFor())
        yield* wait(transcript.getByText("Counting: one, two,").waitFor())
        yield* wait(transcript.getByText("It is sunny in Oslo.").waitFor())
        assert.strictEqual(yield* wait(transcript.locator(".turn").count()), 2)
        yield* wait(page.getByRole("complementary", { name: "Sessions" }).getByText("(running)").waitFor())
        yield* wait(page.getByRole("button", { name: "Stop (Esc)", disabled: false }).waitFor())
        yield* wait(page.keyboard.press("Escape"))
        yield* wait(transcript.getByText("Stopped.").waitFor())
        yield* wait(page.getByRole("button", { name: "Stop (Esc)", disabled: true }).waitFor())
        yield* standin.awaitAborted(3)
        assertNoProblems(tab)
      }),
    { timeout: 120_000 }
  )
})
