/**
 * A write into a closing WebSocket, in real headless Chromium (packages/web `sendOnlyWhileOpen`):
 * the browser discards it and prints *WebSocket is already in CLOSING or CLOSED state* — the line
 * a stopped host's page printed once in a while (a poll or a stream's acknowledgement written
 * between the host's close frame and the page handling the `close` event). The page's sockets send
 * only while open: the same writes print nothing, and the peer receives the same (only what was
 * sent while open).
 */
import { NodeSocketServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { sendOnlyWhileOpen } from "../packages/web/src/Connection.js"
import { launchBrowser, openPage } from "./support/browser.js"

/** Opens a socket to `url` in the page, sends once while open, then again while closing and after it closed. */
const writesAroundClose = async ({ guard, url }: { readonly url: string; readonly guard: string | null }) => {
  const apply = guard === null
    ? (ws: WebSocket) => ws
    : (new Function(`return (${guard})`)() as (ws: WebSocket) => WebSocket)
  const ws = apply(new WebSocket(url))
  await new Promise((resolve) => ws.addEventListener("open", resolve, { once: true }))
  ws.send("while-open")
  ws.close(1000)
  const closing = ws.readyState
  ws.send("while-closing")
  await new Promise((resolve) => ws.addEventListener("close", resolve, { once: true }))
  ws.send("after-close")
  return closing
}

describe("the page's WebSocket", () => {
  it.scopedLive(
    "sends nothing into a closing or closed socket, and the browser prints nothing",
    () =>
      Effect.gen(function*() {
        const received: Array<string> = []
        const server = yield* NodeSocketServer.makeWebSocket({ host: "127.0.0.1", port: 0 })
        yield* Effect.forkScoped(server.run((socket) =>
          socket.runRaw((data) => {
            received.push(typeof data === "string" ? data : new TextDecoder().decode(data))
          }).pipe(Effect.ignore)
        ))
        assert(server.address._tag === "TcpAddress")
        const url = `ws://127.0.0.1:${server.address.port}/`
        const browser = yield* launchBrowser

        // The browser's own behaviour: the writes after close() print the line (twice), and are not sent.
        const plain = yield* openPage(browser)
        const closing = yield* Effect.promise(() => plain.page.evaluate(writesAroundClose, { url, guard: null }))
        assert.strictEqual(closing, 2, "readyState right after close() is CLOSING")
        const line = "console: WebSocket is already in CLOSING or CLOSED state."
        assert.deepStrictEqual(plain.problems(), [line, line])
        assert.deepStrictEqual(received, ["while-open"])

        // The page's sockets: the same writes, nothing printed, the same received.
        received.length = 0
        const guarded = yield* openPage(browser)
        yield* Effect.promise(() =>
          guarded.page.evaluate(writesAroundClose, { url, guard: sendOnlyWhileOpen.toString() })
        )
        assert.deepStrictEqual(guarded.problems(), [])
        assert.deepStrictEqual(received, ["while-open"])
      }),
    { timeout: 60_000 }
  )
})
