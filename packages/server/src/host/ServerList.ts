/**
 * `skald mcp list` from any process: the registry's entries joined with what the running host
 * recorded. Enabled servers show "host not running" when no host has beaten its heart lately.
 * And what another process asks of the running host (`skald mcp restart`, `skald secret set`):
 * a row in `host_requests`, which the host's `PRAGMA data_version` watcher picks up.
 *
 * @since 0.1.0
 */
import type { ServerName } from "@skald/domain"
import { McpServerEntry } from "@skald/domain"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Fs from "node:fs"
import * as Database from "./Database.js"
import { UnknownServer } from "./HostError.js"
import { McpServerRepo } from "./McpServerRepo.js"
import { Paths } from "./Paths.js"
import { isAlive } from "./ProcessAlive.js"
import * as StatusRepoModule from "./StatusRepo.js"
import { StatusRepo } from "./StatusRepo.js"
import { nowIso } from "./Time.js"

/** A heartbeat older than this means the host is gone (it beats every 2 s by default). */
export const DEFAULT_STALE_AFTER = Duration.seconds(10)

/** True when a host is running on this database: a fresh heartbeat from a live process. */
export const hostRunning = (staleAfter: Duration.DurationInput = DEFAULT_STALE_AFTER) =>
  Effect.gen(function*() {
    const heartbeat = yield* (yield* StatusRepo).heartbeat
    if (Option.isNone(heartbeat)) return Option.none<number>()
    const age = (yield* Clock.currentTimeMillis) - Date.parse(heartbeat.value.beatAt)
    return age <= Duration.toMillis(staleAfter) && isAlive(heartbeat.value.pid)
      ? Option.some(heartbeat.value.pid)
      : Option.none<number>()
  })

/** Every registered server with its status. */
export const summaries = (staleAfter: Duration.DurationInput = DEFAULT_STALE_AFTER) =>
  Effect.gen(function*() {
    const entries = yield* (yield* McpServerRepo).list
    const statuses = new Map((yield* (yield* StatusRepo).all).map((s) => [s.name, s]))
    const running = Option.isSome(yield* hostRunning(staleAfter))
    return entries.map((entry) => {
      const status = statuses.get(entry.name)
      const base = {
        name: entry.name,
        ...(entry.friendlyName === undefined ? {} : { friendlyName: entry.friendlyName }),
        ...(entry.description === undefined ? {} : { description: entry.description }),
        transport: entry.config._tag,
        enabled: entry.enabled
      }
      if (!entry.enabled) return McpServerEntry.ServerSummary.make({ ...base, state: "disabled" })
      if (!running) return McpServerEntry.ServerSummary.make({ ...base, state: "host-not-running" })
      if (status === undefined || status.state === "disabled") {
        return McpServerEntry.ServerSummary.make({ ...base, state: "starting" })
      }
      return McpServerEntry.ServerSummary.make({
        ...base,
        state: status.state,
        since: status.since,
        ...(status.error === undefined ? {} : { error: status.error }),
        ...(status.errorCause === undefined ? {} : { errorCause: status.errorCause }),
        ...(status.toolCount === undefined ? {} : { toolCount: status.toolCount }),
        ...(status.pid === undefined ? {} : { pid: status.pid }),
        ...(status.state !== "failed" || status.nextRetryAt === undefined ? {} : { nextRetryAt: status.nextRetryAt })
      })
    })
  })

/** What became of a restart request. */
export interface RestartRequested {
  /** The running host's pid, when one runs (it restarts the server within about a second). */
  readonly host: Option.Option<number>
  /** False for a disabled server: a restart leaves it off. */
  readonly enabled: boolean
}

/**
 * Asks the running host (in any process) to restart a server: a failed one is retried at once, a
 * connected one is replaced by a new process. Without a running host nothing needs restarting:
 * the next host starts every enabled server.
 */
export const requestRestart = (name: ServerName.ServerName) =>
  Effect.gen(function*() {
    const entry = yield* (yield* McpServerRepo).get(name)
    if (Option.isNone(entry)) return yield* new UnknownServer({ name })
    const host = yield* hostRunning()
    if (Option.isSome(host) && entry.value.enabled) yield* (yield* StatusRepo).request("restart", name, yield* nowIso)
    return { host, enabled: entry.value.enabled } satisfies RestartRequested
  })

/** Tells the running host that secret `name` changed: it retries at once the failed servers referring to it. */
export const signalSecretChanged = (name: string) =>
  Effect.gen(function*() {
    if (Option.isNone(yield* hostRunning())) return
    yield* (yield* StatusRepo).request("secret", name, yield* nowIso)
  })

/**
 * `signalSecretChanged` for a process that holds no database connection (`skald secret set`):
 * opens the home's database only when it exists — without one no host has run, and none is created.
 */
export const notifySecretChanged = (name: string) =>
  Effect.gen(function*() {
    const paths = yield* Paths
    if (!(yield* Effect.sync(() => Fs.existsSync(paths.database)))) return
    yield* signalSecretChanged(name).pipe(
      Effect.provide(
        StatusRepoModule.layer.pipe(Layer.provide(Database.layer), Layer.provide(Layer.succeed(Paths, paths)))
      )
    )
  })
