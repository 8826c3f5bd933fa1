/**
 * The benchmark workload, shared by every client. A client implements `Driver` (Promise-based
 * for the SDK and raw clients); Skald runs the same phases natively in Effect (skald.ts).
 */
import * as ChildProcess from "node:child_process"
import { performance } from "node:perf_hooks"

/**
 * The in-flight phases are sized by transport: over stdio they run for ~0.1–0.7 s per client, long
 * enough that one scheduler hiccup on a shared machine does not decide a round (with 12,800 calls
 * at 256 in flight the per-round CPU figure of the same code moved by ±25 %, with 51,200 by ±10 %);
 * over HTTP the SDK client manages ~1,000 calls/s, so the phases stay short.
 */
const overHttp = (process.argv[2] ?? "").endsWith("-http")
const sized = (name: string, stdio: number, http: number) => Number(process.env[name] ?? (overHttp ? http : stdio))

export const config = {
  warmup: Number(process.env.BENCH_WARMUP ?? 5000),
  /** Untimed calls at 256 in flight before the in-flight phases, so every client's JIT is warm for them. */
  warmupInFlight: sized("BENCH_WARMUP_INFLIGHT", 25600, 25600),
  sequential: sized("BENCH_SEQUENTIAL", 5000, 2000),
  inFlight64: sized("BENCH_C64", 12800, 6400),
  inFlight256: sized("BENCH_C256", 51200, 12800),
  /**
   * Calls at 256 in flight right after that phase, measured with it as one longer run ("steady"):
   * 51,200 calls are ~0.2–0.3 s for the faster clients, long enough for one client to carry the
   * earlier phases' garbage into it (a full collection) and for another to end before its own
   * collections come due (issue 28, round nine, docs/performance.md). 0 skips it (HTTP's default).
   */
  inFlight256Steady: sized("BENCH_C256_STEADY", 153600, 0),
  /**
   * Untimed 100 KB calls before the timed ones (`big`): the phase follows the small-call phases, so
   * its code paths (a line over several reads, a big parse) are warmed first, the same for every client.
   */
  bigWarmup: Number(process.env.BENCH_BIG_WARMUP ?? 100),
  big: Number(process.env.BENCH_BIG ?? 1000),
  lists: Number(process.env.BENCH_LISTS ?? 5),
  /**
   * Skald's stdio `writeBatch` (the most messages one pipe write holds); unset, the transport's
   * default. A value above the in-flight count (`BENCH_WRITE_BATCH=100000`) gives the one write per
   * event-loop turn of before issue 28's round five, for A/B runs.
   */
  writeBatch: process.env.BENCH_WRITE_BATCH === undefined ? undefined : Number(process.env.BENCH_WRITE_BATCH)
}

export interface Metrics {
  readonly connectMs: number
  readonly seqP50Us: number
  readonly seqP99Us: number
  readonly seqCallsPerSec: number
  readonly c64CallsPerSec: number
  readonly c256CallsPerSec: number
  readonly cpuUsPerCall: number
  /** Over the 256 phase and its continuation (`inFlight256Steady`); null when that is skipped. */
  readonly c256SteadyCallsPerSec: number | null
  readonly cpuUsPerCallSteady: number | null
  /**
   * The continuation alone (the `inFlight256Steady` calls after the 256 phase): where a client that
   * ended the short phase before its own collections came due pays for them; null when skipped.
   */
  readonly cpuUsPerCallContinued: number | null
  readonly bigMBps: number
  /** Client CPU µs per 100 KB call. */
  readonly bigCpuUsPerCall: number
  readonly listMs: number
  readonly tools: number
  readonly peakRssMB: number
}

export interface Driver {
  readonly call: (name: string, args: Record<string, unknown>) => Promise<string>
  readonly listAll: () => Promise<number>
  readonly close: () => Promise<void>
}

const serversDir = new URL("../servers/", import.meta.url).pathname.replace(
  /build\/root\/bench\/servers\/$/,
  "bench/servers/"
)

/**
 * `BENCH_SERVER_CPU`: the CPU the server is pinned to (`taskset -c`, which execs, so the pid is the
 * server's); run.ts pins the client to another one. Unset, the OS places both.
 */
const serverCpu = process.env.BENCH_SERVER_CPU

/**
 * The stdio server of a kind (`raw` or `sdk`), started the same way for every client: in a session
 * of its own. Skald's StdioTransport spawns with `detached: true` (setsid: group kill, Ctrl-C
 * isolation), and with `sched_autogroup_enabled` a new session is a scheduling group of its own,
 * woken differently on a busy machine; so the clients that spawn plainly (the raw client, the SDK's
 * StdioClientTransport) start the server through `setsid(1)`, which execs in place (the spawned
 * child is never a group leader), and `spawnsDetached` (Skald, natively or through its Promise
 * face) leaves the command as it is.
 */
export const serverCommand = (
  kind: string,
  spawnsDetached = false
): { command: string; args: Array<string> } => {
  if (kind !== "raw" && kind !== "sdk") throw new Error(`unknown stdio server kind ${kind}`)
  const node = [process.execPath, `${serversDir}${kind}-server.mjs`]
  const pinned = serverCpu === undefined ? node : ["taskset", "-c", serverCpu, ...node]
  const [command, ...args] = spawnsDetached ? pinned : ["setsid", ...pinned]
  return { command: command!, args }
}

/** True for the HTTP server kinds (`raw-http`, `sdk-http`). */
export const isHttp = (kind: string) => kind.endsWith("-http")

/** Starts an HTTP server of a kind on 127.0.0.1; resolves with its URL and a stop function. */
export const startHttpServer = (kind: string): Promise<{ url: string; stop: () => void }> =>
  new Promise((resolve, reject) => {
    const file = kind === "raw-http" ? "raw-http-server.mjs" : kind === "sdk-http" ? "sdk-http-server.mjs" : undefined
    if (file === undefined) return reject(new Error(`unknown HTTP server kind ${kind}`))
    const node = [process.execPath, `${serversDir}${file}`]
    const [command, ...args] = serverCpu === undefined ? node : ["taskset", "-c", serverCpu, ...node]
    const child = ChildProcess.spawn(command!, args, { stdio: ["ignore", "pipe", "inherit"] })
    child.stdout.setEncoding("utf8")
    child.stdout.once("data", (line: string) => resolve({ url: line.trim(), stop: () => child.kill() }))
    child.once("error", reject)
  })

export const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

export const now = () => performance.now()

export const cpuMicros = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}

export const peakRssMB = () => process.resourceUsage().maxRSS / 1024

const check = (text: string, expected: string) => {
  if (text !== expected) throw new Error(`unexpected result ${text.slice(0, 80)}`)
}

/** Runs every phase against a connected driver. */
export const runWorkload = async (connect: () => Promise<Driver>): Promise<Metrics> => {
  const t0 = now()
  const driver = await connect()
  const connectMs = now() - t0

  const tools = await driver.listAll()

  const inFlight = async (concurrency: number, total: number) => {
    let next = 0
    const start = now()
    const worker = async () => {
      while (next < total) {
        const i = next++
        check(await driver.call("echo", { message: `c${i}` }), `c${i}`)
      }
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
    return total / ((now() - start) / 1000)
  }
  // Every phase measures warm code: V8 has compiled each client's hot path before the clock starts
  // (the in-flight warm-up), and settled the one-call-at-a-time path (the sequential warm-up).
  await inFlight(256, config.warmupInFlight)
  for (let i = 0; i < config.warmup; i++) check(await driver.call("echo", { message: `w${i}` }), `w${i}`)

  const latencies: Array<number> = []
  const seqStart = now()
  for (let i = 0; i < config.sequential; i++) {
    const start = now()
    check(await driver.call("echo", { message: `s${i}` }), `s${i}`)
    latencies.push(now() - start)
  }
  const seqElapsed = now() - seqStart
  latencies.sort((a, b) => a - b)

  const c64 = await inFlight(64, config.inFlight64)
  const cpu0 = cpuMicros()
  const start256 = now()
  const c256 = await inFlight(256, config.inFlight256)
  const cpuUsPerCall = (cpuMicros() - cpu0) / config.inFlight256
  const steady = config.inFlight256Steady === 0 ? null : await (async () => {
    await inFlight(256, config.inFlight256Steady)
    return steadyOf(cpu0, start256)
  })()

  for (let i = 0; i < config.bigWarmup; i++) await driver.call("big", {})
  const bigCpu0 = cpuMicros()
  const bigStart = now()
  let bytes = 0
  for (let i = 0; i < config.big; i++) bytes += (await driver.call("big", {})).length
  const bigMBps = bytes / (1024 * 1024) / ((now() - bigStart) / 1000)
  const bigCpuUsPerCall = (cpuMicros() - bigCpu0) / config.big

  const lists: Array<number> = []
  for (let i = 0; i < config.lists; i++) {
    const start = now()
    const n = await driver.listAll()
    if (n !== tools) throw new Error("tool count changed")
    lists.push(now() - start)
  }
  lists.sort((a, b) => a - b)

  await driver.close()
  return summarize({
    connectMs,
    tools,
    latencies,
    seqElapsed,
    c64,
    c256,
    cpuUsPerCall,
    steady,
    bigMBps,
    bigCpuUsPerCall,
    lists
  })
}

/** The 256 phase and its continuation, measured as one. */
export interface Steady {
  readonly callsPerSec: number
  readonly cpuUsPerCall: number
}

/** Calls/s and CPU per call since the 256 phase began (`cpu0`, `start` taken then). */
export const steadyOf = (cpu0: number, start: number): Steady => {
  const calls = config.inFlight256 + config.inFlight256Steady
  return { callsPerSec: calls / ((now() - start) / 1000), cpuUsPerCall: (cpuMicros() - cpu0) / calls }
}

/** What the phases measured, before summary. `latencies` and `lists` are sorted, in ms. */
export interface Measured {
  readonly connectMs: number
  readonly tools: number
  readonly latencies: ReadonlyArray<number>
  readonly seqElapsed: number
  readonly c64: number
  readonly c256: number
  readonly cpuUsPerCall: number
  readonly steady: Steady | null
  readonly bigMBps: number
  readonly bigCpuUsPerCall: number
  readonly lists: ReadonlyArray<number>
}

/** The metrics of one client run. */
export const summarize = (m: Measured): Metrics => ({
  connectMs: m.connectMs,
  seqP50Us: percentile(m.latencies, 50) * 1000,
  seqP99Us: percentile(m.latencies, 99) * 1000,
  seqCallsPerSec: config.sequential / (m.seqElapsed / 1000),
  c64CallsPerSec: m.c64,
  c256CallsPerSec: m.c256,
  cpuUsPerCall: m.cpuUsPerCall,
  c256SteadyCallsPerSec: m.steady?.callsPerSec ?? null,
  cpuUsPerCallSteady: m.steady?.cpuUsPerCall ?? null,
  cpuUsPerCallContinued: m.steady === null
    ? null
    : (m.steady.cpuUsPerCall * (config.inFlight256 + config.inFlight256Steady) -
      m.cpuUsPerCall * config.inFlight256) / config.inFlight256Steady,
  bigMBps: m.bigMBps,
  bigCpuUsPerCall: m.bigCpuUsPerCall,
  listMs: percentile(m.lists, 50),
  tools: m.tools,
  peakRssMB: peakRssMB()
})

/** Prints the metrics as the one JSON line the runner reads. */
export const report = (metrics: Metrics) => process.stdout.write(JSON.stringify(metrics) + "\n")
