/**
 * Servers a previous host left running. A host that was killed outright (SIGKILL, a power cut)
 * ran no finalizer, and its stdio servers — each in its own process group — outlive it. The
 * status table keeps each one's process group id and its leader's start time; the next host stops
 * those groups before starting its own servers.
 *
 * What is recognised is the **group**, not a command line: an `npx …` server reads `npm exec …`
 * in `/proc/<pid>/cmdline`, a shebang script reads `/bin/sh script`, and a launcher may have
 * exited already, leaving its children in the group. The rule (Linux `/proc`; elsewhere nothing
 * is found):
 *
 * - the leader (pid = pgid) still runs with the recorded start time: the group is ours — the
 *   start time tells our process from a later one given the same pid;
 * - a process with that pid runs with another start time: the id was reused, so the old group
 *   had ended (Linux does not hand out a pid still in use as a process group id) — left alone;
 * - no process has that pid (the leader exited): the processes whose pgid is the recorded one and
 *   that started at or after the recorded leader are ours. While any member of a group lives its
 *   id is not reused, so these can only be another group if ours ended entirely, the pid was
 *   handed out again, became a group leader and exited in turn leaving members — all between the
 *   host's death and the next start; that residual case is not told apart.
 *
 * A start time is counted from boot: after a reboot no leftover exists, and a recorded one is
 * matched only by chance (same pid and same tick), which is accepted.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fs from "node:fs"

/** What `/proc/<pid>/stat` says of a process. */
export interface ProcessStat {
  readonly pid: number
  /** Field 3: `R`, `S`, `Z` (a zombie: exited, not yet reaped), … */
  readonly state: string
  /** Field 5. */
  readonly pgid: number
  /** Field 22: when it started, in clock ticks since boot. */
  readonly startTime: number
}

/**
 * Parses a `/proc/<pid>/stat` line. The command name (field 2) is in parentheses and may itself
 * contain spaces and parentheses, so the fields are read after the *last* `)`.
 */
export const parseStat = (pid: number, line: string): ProcessStat | undefined => {
  const close = line.lastIndexOf(")")
  if (close === -1) return undefined
  const fields = line.slice(close + 2).split(" ")
  // fields[0] is field 3 (state), so field n is fields[n - 3].
  const state = fields[0]
  const pgid = Number(fields[2])
  const startTime = Number(fields[19])
  if (state === undefined || !Number.isInteger(pgid) || !Number.isInteger(startTime)) return undefined
  return { pid, state, pgid, startTime }
}

/** The stat of one process, if it exists. */
export const stat = (pid: number): ProcessStat | undefined => {
  try {
    return parseStat(pid, Fs.readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return undefined
  }
}

/** Every process's stat (none without `/proc`). */
const all = (): ReadonlyArray<ProcessStat> => {
  let entries: Array<string>
  try {
    entries = Fs.readdirSync("/proc")
  } catch {
    return []
  }
  const out: Array<ProcessStat> = []
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    const s = stat(Number(entry))
    if (s !== undefined) out.push(s)
  }
  return out
}

/** What the status table said about a server's process group. */
export interface Candidate {
  readonly name: string
  readonly pgid: number
  /** The leader's start time when it was recorded. */
  readonly startTime: number
}

/** The live (not zombie) processes of the candidate's group, by the rule above. */
export const members = (candidate: Candidate, processes: ReadonlyArray<ProcessStat> = all()): ReadonlyArray<number> => {
  const leader = processes.find((p) => p.pid === candidate.pgid)
  if (leader !== undefined && leader.startTime !== candidate.startTime) return []
  return processes
    .filter((p) => p.pgid === candidate.pgid && p.startTime >= candidate.startTime && p.state !== "Z")
    .map((p) => p.pid)
}

const signalGroup = (pgid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(-pgid, signal)
  } catch {
    // gone already
  }
}

/**
 * Stops each candidate's group that still has members: SIGTERM to the group, then SIGKILL to
 * what is left after `grace`. Returns the names of the servers whose groups it stopped.
 */
export const reap = (candidates: ReadonlyArray<Candidate>, grace: Duration.DurationInput = "2 seconds") =>
  Effect.gen(function*() {
    const processes = yield* Effect.sync(all)
    const live = candidates.filter((c) => members(c, processes).length > 0)
    if (live.length === 0) return []
    for (const c of live) signalGroup(c.pgid, "SIGTERM")
    const remaining = () => {
      const now = all()
      return live.filter((c) => members(c, now).length > 0)
    }
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(grace)
    while ((yield* Clock.currentTimeMillis) < deadline && remaining().length > 0) yield* Effect.sleep("50 millis")
    for (const c of remaining()) signalGroup(c.pgid, "SIGKILL")
    return live.map((c) => c.name)
  })
