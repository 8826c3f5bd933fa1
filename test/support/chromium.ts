/**
 * Which Chromium the browser tests and the bench run, and how (recipes/real-components.md §3):
 * Debian's `chromium` (`/usr/bin/chromium`, or `CHROMIUM_PATH`), headless, nothing leaving
 * loopback (`--host-resolver-rules`: every name but 127.0.0.1 and localhost is unresolvable).
 * No test framework here: `bench/web.ts` uses it too.
 */

/** The Chromium binary: `CHROMIUM_PATH`, else Debian's `/usr/bin/chromium`. */
export const chromiumPath = (): string => process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"

/** Chromium's arguments (the recipe's): headless, no background traffic, loopback only. */
export const chromiumArgs: ReadonlyArray<string> = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
]

/** What a test (or the bench) says when Chromium is missing. */
export const missingChromium = (path: string): string =>
  `Chromium is not installed at ${path}. Install it (Debian, as root): ` +
  "`apt-get update && apt-get install -y --no-install-recommends chromium chromium-driver fonts-liberation` " +
  "or `bash .ci/setup-chromium.sh`; or point CHROMIUM_PATH at a Chromium binary"
