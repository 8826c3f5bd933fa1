/**
 * `skald mcp list` from any process: the registry's entries joined with what the running host
 * recorded. Enabled servers show "host not running" when no host has beaten its heart lately.
 *
 * @since 0.1.0
 */
import { McpServerEntry } from "@skald/domain"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { McpServerRepo } from "./McpServerRepo.js"
import { StatusRepo } from "./StatusRepo.js"

/** A heartbeat older than this means the host is gone (it beats every 2 s by default). */
export const DEFAULT_STALE_AFTER = Duration.seconds(10)

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** True when a host is running on this database: a fresh heartbeat from a live process. */
export const hostRunning = (staleAfter: Duration.DurationInput = DEFAULT_STALE_AFTER) =>
  Effect.gen(function*() {
    const heartbeat = yield* (yield* StatusRepo).heartbeat
    if (Option.isNone(heartbeat)) return Option.none<number>()
    const age = Date.now() - Date.parse(heartbeat.value.beatAt)
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
        ...(status.toolCount === undefined ? {} : { toolCount: status.toolCount }),
        ...(status.pid === undefined ? {} : { pid: status.pid })
      })
    })
  })
