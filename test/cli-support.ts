/**
 * Running the built `skald` binary in tests, as a user would.
 */
import * as Effect from "effect/Effect"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as Path from "node:path"

/** The repository root, where `skald` runs. */
export const root = Path.resolve(import.meta.dirname, "..")

/** The committed shim that loads the built CLI. */
export const skald = Path.join(root, "packages/server/bin/skald.js")

/** How a run ended. */
export interface Run {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `skald ARGS…` to its end, with extra environment variables and optional stdin. */
export const runSkald = (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly input?: string } = {}
): Promise<Run> => runScript(skald, args, options)

/** Runs `node SCRIPT ARGS…` to its end, from the repository root (as runSkald runs the shim). */
export const runScript = (
  script: string,
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly input?: string } = {}
): Promise<Run> =>
  new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [script, ...args],
      { cwd: root, env: { ...process.env, ...options.env } },
      (error, stdout, stderr) =>
        resolve({ status: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr })
    )
    child.stdin!.end(options.input ?? "")
  })

/** Starts `skald serve --home HOME [ARGS…]`; resolves once it says it serves (and, with SKALD_PORT, where). */
export const startServe = (
  home: string,
  env: Record<string, string> = {},
  args: ReadonlyArray<string> = []
): Promise<{ readonly child: ChildProcess; readonly stderr: () => string; readonly url: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [skald, "serve", "--home", home, ...args], {
      cwd: root,
      env: { ...process.env, SKALD_PORT: "0", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let err = ""
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString()
      const m = /HTTP endpoints on (http:\/\/127\.0\.0\.1:\d+)/.exec(err)
      if (m !== null && err.includes("serving MCP servers")) resolve({ child, stderr: () => err, url: m[1]! })
    })
    child.once("exit", (code) => reject(new Error(`skald serve exited early (${code}): ${err}`)))
  })

/** SIGTERM, then waits for the exit; returns the exit code. */
export const stopProcess = (child: ChildProcess): Promise<number | null> =>
  new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode)
    child.once("exit", (code) => resolve(code))
    child.kill("SIGTERM")
  })

/**
 * Starts `skald chat ARGS…` on a pseudo-terminal (util-linux `script`), giving its process and
 * everything it has printed so far (stdout and stderr together, as a terminal shows them). The
 * scope kills it (its pty's hang-up ends the chat), so a failing test leaves no process behind.
 */
export const spawnTty = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const command = [process.execPath, skald, "chat", ...args].map((a) => `'${a}'`).join(" ")
      const child = spawn("script", ["-qfc", command, "/dev/null"], {
        cwd: root,
        env: { ...process.env, ...env },
        stdio: ["pipe", "pipe", "pipe"]
      })
      let out = ""
      child.stdout.on("data", (d: Buffer) => (out += d.toString()))
      child.stderr.on("data", (d: Buffer) => (out += d.toString()))
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
      return { child, output: () => out, exited }
    }),
    ({ child }) => Effect.sync(() => void (child.exitCode === null && child.kill("SIGKILL")))
  )
