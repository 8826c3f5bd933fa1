/** Skald's client (`@skald/mcp`), running the workload natively in Effect. */
import type { McpError } from "@skald/domain"
import type * as McpClient from "@skald/mcp/McpClient"
import * as StdioTransport from "@skald/mcp/StdioTransport"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import {
  config,
  cpuMicros,
  isHttp,
  now,
  report,
  serverCommand,
  startHttpServer,
  type Steady,
  steadyOf,
  summarize
} from "./workload.js"

const text = (outcome: McpClient.CallOutcome): string => (outcome.result._tag === "Text" ? outcome.result.text : "")

/** A wrong answer is a defect of the run (thrown inside `Effect.gen`). */
const check = (outcome: McpClient.CallOutcome, expected: string) => {
  if (text(outcome) !== expected) throw new Error(`unexpected result ${text(outcome).slice(0, 80)}`)
}

const program = <R>(connect: Effect.Effect<McpClient.Service, McpError.McpError, R | Scope.Scope>) =>
  Effect.gen(function*() {
    const t0 = now()
    const client = yield* connect
    const connectMs = now() - t0

    const tools = (yield* client.refreshTools).tools.length
    // Each call as a user writes it: `yield*` the call, then a plain check (as the Promise clients do).

    // The same shape as the Promise clients' harness: `concurrency` workers, each calling in turn.
    const inFlight = (concurrency: number, total: number) =>
      Effect.gen(function*() {
        let next = 0
        const worker = Effect.gen(function*() {
          while (next < total) {
            const message = `c${next++}`
            check(yield* client.callTool("echo", { message }), message)
          }
        })
        const start = now()
        yield* Effect.all(Array.from({ length: concurrency }, () => worker), {
          concurrency: "unbounded",
          discard: true
        })
        return total / ((now() - start) / 1000)
      })
    // Every phase measures warm code: V8 has compiled each client's hot path before the clock starts
    // (the in-flight warm-up), and settled the one-call-at-a-time path (the sequential warm-up).
    yield* inFlight(256, config.warmupInFlight)
    for (let i = 0; i < config.warmup; i++) check(yield* client.callTool("echo", { message: `w${i}` }), `w${i}`)

    const latencies: Array<number> = []
    const seqStart = now()
    for (let i = 0; i < config.sequential; i++) {
      const start = now()
      check(yield* client.callTool("echo", { message: `s${i}` }), `s${i}`)
      latencies.push(now() - start)
    }
    const seqElapsed = now() - seqStart
    latencies.sort((a, b) => a - b)

    const c64 = yield* inFlight(64, config.inFlight64)
    const cpu0 = cpuMicros()
    const start256 = now()
    const c256 = yield* inFlight(256, config.inFlight256)
    const cpuUsPerCall = (cpuMicros() - cpu0) / config.inFlight256
    let steady: Steady | null = null
    if (config.inFlight256Steady > 0) {
      yield* inFlight(256, config.inFlight256Steady)
      steady = steadyOf(cpu0, start256)
    }

    for (let i = 0; i < config.bigWarmup; i++) yield* client.callTool("big", {})
    const bigCpu0 = cpuMicros()
    const bigStart = now()
    let bytes = 0
    for (let i = 0; i < config.big; i++) bytes += text(yield* client.callTool("big", {})).length
    const bigMBps = bytes / (1024 * 1024) / ((now() - bigStart) / 1000)
    const bigCpuUsPerCall = (cpuMicros() - bigCpu0) / config.big

    const lists: Array<number> = []
    for (let i = 0; i < config.lists; i++) {
      const start = now()
      const n = (yield* client.refreshTools).tools.length
      if (n !== tools) return yield* Effect.die(new Error("tool count changed"))
      lists.push(now() - start)
    }
    lists.sort((a, b) => a - b)

    return {
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
    }
  })

const kind = process.argv[2] ?? "raw"
// The HTTP transport brings its own HTTP (pooled keep-alive node:http, as the CLI uses it): no
// HttpClient layer to load or provide. Imported by module, as an app that needs only stdio would:
// the `@skald/mcp` and `effect` indexes load every module of the package (HTTP, OAuth, …).
const measured = isHttp(kind)
  ? await Effect.runPromise(
    Effect.scoped(Effect.gen(function*() {
      const http = yield* Effect.promise(() => startHttpServer(kind))
      yield* Effect.addFinalizer(() => Effect.sync(http.stop))
      const HttpTransport = yield* Effect.promise(() => import("@skald/mcp/HttpTransport"))
      return yield* program(HttpTransport.client({ server: "bench", url: http.url }))
    }))
  )
  : await Effect.runPromise(
    Effect.scoped(
      program(StdioTransport.client({ server: "bench", ...serverCommand(kind, true), writeBatch: config.writeBatch }))
    )
  )
report(summarize(measured))
