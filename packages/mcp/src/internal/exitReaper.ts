/**
 * The stdio servers' shutdown when this process exits before their scopes close.
 *
 * Closing a transport's scope runs the spec's shutdown on the server's process group (stdin
 * closed, SIGTERM after a grace, SIGKILL after another). A process that exits first —
 * `process.exit()` with transports still open, an uncaught exception — runs no finalizer: its
 * servers get their stdin's end, and one that ignores it would run on for good, in a process
 * group of its own (`detached`, so that a terminal's Ctrl-C does not reach it). So every live
 * server's group is tracked here, and on `exit` (which runs synchronously, with no time to wait)
 * a small detached process is left behind to finish the sequence: after each server's stdin grace
 * it sends SIGTERM to the groups still there, after the SIGTERM grace SIGKILL. A server that exits
 * on its stdin's end, as the spec asks, is gone before then and never signalled.
 *
 * What this cannot cover: a process killed outright (SIGKILL) runs nothing at all — a host finds
 * those servers at its next start. The reaper checks that a group still exists, not that it is
 * the same one: a group id reused within the few seconds of the graces (after some 32 thousand
 * new processes at the least) would be signalled.
 */
import * as ChildProcess from "node:child_process"

/** A live server's group and its graces, in milliseconds. */
type Entry = readonly [pgid: number, stdinGraceMillis: number, termGraceMillis: number]

const live = new Map<number, Entry>()
let listening = false

/** The reaper: argv[1] is the JSON list of entries. Plain JS for `node -e`; signals only. */
const REAPER = `
const alive = (g) => { try { process.kill(-g, 0); return true } catch { return false } }
const signal = (g, s) => { try { process.kill(-g, s) } catch {} }
for (const [g, stdinMs, termMs] of JSON.parse(process.argv[1])) {
  setTimeout(() => {
    if (!alive(g)) return
    signal(g, "SIGTERM")
    setTimeout(() => { if (alive(g)) signal(g, "SIGKILL") }, termMs)
  }, stdinMs)
}
`

const atExit = () => {
  if (live.size === 0) return
  try {
    ChildProcess.spawn(process.execPath, ["-e", REAPER, JSON.stringify([...live.values()])], {
      detached: true,
      stdio: "ignore",
      windowsHide: true
    }).unref()
  } catch {
    // Nothing more can be done from an exiting process.
  }
}

/**
 * Tracks a server's process group until the returned function is called (once its shutdown has
 * run). The `exit` listener is installed at the first call.
 */
export const track = (pgid: number, stdinGraceMillis: number, termGraceMillis: number): () => void => {
  if (!listening) {
    listening = true
    process.on("exit", atExit)
  }
  live.set(pgid, [pgid, stdinGraceMillis, termGraceMillis])
  return () => {
    live.delete(pgid)
  }
}
