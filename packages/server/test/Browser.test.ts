/**
 * Which command `skald mcp login` opens the authorization URL with (host/Browser.ts): $BROWSER's
 * list, `%s` or the URL appended, one argv word per URL whatever it holds; the platform's opener
 * only where it can show something.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Browser from "@skald/server/host/Browser"
import { FastCheck } from "effect"

const url = "http://127.0.0.1:5555/authorize?client_id=a&state=b c;$(rm -rf /)"

describe("Browser.candidates", () => {
  it("$BROWSER: each ':'-separated command, split on spaces, the URL appended as one word", () => {
    assert.deepStrictEqual(Browser.candidates(url, { BROWSER: "firefox --new-window: /opt/b/run" }, "linux"), [
      ["firefox", "--new-window", url],
      ["/opt/b/run", url]
    ])
  })

  it("$BROWSER: %s stands for the URL", () => {
    assert.deepStrictEqual(Browser.candidates(url, { BROWSER: "w3m -o x=%s" }, "darwin"), [["w3m", "-o", `x=${url}`]])
  })

  it("no $BROWSER: open on macOS, xdg-open with a display, nothing without one or on Windows", () => {
    assert.deepStrictEqual(Browser.candidates(url, {}, "darwin"), [["open", url]])
    assert.deepStrictEqual(Browser.candidates(url, { DISPLAY: ":0" }, "linux"), [["xdg-open", url]])
    assert.deepStrictEqual(Browser.candidates(url, { WAYLAND_DISPLAY: "wayland-0" }, "freebsd"), [["xdg-open", url]])
    assert.deepStrictEqual(Browser.candidates(url, {}, "linux"), [])
    assert.deepStrictEqual(Browser.candidates(url, { BROWSER: "  " }, "linux"), [])
    assert.deepStrictEqual(Browser.candidates(url, { DISPLAY: ":0" }, "win32"), [])
  })

  it.prop("the URL is always exactly one argument, last, of every command", [FastCheck.webUrl()], ([u]) => {
    for (const argv of Browser.candidates(u, { BROWSER: "a b:c" }, "linux")) {
      assert.strictEqual(argv.at(-1), u)
      assert.strictEqual(argv.filter((w) => w === u).length, 1)
    }
  })
})
