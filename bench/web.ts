/**
 * `npm run bench` section `web` (issue 23): the web UI against its two targets.
 *
 * - **Bundle**: `vite build packages/web` (production), then the gzip size of every JavaScript
 *   file it wrote (all chunks together, and the entry the page loads first) against 200 kB.
 * - **First load on loopback**: a real `skald serve` (a fresh home) and headless Chromium through
 *   playwright-core; each load is a new browser context (empty cache, no storage), from navigation
 *   start until the app says *Connected* (a MutationObserver installed before the page's scripts
 *   notes `performance.now()` when the connection badge reads it), and the load event for
 *   comparison. One warm-up load, then the median of `BENCH_WEB_LOADS` (default 7) against 1 s.
 *
 * Chromium is Debian's (`CHROMIUM_PATH` overrides `/usr/bin/chromium`); without it the section
 * fails saying what to install. Alone: `BENCH_SERVERS=web npm run bench`.
 */
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as Zlib from "node:zlib"
import { chromium } from "playwright-core"
import { chromiumArgs, chromiumPath, missingChromium } from "../test/support/chromium.js"
import { fmt, median } from "./machine.js"
import { serve } from "./rpc.js"

const here = Path.dirname(fileURLToPath(import.meta.url))
const root = Path.resolve(here, "../../..")
const web = Path.join(root, "packages/web")

/** The targets (issue 23's acceptance). */
const BUNDLE_TARGET_BYTES = 200_000
const LOAD_TARGET_MS = 1000

const loadsWanted = () => {
  const value = Number(process.env["BENCH_WEB_LOADS"])
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : 7
}

/** Builds the web UI as `npm run build` does and measures its JavaScript, gzip level 9 as Vite reports. */
const bundle = () => {
  execFileSync(process.execPath, [Path.join(root, "node_modules/vite/bin/vite.js"), "build", web], {
    cwd: root,
    env: { ...process.env, NODE_ENV: "production" },
    stdio: ["ignore", "ignore", "inherit"]
  })
  const dist = Path.join(web, "dist")
  const html = Fs.readFileSync(Path.join(dist, "index.html"), "utf8")
  const entry = /<script[^>]*src="\/assets\/([^"]+\.js)"/.exec(html)?.[1]
  const files = Fs.readdirSync(Path.join(dist, "assets")).filter((f) => f.endsWith(".js"))
  const sizes = files.map((file) => ({
    file,
    gzip: Zlib.gzipSync(Fs.readFileSync(Path.join(dist, "assets", file)), { level: 9 }).length
  }))
  return {
    files: sizes.length,
    total: sizes.reduce((sum, s) => sum + s.gzip, 0),
    entry: sizes.find((s) => s.file === entry)?.gzip ?? 0
  }
}

/** Notes when the connection badge first reads "Connected" (runs before the page's own scripts). */
const OBSERVE_CONNECTED = `(() => {
  const observer = new MutationObserver(() => {
    const status = document.querySelector("[role=status]")
    if (status !== null && status.textContent === "Connected") {
      globalThis.__skaldConnectedAt = performance.now()
      observer.disconnect()
    }
  })
  observer.observe(document, { subtree: true, childList: true, characterData: true })
})()`

/** `loads` first loads (plus one warm-up) of a real serve's page; milliseconds since navigation start. */
const firstLoads = (loads: number) =>
  Effect.scoped(Effect.gen(function*() {
    const executablePath = chromiumPath()
    if (!Fs.existsSync(executablePath)) return yield* Effect.dieMessage(`bench web: ${missingChromium(executablePath)}`)
    const host = yield* serve({})
    const browser = yield* Effect.acquireRelease(
      Effect.promise(() => chromium.launch({ executablePath, headless: true, args: [...chromiumArgs] })),
      (b) => Effect.promise(() => b.close())
    )
    const connected: Array<number> = []
    const loaded: Array<number> = []
    for (let i = 0; i < loads + 1; i++) {
      const [toConnected, toLoad] = yield* Effect.promise(async () => {
        const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
        try {
          const page = await context.newPage()
          await page.addInitScript(OBSERVE_CONNECTED)
          await page.goto(host.url)
          // A function, not a string: the page's CSP (no eval) refuses a string predicate.
          await page.waitForFunction(
            () => (globalThis as { readonly __skaldConnectedAt?: number }).__skaldConnectedAt !== undefined,
            undefined,
            { timeout: 30_000 }
          )
          return await page.evaluate<[number, number]>(
            "[globalThis.__skaldConnectedAt, performance.getEntriesByType('navigation')[0].loadEventEnd]"
          )
        } finally {
          await context.close()
        }
      })
      if (i === 0) continue // warm-up: the host's and the OS's first reads of the files
      connected.push(toConnected)
      loaded.push(toLoad)
    }
    return { connected, loaded }
  }))

export const runWebSection = async (): Promise<void> => {
  const loads = loadsWanted()
  // Fail before building when there is no browser to load the page in.
  if (!Fs.existsSync(chromiumPath())) throw new Error(`bench web: ${missingChromium(chromiumPath())}`)
  process.stderr.write(`bench web: vite build, then ${loads} first loads (+1 warm-up) in headless Chromium\n`)
  const size = bundle()
  const { connected, loaded } = await Effect.runPromise(firstLoads(loads))
  const range = (xs: ReadonlyArray<number>) => `${fmt(Math.min(...xs), 0)}–${fmt(Math.max(...xs), 0)}`
  const verdict = (ok: boolean) => ok ? "within" : "**over**"
  process.stdout.write(
    `\n## web (the UI's bundle; first load on loopback, median of ${loads})\n\n` +
      "| measure | value | target | |\n|---|---|---|---|\n" +
      `| JavaScript, gzip (${size.files} files) | ${fmt(size.total / 1000, 1)} kB | 200 kB | ${
        verdict(size.total <= BUNDLE_TARGET_BYTES)
      } |\n` +
      `| of which the entry chunk | ${fmt(size.entry / 1000, 1)} kB | | |\n` +
      `| first load to *Connected* (ms) | ${fmt(median(connected), 0)} (${range(connected)}) | 1,000 ms | ${
        verdict(median(connected) <= LOAD_TARGET_MS)
      } |\n` +
      `| first load to the load event (ms) | ${fmt(median(loaded), 0)} (${range(loaded)}) | | |\n`
  )
}
