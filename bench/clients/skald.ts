/** Skald's client (`@skald/mcp`), running the workload natively in Effect. */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { HttpTransport, McpClient, StdioTransport } from "@skald/mcp"
import { Effect } from "effect"
import { config, cpuMicros, isHttp, now, report, serverCommand, startHttpServer, summarize } from "./workload.js"

// undici, as the CLI uses (see packages/server/src/cli/Target.ts for why).
const keepAlive = NodeHttpClient.layerUndici

const text = (outcome: McpClient.CallOutcome): string => (outcome.result._tag === "Text" ? outcome.result.text : "")

const check = (outcome: McpClient.CallOutcome, expected: string) =>
  text(outcome) === expected ? Effect.void : Effect.die(new Error(`unexpected result ${text(outcome).slice(0, 80)}`))

const program = Effect.gen(function*() {
  const kind = process.argv[2] ?? "raw"
  const http = isHttp(kind) ? yield* Effect.promise(() => startHttpServer(kind)) : undefined
  if (http !== undefined) yield* Effect.addFinalizer(() => Effect.sync(http.stop))
  const t0 = now()
  const client = http !== undefined
    ? yield* HttpTransport.client({ server: "bench", url: http.url })
    : yield* StdioTransport.client({ server: "bench", ...serverCommand(kind) })
  const connectMs = now() - t0
  const call = (message: string) => Effect.flatMap(client.callTool("echo", { message }), (o) => check(o, message))

  const tools = (yield* client.refreshTools).tools.length
  for (let i = 0; i < config.warmup; i++) yield* call(`w${i}`)

  const latencies: Array<number> = []
  const seqStart = now()
  for (let i = 0; i < config.sequential; i++) {
    const start = now()
    yield* call(`s${i}`)
    latencies.push(now() - start)
  }
  const seqElapsed = now() - seqStart
  latencies.sort((a, b) => a - b)

  // The same shape as the Promise clients' harness: `concurrency` workers, each calling in turn.
  const inFlight = (concurrency: number, total: number) =>
    Effect.gen(function*() {
      let next = 0
      const worker = Effect.gen(function*() {
        while (next < total) yield* call(`c${next++}`)
      })
      const start = now()
      yield* Effect.all(Array.from({ length: concurrency }, () => worker), { concurrency: "unbounded", discard: true })
      return total / ((now() - start) / 1000)
    })
  const c64 = yield* inFlight(64, config.inFlight64)
  const cpu0 = cpuMicros()
  const c256 = yield* inFlight(256, config.inFlight256)
  const cpuUsPerCall = (cpuMicros() - cpu0) / config.inFlight256

  const bigStart = now()
  let bytes = 0
  for (let i = 0; i < config.big; i++) bytes += text(yield* client.callTool("big", {})).length
  const bigMBps = bytes / (1024 * 1024) / ((now() - bigStart) / 1000)

  const lists: Array<number> = []
  for (let i = 0; i < config.lists; i++) {
    const start = now()
    const n = (yield* client.refreshTools).tools.length
    if (n !== tools) return yield* Effect.die(new Error("tool count changed"))
    lists.push(now() - start)
  }
  lists.sort((a, b) => a - b)

  return { connectMs, tools, latencies, seqElapsed, c64, c256, cpuUsPerCall, bigMBps, lists }
})

// The HTTP client lives as long as the whole run (a layer provided to one effect ends with it).
report(summarize(await Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(keepAlive)))))
