/**
 * Helpers for the host's tests: a fresh home, the manager over it, entries for fixture servers,
 * and waiting for a server to reach a state.
 */
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import { HostServices, Inbox, InboxLog, McpManager, Paths } from "@skald/server"
import { Context, Effect, Layer } from "effect"
import type { Duration, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fixture, repoRoot } from "./fixtures/fixtures.js"
import { eventuallyEffect, tempDir } from "./support.js"

/** A fresh, empty Skald home, removed with the current scope. */
export const tempHome: Effect.Effect<string, never, Scope.Scope> = tempDir("home")

/**
 * A fresh, empty Skald home for plain (non-Effect) tests: left in place for the run, and removed
 * with the run's temporary folder (test/globalSetup.ts).
 */
export const makeHome = (): string => Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-home-"))

/** Manager options for tests: short timeouts, fast watching and restarts. */
export const fastOptions: McpManager.Options = {
  startTimeout: "20 seconds",
  callTimeout: "20 seconds",
  watchInterval: "100 millis",
  heartbeatInterval: "500 millis",
  restartBase: "200 millis",
  restartMax: "1 second",
  stableAfter: "60 seconds",
  stdinGrace: "1 second",
  termGrace: "1 second"
}

/** The host services over a home. */
export const servicesLayer = (home: string) => HostServices.layer(Paths.Paths.Test(home))

/** The host services over a fresh home that is removed when the layer is released. */
export const tempServicesLayer = Layer.unwrapScoped(Effect.map(tempHome, servicesLayer))

/** A manager over `home`, living as long as the scope, with the host services it stands on. */
export const startManager = (home: string, options: Partial<McpManager.Options> = {}) =>
  Layer.build(Layer.provideMerge(McpManager.McpManager.Default({ ...fastOptions, ...options }), servicesLayer(home)))
    .pipe(
      Effect.map((context) => ({ manager: Context.get(context, McpManager.McpManager), context }))
    )

/**
 * `startManager` with an Inbox and its outcome log in the context: the servers declare
 * elicitation and ask there (inbox/HostedElicitation.ts).
 */
export const startHostedManager = (home: string, options: Partial<McpManager.Options> = {}) =>
  Layer.build(
    Layer.provideMerge(
      McpManager.McpManager.Default({ ...fastOptions, ...options }),
      Layer.provideMerge(Inbox.Inbox.Default, Layer.provideMerge(InboxLog.InboxLog.Default, servicesLayer(home)))
    )
  ).pipe(
    Effect.map((context) => ({ manager: Context.get(context, McpManager.McpManager), context }))
  )

/** A stdio entry for a fixture (`node [--import tsx] <file>`), with extra env templates. */
export const fixtureEntry = (
  name: string,
  fixtureName: string,
  env: Record<string, string> = {},
  extraArgs: ReadonlyArray<string> = []
) => {
  const command = fixture(fixtureName, undefined, extraArgs)
  return McpServerEntry.McpServerEntry.make({
    name: ServerName.make(name),
    config: ServerConfig.StdioServerConfig.make({ command: command.command, args: command.args, env }),
    enabled: true
  })
}

/** A stdio entry for any command line. */
export const commandEntry = (name: string, command: string, args: ReadonlyArray<string>) =>
  McpServerEntry.McpServerEntry.make({
    name: ServerName.make(name),
    config: ServerConfig.StdioServerConfig.make({ command, args, env: {} }),
    enabled: true
  })

/** server-everything over stdio. */
export const everythingEntry = (name: string) =>
  commandEntry(name, process.execPath, [
    Path.join(repoRoot, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    "stdio"
  ])

/** Waits until `name` is listed in `state` (and returns its summary); dies after `within` (a bound against a hang). */
export const waitForState = (
  manager: McpManager.Service,
  name: string,
  state: McpServerEntry.ServerState | "absent",
  within: Duration.DurationInput = "30 seconds"
): Effect.Effect<McpServerEntry.ServerSummary | undefined> =>
  eventuallyEffect(
    Effect.map(manager.list, (all) => all.find((s) => s.name === name)),
    (found) => state === "absent" ? found === undefined : found?.state === state,
    `${name} to be ${state}`,
    within
  )

/** Every file under `dir` (recursively), except those under `exclude`. */
export const filesUnder = (dir: string, exclude: ReadonlyArray<string> = []): Array<string> => {
  const out: Array<string> = []
  const walk = (d: string) => {
    for (const entry of Fs.readdirSync(d, { withFileTypes: true })) {
      const full = Path.join(d, entry.name)
      if (exclude.some((x) => full === x || full.startsWith(`${x}${Path.sep}`))) continue
      if (entry.isDirectory()) walk(full)
      else if (entry.isFile()) out.push(full)
    }
  }
  walk(dir)
  return out
}

/** Polls `get` every 150 ms until `ok`; throws after `within` ms (a bound against a hang, not a measurement). */
export const until = async <A>(
  what: string,
  get: () => Promise<A>,
  ok: (a: A) => boolean,
  within = 60_000
): Promise<A> => {
  const deadline = Date.now() + within
  let last: A = await get()
  while (!ok(last)) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}: ${JSON.stringify(last)}`)
    await new Promise((r) => setTimeout(r, 150))
    last = await get()
  }
  return last
}

export type { Scope }
