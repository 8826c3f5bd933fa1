/**
 * Real headless Chromium for the web UI's tests, through playwright-core (recipes/real-components.md
 * §3): Debian's `chromium` (`/usr/bin/chromium`, or `CHROMIUM_PATH`), launched so that nothing
 * leaves loopback (`--host-resolver-rules`: every name but 127.0.0.1 and localhost is unresolvable).
 * A missing Chromium fails the test, saying what to install; it never skips.
 *
 * Each page collects its console errors, uncaught exceptions and failed requests, for the test to
 * assert empty; screenshots go to `test-artifacts/web/` (gitignored), kept after the run.
 */
import { assert } from "@effect/vitest"
import { Effect, Exit } from "effect"
import type { Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { repoRoot } from "../fixtures/fixtures.js"
import { chromiumArgs, chromiumPath, missingChromium } from "./chromium.js"

export { chromiumArgs, chromiumPath, missingChromium } from "./chromium.js"

/** A headless Chromium, closed with the scope; fails the test when the binary is missing. */
export const launchBrowser: Effect.Effect<Browser, never, Scope.Scope> = Effect.gen(function*() {
  const executablePath = chromiumPath()
  if (!Fs.existsSync(executablePath)) return yield* Effect.dieMessage(missingChromium(executablePath))
  return yield* Effect.acquireRelease(
    Effect.promise(() => chromium.launch({ executablePath, headless: true, args: [...chromiumArgs] })),
    (browser) => Effect.promise(() => browser.close())
  )
})

/** A page and what went wrong on it so far. */
export interface TestPage {
  readonly page: Page
  /** Console errors, uncaught exceptions and failed requests, in order. */
  readonly problems: () => ReadonlyArray<string>
}

/** A fresh context and page of `browser` (closed with the scope) that records its problems. */
export const openPage = (browser: Browser): Effect.Effect<TestPage, never, Scope.Scope> =>
  Effect.gen(function*() {
    const context = yield* Effect.acquireRelease(
      Effect.promise(() => browser.newContext({ viewport: { width: 1280, height: 800 } })),
      (context) => Effect.promise(() => context.close())
    )
    const page = yield* Effect.promise(() => context.newPage())
    const problems: Array<string> = []
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`)
    })
    page.on("pageerror", (error) => problems.push(`exception: ${error.message}`))
    page.on("requestfailed", (request) => {
      const failure = request.failure()?.errorText ?? "failed"
      // Cancelled by the browser itself (the page navigated on while, e.g., its favicon loaded): not
      // a failure of the page or the host. A refused or broken request has another error text.
      if (failure === "net::ERR_ABORTED") return
      problems.push(`request ${request.method()} ${request.url()}: ${failure}`)
    })
    // A test that fails leaves what the page showed on stderr: a CI run keeps no screenshot.
    yield* Effect.addFinalizer((exit) =>
      Exit.isSuccess(exit) ? Effect.void : Effect.promise(async () => {
        const text = await page.locator("body").innerText({ timeout: 5_000 }).catch((e) => `(unreadable: ${e})`)
        console.error(
          `[browser] the test failed on ${page.url()}\n[browser] problems: ${JSON.stringify(problems)}\n` +
            `[browser] the page's text:\n${text.slice(0, 4000)}`
        )
      })
    )
    return { page, problems: () => [...problems] }
  })

/** Asserts the page had no console error, exception or failed request. */
export const assertNoProblems = (page: TestPage) =>
  assert.deepStrictEqual(page.problems(), [], `problems on the page: ${JSON.stringify(page.problems())}`)

/** The folder screenshots are kept in. */
export const artifactsDir = Path.join(repoRoot, "test-artifacts/web")

/** Saves a full-page screenshot as `test-artifacts/web/<name>.png` and returns its path. */
export const screenshot = (page: Page, name: string): Effect.Effect<string> => {
  const file = Path.join(artifactsDir, `${name}.png`)
  return Effect.sync(() => Fs.mkdirSync(artifactsDir, { recursive: true })).pipe(
    Effect.zipRight(Effect.promise(() => page.screenshot({ path: file, fullPage: true }))),
    Effect.as(file)
  )
}
