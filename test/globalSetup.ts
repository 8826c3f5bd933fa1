import { execFileSync, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

/** The newest modification time of the files under `path` (0 when it does not exist). */
const newest = (path: string): number => {
  if (!Fs.existsSync(path)) return 0
  const stat = Fs.statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return Math.max(stat.mtimeMs, ...Fs.readdirSync(path).map((name) => newest(Path.join(path, name))))
}

// The browser tests (test/support/browser.ts) need Debian's chromium. As root on a machine with
// apt-get, a missing one is installed here, once, before any test (.ci/setup-chromium.sh, what
// .ci/run runs); anywhere else nothing is installed and the browser tests fail saying what to
// install. (The SSH suite installs its sshd the same way.)
const ensureChromium = (root: string) => {
  const chromium = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"
  if (Fs.existsSync(chromium) || process.getuid?.() !== 0 || !Fs.existsSync("/usr/bin/apt-get")) return
  const run = spawnSync("bash", [Path.join(root, ".ci/setup-chromium.sh")], { cwd: root, stdio: "inherit" })
  if (run.status !== 0) process.stderr.write("chromium setup failed: the browser tests will fail (see above)\n")
}

/**
 * Every test's temporary files go under one folder of this run, removed when the run ends: the
 * tests' homes, databases and fixture folders (made with `os.tmpdir()`), and what the processes they
 * spawn make there (TMPDIR is inherited), are not left behind in the machine's /tmp run after run.
 * Set before the workers start (after chromium's install), so they and their children see it.
 * Returns the teardown.
 */
const ownTemporaryFolder = () => {
  const folder = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-tests-"))
  // The mode of /tmp itself, which it stands in for: what a test runs as another user (apt-get's
  // sandbox user installing sshd) still finds a temporary folder it may write to.
  Fs.chmodSync(folder, 0o1777)
  process.env["TMPDIR"] = folder
  return () => Fs.rmSync(folder, { recursive: true, force: true, maxRetries: 3 })
}

// The CLI tests run the real `skald` binary, which loads the built output: bring it up to date,
// then bundle it as `npm run build` does (the shim runs the bundle only while it is current), and
// bundle the Promise face, which `@skald/mcp/promise` is (test/promise.test.ts runs it).
// The web UI (served by `skald serve`, driven by the browser tests) is rebuilt when any of its
// sources is newer than its built index.html (or @skald/domain's output, which it bundles).
export default function setup() {
  const root = Path.resolve(import.meta.dirname, "..")
  ensureChromium(root)
  const removeTemporary = ownTemporaryFolder()
  execFileSync(process.execPath, [Path.join(root, "node_modules/typescript/bin/tsc"), "-b", "tsconfig.build.json"], {
    cwd: root,
    stdio: "inherit"
  })
  execFileSync(process.execPath, [Path.join(root, "packages/server/scripts/bundle.js")], {
    cwd: root,
    stdio: "inherit"
  })
  execFileSync(process.execPath, [Path.join(root, "packages/mcp/scripts/bundle.js")], { cwd: root, stdio: "inherit" })
  const web = Path.join(root, "packages/web")
  const sources = ["src", "public", "index.html", "vite.config.ts", "importRule.ts"].map((p) => Path.join(web, p))
  const built = newest(Path.join(web, "dist/index.html"))
  if (Math.max(...sources.map(newest), newest(Path.join(root, "packages/domain/dist"))) > built) {
    // NODE_ENV: vitest sets it to "test", which would make Vite bundle React's development build.
    execFileSync(process.execPath, [Path.join(root, "node_modules/vite/bin/vite.js"), "build", web], {
      cwd: root,
      stdio: "inherit",
      env: { ...process.env, NODE_ENV: "production" }
    })
  }
  return removeTemporary
}
