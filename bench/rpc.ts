/**
 * `npm run bench` section `rpc` (issue 22): the host's RPC against a raw WebSocket on the same
 * machine, as ratios.
 *
 * - **Events per second to one client**: a real `skald serve` (the stand-in model streams a turn
 *   of `BENCH_RPC_EVENTS` text deltas, default 5,000), then `Agent.Attach` from index 0 replays
 *   the ended turn's log to one `@effect/rpc` client over `NodeSocket` — the server's fan-out path
 *   (TurnLog, the RPC's chunking and acks, ndjson). The baseline: a raw `ws` server sending the
 *   same number of encoded `TextDelta` JSON messages to one raw `ws` client.
 * - **Round trip of a small call**: `Host.Version` on the same connection, sequentially
 *   (`BENCH_RPC_CALLS`, default 500), against a raw `ws` echo of one small JSON message.
 *
 * Medians of `BENCH_RPC_RUNS` runs (default 5). One process drives the client side; the host is
 * its own process.
 */
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as Socket from "@effect/platform/Socket"
import * as RpcClient from "@effect/rpc/RpcClient"
import { RpcProtocol, TurnEvent } from "@skald/domain"
import * as RpcServer from "@skald/server/rpc/RpcServer"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as ModelStandin from "../test/fixtures/model-standin.js"
import { fmt, median } from "./machine.js"

/** The parts of `ws` (a root dev dependency, also the WebSocket library under @effect/platform-node; its types are not installed) the baseline uses. */
interface WebSocket {
  send(data: string): void
  close(): void
  on(event: "message", listener: (data: { toString(): string }) => void): void
  off(event: "message", listener: (data: { toString(): string }) => void): void
  once(event: "open", listener: () => void): void
}
interface WebSocketServer {
  on(event: "connection", listener: (socket: WebSocket) => void): void
  address(): unknown
  close(callback: () => void): void
}
const ws = createRequire(import.meta.url)("ws") as {
  readonly WebSocket: new(url: string) => WebSocket
  readonly WebSocketServer: new(options: { host: string; port: number }, ready: () => void) => WebSocketServer
}

const here = Path.dirname(fileURLToPath(import.meta.url))
const root = Path.resolve(here, "../../..")
const skald = Path.join(root, "packages/server/bin/skald.js")

const num = (name: string, fallback: number) => {
  const value = Number(process.env[name])
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback
}

/** `skald serve` on a free loopback port (a fresh home); its URL, stopped with the scope. */
export const serve = (env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly stop: () => void }>((resume) => {
      const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-bench-rpc-"))
      const child = spawn(process.execPath, [skald, "serve", "--home", home], {
        env: { ...process.env, SKALD_PORT: "0", ...env },
        stdio: ["ignore", "ignore", "pipe"]
      })
      let err = ""
      child.stderr!.on("data", (d: Buffer) => {
        err += d.toString()
        const m = /HTTP endpoints on (http:\/\/127\.0\.0\.1:\d+)/.exec(err)
        if (m !== null && err.includes("serving MCP servers")) {
          resume(Effect.succeed({ url: m[1]!, stop: () => child.kill("SIGTERM") }))
        }
      })
      child.once("exit", (code) => resume(Effect.dieMessage(`skald serve exited (${code}): ${err}`)))
    }),
    (host) => Effect.sync(host.stop)
  )

const connect = (url: string) =>
  Layer.build(
    RpcClient.layerProtocolSocket().pipe(
      Layer.provide(Layer.scoped(
        Socket.Socket,
        Socket.makeWebSocket(`${url.replace(/^http/, "ws")}${RpcProtocol.PATH}`, {
          protocols: RpcProtocol.protocolsFor()
        })
      )),
      Layer.provide(NodeSocket.layerWebSocketConstructor),
      Layer.provide(RpcProtocol.layerSerialization)
    )
  ).pipe(Effect.flatMap((protocol) => RpcClient.make(RpcServer.Rpcs).pipe(Effect.provide(protocol))))

/** A raw `ws` server on 127.0.0.1: echoes every message; on "burst N" sends N event messages. */
const rawServer = (event: string) =>
  Effect.acquireRelease(
    Effect.async<WebSocketServer>((resume) => {
      const wss = new ws.WebSocketServer({ host: "127.0.0.1", port: 0 }, () => resume(Effect.succeed(wss)))
      wss.on("connection", (socket) =>
        socket.on("message", (data) => {
          const text = data.toString()
          if (text.startsWith("burst ")) {
            const n = Number(text.slice(6))
            for (let i = 0; i < n; i++) socket.send(event)
          } else socket.send(text)
        }))
    }),
    (wss) => Effect.async<void>((resume) => wss.close(() => resume(Effect.void)))
  )

const rawClient = (port: number) =>
  Effect.acquireRelease(
    Effect.async<WebSocket>((resume) => {
      const socket = new ws.WebSocket(`ws://127.0.0.1:${port}`)
      socket.once("open", () => resume(Effect.succeed(socket)))
    }),
    (socket) => Effect.sync(() => socket.close())
  )

/** Sends `message` and waits until `count` messages came back; the milliseconds it took. */
const rawExchange = (socket: WebSocket, message: string, count: number) =>
  Effect.async<number>((resume) => {
    let got = 0
    const start = performance.now()
    const onMessage = () => {
      if (++got === count) {
        socket.off("message", onMessage)
        resume(Effect.succeed(performance.now() - start))
      }
    }
    socket.on("message", onMessage)
    socket.send(message)
  })

/** The `rpc` section. */
export const runRpcSection = async (): Promise<void> => {
  const events = num("BENCH_RPC_EVENTS", 5000)
  const calls = num("BENCH_RPC_CALLS", 500)
  const runs = num("BENCH_RPC_RUNS", 5)
  process.stderr.write(`bench rpc: ${events} events to one client, ${calls} sequential calls, ${runs} runs\n`)
  const result = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const pieces = Array.from({ length: events - 2 }, (_, i) => `w${i} `)
    const standin = yield* ModelStandin.start([ModelStandin.text(pieces)])
    const host = yield* serve({ SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" })
    const client = yield* connect(host.url)
    const turn = Chunk.toArray(yield* Stream.runCollect(client.Agent.Send({ message: "go" })))
    const sessionId = (turn[0] as TurnEvent.TurnStarted).sessionId
    const count = turn.length
    const sample = JSON.stringify(Schema.encodeSync(TurnEvent.TurnEvent)(turn[1]!))
    const wss = yield* rawServer(sample)
    const raw = yield* rawClient((wss.address() as { port: number }).port)
    const rpcEvents: Array<number> = []
    const rawEvents: Array<number> = []
    const rpcCall: Array<number> = []
    const rawCall: Array<number> = []
    for (let run = 0; run < runs + 1; run++) {
      const t0 = performance.now()
      const replayed = yield* Stream.runCount(client.Agent.Attach({ sessionId, fromIndex: 0 }))
      const t1 = performance.now()
      if (replayed !== count) return yield* Effect.dieMessage(`replayed ${replayed} of ${count} events`)
      const rawMs = yield* rawExchange(raw, `burst ${count}`, count)
      const c0 = performance.now()
      for (let i = 0; i < calls; i++) yield* client.Host.Version()
      const c1 = performance.now()
      let rawCallMs = 0
      for (let i = 0; i < calls; i++) rawCallMs += yield* rawExchange(raw, "{\"ping\":1}", 1)
      if (run === 0) continue // warm-up
      rpcEvents.push(count / ((t1 - t0) / 1000))
      rawEvents.push(count / (rawMs / 1000))
      rpcCall.push((c1 - c0) / calls)
      rawCall.push(rawCallMs / calls)
    }
    return { count, rpcEvents, rawEvents, rpcCall, rawCall }
  })))
  const ratio = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => median(a.map((v, i) => v / b[i]!))
  process.stdout.write(
    `\n## rpc (${result.count} events, ${calls} calls, median of ${runs})\n\n` +
      "| measure | skald /rpc | raw ws | ratio |\n|---|---|---|---|\n" +
      `| events per second to one client | ${fmt(median(result.rpcEvents), 0)} | ${
        fmt(median(result.rawEvents), 0)
      } | ` +
      `${fmt(ratio(result.rpcEvents, result.rawEvents), 2)}× |\n` +
      `| small call round trip (ms) | ${fmt(median(result.rpcCall), 3)} | ${fmt(median(result.rawCall), 3)} | ` +
      `${fmt(ratio(result.rpcCall, result.rawCall), 2)}× |\n`
  )
}
