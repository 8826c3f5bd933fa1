/**
 * Servers a previous host left running. A host that was killed outright (SIGKILL, a power cut)
 * ran no finalizer, and its stdio servers — each in its own process group — outlive it. Their
 * pids are still in the status table; the next host stops them before starting its own, so no
 * server process outlives the host for longer than that.
 *
 * A pid is only signalled while `/proc/<pid>/cmdline` still shows the server's command line, so
 * a pid the system has since given to another process is left alone.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Fs from "node:fs"

/** What the status table said about a server's process. */
export interface Candidate {
  readonly name: string
  readonly pid: number
  /** The command and arguments it was started with. */
  readonly commandLine: ReadonlyArray<string>
}

const cmdline = (pid: number): ReadonlyArray<string> | undefined => {
  try {
    const raw = Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")
    return raw.split("\0").filter((s) => s.length > 0)
  } catch {
    return undefined
  }
}

/** True when `pid` runs exactly this command line. */
export const runs = (pid: number, commandLine: ReadonlyArray<string>): boolean => {
  const actual = cmdline(pid)
  return actual !== undefined && actual.length === commandLine.length && actual.every((a, i) => a === commandLine[i])
}

const signalGroup = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(-pid, signal)
  } catch {
    // gone already
  }
}

/**
 * Stops each candidate still running its command line: SIGTERM to its process group, then
 * SIGKILL after `grace`. Returns the names of the servers it stopped.
 */
export const reap = (candidates: ReadonlyArray<Candidate>, grace: number = 2000) =>
  Effect.gen(function*() {
    const live = candidates.filter((c) => runs(c.pid, c.commandLine))
    if (live.length === 0) return []
    for (const c of live) signalGroup(c.pid, "SIGTERM")
    const deadline = Date.now() + grace
    while (Date.now() < deadline && live.some((c) => runs(c.pid, c.commandLine))) yield* Effect.sleep("50 millis")
    for (const c of live) if (runs(c.pid, c.commandLine)) signalGroup(c.pid, "SIGKILL")
    return live.map((c) => c.name)
  })
