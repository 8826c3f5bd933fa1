/**
 * How the bench keeps the machine out of its figures: the clients' environment and their
 * placement on CPUs. Shared by the client sections (run.ts) and the command-line section (cli.ts).
 */
import * as ChildProcess from "node:child_process"
import * as Os from "node:os"

/**
 * The SDK client starts a stdio server with a short allow-list environment (HOME, PATH, …), where
 * Skald and the raw client pass the parent's. A parent environment with NODE_EXTRA_CA_CERTS (this
 * machine's has) makes every node process read a CA bundle at start-up, ~50 ms, which would count
 * against "connect + initialize" for two clients only. Nothing here uses TLS: the clients run
 * without it, so all three start their servers at the same cost.
 */
export const clientEnv: Record<string, string | undefined> = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => name !== "NODE_EXTRA_CA_CERTS")
)

function hasTaskset(): boolean {
  try {
    ChildProcess.execFileSync("taskset", ["-c", "0", "true"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

/**
 * Placement. On this 2-core VM a sequential call takes ~30 µs when the client and its server share
 * a core and ~90 µs when they are on different ones (a cross-core wake-up), and the OS picks one
 * or the other per process — so unpinned, every client's sequential p50 jumped between the two
 * from round to round, and a per-round ratio measured placement, not code. With `taskset`
 * (util-linux) and two or more CPUs, every client runs on CPU 0 and its server on CPU 1
 * (`BENCH_PIN=0` turns this off; the other processes of the machine still share both).
 */
export const pin = process.env.BENCH_PIN !== "0" && Os.cpus().length >= 2 && hasTaskset()

/** The median of a non-empty list. */
export const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** A number for a table: thousands separated, fixed digits. */
export const fmt = (x: number, digits: number) =>
  x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })
