/**
 * The very first run of a home: `skald serve` registers the offline demo server
 * (`scripts/demo-server.ts`), so a newcomer's `skald mcp list` shows a connected server with
 * tools. A marker in `app_meta` records that it happened, so removing every server later does
 * not bring the demo back.
 *
 * @since 0.1.0
 */
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath, pathToFileURL } from "node:url"
import { AppMetaRepo } from "./AppMetaRepo.js"
import { McpServerRepo } from "./McpServerRepo.js"
import { nowIso } from "./Time.js"

/** The `app_meta` key of the marker. */
export const MARKER = "first_run_done"

/** The demo server's script, from this file (src/host or dist/host of packages/server). */
export const demoScript = (): string => fileURLToPath(new URL("../../../../scripts/demo-server.ts", import.meta.url))

/**
 * The demo's own settings that the first run's environment may hold. A server does not inherit the
 * host's environment (ServerEnvironment.ts), so the ones set when the demo is registered are
 * stored with its registration (none of them is a secret).
 */
const demoSettings = ["DEMO_TICK_SECONDS", "DEMO_PORT", "DEMO_RECORD_FILE"] as const

/** The demo server's entry: `node --import <tsx loader> scripts/demo-server.ts`, all absolute. */
export const demoEntry = (
  environment: Readonly<Record<string, string | undefined>> = process.env
): Option.Option<McpServerEntry.McpServerEntry> => {
  const script = demoScript()
  if (!Fs.existsSync(script)) return Option.none()
  let loader: string
  try {
    loader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
  } catch {
    return Option.none()
  }
  const env: Record<string, string> = {}
  for (const name of demoSettings) {
    const value = environment[name]
    if (value !== undefined && value !== "") env[name] = value
  }
  return Option.some(McpServerEntry.McpServerEntry.make({
    name: ServerName.make("demo"),
    config: ServerConfig.StdioServerConfig.make({ command: process.execPath, args: ["--import", loader, script], env }),
    description: "Offline demo of every MCP feature Skald supports",
    friendlyName: "Skald demo",
    enabled: true
  }))
}

/**
 * On the first run of this database, registers the demo server; returns its name when it did. The
 * marker and the registration commit together (AppMetaRepo.once).
 */
export const ensure = Effect.gen(function*() {
  const repo = yield* McpServerRepo
  const registered = yield* (yield* AppMetaRepo).once(
    MARKER,
    yield* nowIso,
    Effect.gen(function*() {
      const entry = demoEntry()
      if (Option.isNone(entry) || Option.isSome(yield* repo.get(entry.value.name))) return Option.none<string>()
      yield* repo.upsert(entry.value)
      return Option.some(entry.value.name as string)
    })
  )
  return Option.flatten(registered)
})
