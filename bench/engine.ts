/**
 * The engine alone, in one process: `McpClient` over a loopback transport that answers every
 * request of an event-loop turn on the next turn (as a batching server does), with no pipe and no
 * JSON. N workers call `echo` in turn, as in the stdio bench's in-flight phases; prints the CPU µs
 * per call and calls/s. It isolates what the engine and the Effect runtime cost per call, which
 * the stdio bench mixes with the pipe, JSON and the other processes on the machine.
 *
 *   node build/root/bench/engine.js [calls=200000] [inFlight=256] [rounds=5]
 */
import { McpClient, Transport } from "@skald/mcp"
import type { JsonRpc } from "@skald/mcp"
import { Effect, Exit, Mailbox } from "effect"

const calls = Number(process.argv[2] ?? 200_000)
const inFlight = Number(process.argv[3] ?? 256)
const rounds = Number(process.argv[4] ?? 5)

const loopback = Effect.gen(function*() {
  const incoming = yield* Mailbox.make<JsonRpc.Incoming, never>()
  let queue: Array<JsonRpc.Message> = []
  let scheduled = false
  const answer = (m: JsonRpc.Message) => {
    if (!("id" in m) || !("method" in m)) return
    const params = m.params as { readonly protocolVersion?: string; readonly arguments?: { readonly message?: string } }
    const result = m.method === "initialize"
      ? {
        protocolVersion: params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "loopback", version: "1" }
      }
      : m.method === "tools/list"
      ? { tools: [{ name: "echo", inputSchema: { type: "object" } }] }
      : { content: [{ type: "text", text: params.arguments?.message ?? "" }] }
    incoming.unsafeOffer({ _tag: "Response", message: { jsonrpc: "2.0", id: m.id, result } })
  }
  const flush = () => {
    scheduled = false
    const batch = queue
    queue = []
    for (const m of batch) answer(m)
  }
  const transport: Transport.Service = {
    server: "loopback",
    kind: "stdio",
    send: (message) => {
      queue.push(message)
      if (!scheduled) {
        scheduled = true
        setImmediate(flush)
      }
    },
    incoming
  }
  return transport
})

const program = Effect.gen(function*() {
  const transport = yield* loopback
  const client = yield* McpClient.make().pipe(Effect.provideService(Transport.Transport, transport))
  yield* client.refreshTools
  const run = (total: number) =>
    Effect.gen(function*() {
      let next = 0
      const worker = Effect.gen(function*() {
        while (next < total) {
          const message = `c${next++}`
          const { result } = yield* client.callTool("echo", { message })
          if (result._tag !== "Text" || result.text !== message) return yield* Effect.die(new Error("wrong answer"))
        }
      })
      yield* Effect.all(Array.from({ length: inFlight }, () => worker), { concurrency: "unbounded", discard: true })
    })
  yield* run(Math.min(calls, 20_000))
  const perRound: Array<{ cpu: number; rate: number }> = []
  for (let round = 0; round < rounds; round++) {
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    yield* run(calls)
    const cpu = process.cpuUsage(cpu0)
    perRound.push({ cpu: (cpu.user + cpu.system) / calls, rate: calls / ((performance.now() - t0) / 1000) })
  }
  return perRound
})

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const perRound = await Effect.runPromise(Effect.scoped(program).pipe(Effect.exit)).then(Exit.getOrElse((cause) => {
  throw new Error(String(cause))
}))
for (const r of perRound) process.stderr.write(`  ${r.cpu.toFixed(2)} µs CPU/call, ${r.rate.toFixed(0)} calls/s\n`)
console.log(
  `engine (${inFlight} in flight, ${calls} calls × ${rounds} rounds): median ${
    median(perRound.map((r) => r.cpu)).toFixed(2)
  } µs CPU/call, ` +
    `${median(perRound.map((r) => r.rate)).toFixed(0)} calls/s`
)
