/**
 * The Chat page keeps a turn across a dropped connection (issue 23): real headless Chromium
 * against a real `skald serve` with the stand-in model streaming slowly; the page's WebSocket is
 * routed through Playwright (`routeWebSocket`, forwarding to the host) so the test can cut it
 * mid-turn while the host runs on. The page reconnects, `Agent.Attach`es from the number of events
 * it had, and the answer ends whole: every piece once, none missing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { WebSocketRoute } from "playwright-core"
import { startServe, stopProcess } from "./cli-support.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { tempHome } from "./host-support.js"
import { modelEnv } from "./serve-support.js"
import { launchBrowser, openPage, screenshot } from "./support/browser.js"

const PIECES = Array.from({ length: 12 }, (_, i) => `w${i + 1} `)

describe("the Chat page across a dropped connection", () => {
  it.scopedLive(
    "the socket cut mid-turn: the page reconnects, attaches from its last event, the answer is whole",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const standin = yield* ModelStandin.start([{ ...ModelStandin.text(PIECES), eventDelay: 250 }])
        const served = yield* Effect.acquireRelease(
          Effect.promise(() => startServe(home, modelEnv(standin.url))),
          (s) => Effect.promise(() => stopProcess(s.child))
        )
        const browser = yield* launchBrowser
        const tab = yield* openPage(browser)
        const page = tab.page
        const wait = <A>(what: Promise<A>) => Effect.promise(() => what)
        // Every WebSocket of the page goes through here to the host; what the page sends is kept.
        const sockets: Array<WebSocketRoute> = []
        const sent: Array<Array<string>> = []
        yield* wait(page.routeWebSocket(/\/rpc$/, (ws) => {
          const server = ws.connectToServer()
          const mine: Array<string> = []
          sockets.push(ws)
          sent.push(mine)
          ws.onMessage((m) => {
            mine.push(String(m))
            server.send(m)
          })
        }))

        yield* wait(page.goto(`${served.url}/chat`))
        const badge = page.getByRole("status")
        yield* wait(badge.filter({ hasText: "Connected" }).waitFor())
        yield* wait(page.getByLabel("Message").fill("count to twelve"))
        yield* wait(page.getByLabel("Message").press("Enter"))
        const transcript = page.getByTestId("transcript")
        const answer = transcript.locator(".msg.assistant .text")
        yield* wait(answer.filter({ hasText: "w2 " }).waitFor())

        // Cut the socket mid-turn (the host and the turn go on).
        assert.strictEqual(sockets.length, 1)
        yield* wait(sockets[0]!.close({ code: 4000, reason: "cut by the test" }))
        yield* wait(transcript.getByTestId("usage").waitFor())
        assert.strictEqual(yield* wait(answer.textContent()), PIECES.join(""))
        yield* wait(badge.filter({ hasText: "Connected" }).waitFor())
        yield* screenshot(page, "chat-reconnected")

        // A second socket, on which the page attached (not sent again).
        assert.strictEqual(sockets.length, 2)
        const second = sent[1]!.join("\n")
        assert.include(second, "Agent.Attach")
        assert.notInclude(second, "Agent.Send")
        // From the events it had (its TurnStarted and at least two pieces), not from the start.
        const from = Number(/"fromIndex":(\d+)/.exec(second)?.[1])
        assert.isAtLeast(from, 3, second)
        assert.strictEqual(standin.requests.length, 1)
        const problems = tab.problems()
        assert.deepStrictEqual(problems, [], JSON.stringify(problems))
      }),
    { timeout: 120_000 }
  )
})
