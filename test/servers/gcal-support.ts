/**
 * Helpers for the Google Calendar server's tests: the stand-in and a secrets folder as scoped
 * resources, a credentials file made from a stand-in grant, the server's command line, pushed
 * events collected from a client, and the setup script as a child process.
 */
import { assert } from "@effect/vitest"
import type { JsonRpc, McpClient } from "@skald/mcp"
import { Effect, Stream } from "effect"
import type { Scope } from "effect"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as Path from "node:path"
import type { FixtureCommand } from "../fixtures/fixtures.js"
import { repoRoot } from "../fixtures/fixtures.js"
import { eventually, tempDir } from "../support.js"
import { GoogleStandIn, type StandInOptions } from "./google-standin.js"

export const serverScript = Path.join(repoRoot, "scripts", "gcal-server.ts")
export const setupScript = Path.join(repoRoot, "scripts", "gcal-oauth-setup.ts")

/** The stand-in, closed with the scope. */
export const standIn = (options: StandInOptions = {}): Effect.Effect<GoogleStandIn, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.promise(() => GoogleStandIn.start(options)), (s) => Effect.promise(() => s.close()))

/** A fresh secrets folder, removed with the scope. */
export const secretsDir: Effect.Effect<string, never, Scope.Scope> = tempDir("gcal")

export const credsFile = (dir: string): string => Path.join(dir, "google_creds.json")
export const stateFile = (dir: string): string => Path.join(dir, "gcal_poll_state.json")

export interface Creds {
  client_id: string
  client_secret: string
  refresh_token: string
  access_token?: string
  expiry?: string
  scope?: string
  token_type?: string
}

/** Writes `google_creds.json` (0600) from a new stand-in grant; returns what was written. */
export const writeCreds = (dir: string, google: GoogleStandIn, overrides: Partial<Creds> = {}): Creds => {
  const grant = google.grant()
  const creds: Creds = {
    ...google.client,
    refresh_token: grant.refresh_token,
    access_token: grant.access_token,
    expiry: new Date(Date.now() + grant.expires_in * 1000).toISOString(),
    scope: "https://www.googleapis.com/auth/calendar",
    token_type: "Bearer",
    ...overrides
  }
  fs.writeFileSync(credsFile(dir), JSON.stringify(creds, null, 2), { mode: 0o600 })
  return creds
}

export const readCreds = (dir: string): Creds => JSON.parse(fs.readFileSync(credsFile(dir), "utf8")) as Creds

export const fileMode = (file: string): number => fs.statSync(file).mode & 0o777

/** `node --import tsx scripts/gcal-server.ts` against the stand-in, with the secrets in `dir`. */
export const serverCommand = (
  google: GoogleStandIn,
  dir: string,
  env: Readonly<Record<string, string>> = {}
): FixtureCommand => ({
  command: process.execPath,
  args: ["--import", "tsx", serverScript],
  cwd: repoRoot,
  env: { ...google.env, SKALD_SECRETS_DIR: dir, GCAL_POLL_SECONDS: "0", ...env }
})

/** Every pushed (non-protocol) notification the client receives from now on, as it arrives. */
export const collectEvents = (
  client: McpClient.Service
): Effect.Effect<Array<JsonRpc.Notification>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const seen: Array<JsonRpc.Notification> = []
    yield* client.events.pipe(
      Stream.runForEach((n) => Effect.sync(() => seen.push(n))),
      Effect.forkScoped
    )
    yield* Effect.yieldNow()
    return seen
  })

/** The poller's listings of the stand-in so far (each carries `updatedMin`). */
export const pollRequests = (google: GoogleStandIn) =>
  google.calendarRequests().filter((r) => r.method === "GET" && r.query.updatedMin !== undefined)

/** Waits (bounded) until the stand-in has answered `count` more poller listings than `after`. */
export const awaitPolls = (google: GoogleStandIn, after: number, count: number, what: string) =>
  eventually(() => pollRequests(google).filter((r) => r.status !== 0).length >= after + count, what, "20 seconds")

// --- a child process (the setup script) ----------------------------------------------------------

export interface Child {
  readonly stdout: () => string
  readonly stderr: () => string
  /** The exit code, once it exited. */
  readonly exitCode: () => number | null | undefined
  readonly exited: Effect.Effect<number | null>
}

/** Runs `node --import tsx SCRIPT ARGS…`; killed with the scope if it still runs. */
export const runScript = (
  script: string,
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>
): Effect.Effect<Child, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = ChildProcess.spawn(process.execPath, ["--import", "tsx", script, ...args], {
        cwd: repoRoot,
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let out = ""
      let err = ""
      let code: number | null | undefined
      child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d))
      child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d))
      const exited = new Promise<number | null>((resolve) => {
        child.on("close", (c) => {
          code = c
          resolve(c)
        })
      })
      return {
        process: child,
        child: {
          stdout: () => out,
          stderr: () => err,
          exitCode: () => code,
          exited: Effect.promise(() => exited).pipe(
            Effect.timeoutFail({
              duration: "30 seconds",
              onTimeout: () => new Error(`${script} did not exit; stderr:\n${err}`)
            }),
            Effect.orDie
          )
        } satisfies Child
      }
    }),
    ({ process: child }) =>
      Effect.sync(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      })
  ).pipe(Effect.map(({ child }) => child))

/** The consent URL the setup printed, once it has. */
export const awaitConsentUrl = (child: Child, authUrl: string) =>
  Effect.gen(function*() {
    yield* eventually(
      () => child.stderr().includes(authUrl) || child.exitCode() !== undefined,
      "the consent URL",
      "30 seconds"
    )
    const line = child.stderr().split("\n").map((l) => l.trim()).find((l) => l.startsWith(authUrl))
    if (line === undefined) return assert.fail(`no consent URL printed; stderr:\n${child.stderr()}`)
    return new URL(line)
  })
