/**
 * The agent loop's own cost (`agent` in BENCH_SERVERS, or `node build/root/bench/agent.js` alone —
 * e.g. under `--cpu-prof`): the turn loop (`Agent.run`) over the real manager (a temp home, its
 * SQLite file, the echo fixture — an official-SDK server — over stdio) and the real
 * OpenAI-compatible provider (`NodeHttpClient.dispatcherLayer`, one kept-alive connection) against the
 * model stand-in (test/fixtures/model-standin.ts) on 127.0.0.1.
 *
 * Clocks: the stand-in runs in a worker thread of this process (bench/agent-standin.ts, the script
 * in bench/agent-script.ts), on an event loop of its own as a model server is: what this thread
 * does after it has sent a request (the events' consumer, the rest of its tick) does not delay the
 * stand-in's reading it, as it did when the two shared one event loop (the consumer's `ToolDone`
 * ran between the request's send and its read: 0.24 ms of each round). Its times (a request's body
 * read, an event's bytes handed to the socket, the last byte) cross the threads on one monotonic
 * clock (`process.hrtime`, `clockOf`) and compare with this thread's `performance.now()` (the
 * consumer of `Agent.run`, the manager's `call`, the end of the provider's stream).
 *
 * 1. **Loop time per round.** `BENCH_AGENT_TURNS` turns (default 20, after `BENCH_AGENT_WARMUP`
 *    untimed ones, default 5), each of `BENCH_AGENT_ROUNDS` rounds (default 5): the stand-in answers
 *    each round but the last with one call to the echo tool and the last with text, its events
 *    `BENCH_AGENT_EVENT_DELAY` ms apart (default 2; a model streams its tokens over time, so what
 *    the loop parses after the last byte is the stream's tail, not the whole answer; 0 = all
 *    events at once). Per round: (request k+1 arrives at the stand-in) − (the last byte of
 *    response k) − (the tool call: the manager's `call` as the loop calls it, timed by wrapping the
 *    manager the loop is given) = the loop's own time. The raw components are printed too, and the
 *    loop's time split where it can be seen from outside Agent.ts: the provider's tail (last byte →
 *    the model stream ends, timed by wrapping the raw parts the loop reads, StreamParts.ts), then
 *    until the call starts (the assistant message persisted, `ToolStarted`), then from the call's
 *    end to the next request (the result persisted, `ToolDone`, the tools and prompt built; then,
 *    from the start of the next model stream, the request encoded and sent), and the floor under that
 *    last step: the same request bodies sent by a bare undici `request` on the same connections,
 *    until the stand-in has read them. Also the
 *    process's CPU time per round over the timed turns (`process.cpuUsage`: every thread's, the
 *    stand-in's and the MCP client's included: a figure the machine's load inflates less than wall time), and, timed alone,
 *    what @effect/ai's `LanguageModel.streamText` builds on every request with a toolkit: the
 *    response schema `Response.StreamPart(toolkit)`, for the loop's tools and ten times as many.
 *    And the same turns with an in-process model (no HTTP, no stand-in), once through
 *    `LanguageModel.make` alone (a model without raw parts, read through `streamText`: @effect/ai
 *    builds its schema and decodes each part) and once handing raw parts over (as the providers do):
 *    per round, (turn wall − tool calls) / rounds and the process CPU / rounds (the MCP client's
 *    share of the calls included), turn set-up included. And, without the loop, the process CPU per
 *    request of one tool-call answer read by the raw `fetch` reader, by the provider's `streamText`
 *    with the loop's toolkit, and by the provider's raw parts (what the loop reads).
 * 2. **Time added to the first streamed token.** `BENCH_AGENT_TURNS` iterations, the order rotating:
 *    the same scripted text answer (headers, then the role chunk, then the first content delta
 *    `BENCH_AGENT_EVENT_DELAY` ms later — at least 2 — so the reader is idle when it comes) read by
 *    (a) a raw `fetch` SSE reader (split frames, `JSON.parse`, the first non-empty
 *    `delta.content`): the reference, (b) the provider alone (its raw parts, as the loop reads
 *    them: the first `text-delta`), (c) a whole turn (`Agent.run`, the first `TextDelta` at its consumer). Each is
 *    timed from the stand-in handing the first content delta's bytes to the socket; the added
 *    times are per iteration (b − a, c − b, c − a).
 *
 * `BENCH_AGENT_PROFILE=<file>` writes a CPU profile of the timed loop turns alone (1.).
 *
 * Medians and p90 (nearest rank); targets (issue 19): loop ≤ 2 ms per round, ≤ 1 ms added to the
 * first token (medians). The MCP server runs on CPU 1 when the bench pins (bench/machine.ts).
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import * as Response from "@effect/ai/Response"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { McpServerEntry, ServerConfig, ServerName, TurnEvent } from "@skald/domain"
import { HostServices, McpManager, Paths } from "@skald/server"
import { Agent } from "@skald/server/agent/Agent"
import { ChatStore } from "@skald/server/agent/ChatStore"
import * as JsonSchemaTool from "@skald/server/agent/llm/JsonSchemaTool"
import * as OpenAiCompatible from "@skald/server/agent/llm/OpenAiCompatible"
import * as StreamParts from "@skald/server/agent/llm/StreamParts"
import * as Approvals from "@skald/server/inbox/Approvals"
import * as Telemetry from "@skald/server/Telemetry"
import { Context, Effect, Layer, Schedule, type Scope, Stream } from "effect"
import * as Fs from "node:fs"
import * as Inspector from "node:inspector/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { Worker } from "node:worker_threads"
import {
  type Answer,
  type Ask,
  clockOf,
  FIRST_CONTENT_EVENT,
  FIRST_TOKEN,
  type Seen,
  type Settings
} from "./agent-script.js"
import { fmt, median, pin } from "./machine.js"

const here = Path.dirname(fileURLToPath(import.meta.url))
/** The repository root (this file runs as build/root/bench/agent.js). */
const root = Path.resolve(here, "../../..")
const echoFixture = Path.join(root, "test/fixtures/echo.ts")

/** The nearest-rank p90 of a non-empty list. */
const p90 = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil(0.9 * s.length) - 1)]!
}

const settings = (): Settings => ({
  turns: Number(process.env.BENCH_AGENT_TURNS ?? 20),
  warmup: Number(process.env.BENCH_AGENT_WARMUP ?? 5),
  rounds: Math.max(2, Number(process.env.BENCH_AGENT_ROUNDS ?? 5)),
  eventDelay: Number(process.env.BENCH_AGENT_EVENT_DELAY ?? 2)
})

/** The loop's view of one tool call: when the manager's `call` began and ended. */
interface CallTiming {
  readonly start: number
  readonly end: number
}

/** The stand-in, in a thread of its own (bench/agent-standin.ts). */
interface Standin {
  readonly url: string
  /** How many requests it has received. */
  readonly count: Effect.Effect<number>
  /** The requests from `from` on, once the first `complete` have been answered to their last byte. */
  readonly requests: (from: number, complete?: number) => Effect.Effect<ReadonlyArray<Seen>>
}

const startStandin = (s: Settings): Effect.Effect<Standin, never, Scope.Scope> =>
  Effect.gen(function*() {
    const base = process.hrtime.bigint()
    const clock = clockOf(base)
    const worker = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Worker(new URL("./agent-standin.js", import.meta.url), { workerData: { base: String(base), settings: s } })
      ),
      (worker) => Effect.promise(() => worker.terminate())
    )
    const waiting = new Map<number, (answer: Extract<Answer, { type: "requests" }>) => void>()
    const url = yield* Effect.async<string>((resume) => {
      worker.on("message", (answer: Answer) => {
        if (answer.type === "ready") resume(Effect.succeed(answer.url))
        else waiting.get(answer.id)?.(answer)
      })
      worker.on("error", (error) => resume(Effect.die(error)))
    })
    let next = 0
    const ask = (from: number, complete: number) =>
      Effect.async<Extract<Answer, { type: "requests" }>>((resume) => {
        const id = next++
        waiting.set(id, (answer) => {
          waiting.delete(id)
          resume(Effect.succeed(answer))
        })
        worker.postMessage({ id, from, complete } satisfies Ask)
      })
    // Its times on this thread's `performance.now()`.
    const local = (r: Seen): Seen => ({
      index: r.index,
      text: r.text,
      timing: {
        arrived: clock.fromShared(r.timing.arrived),
        eventsAt: r.timing.eventsAt.map(clock.fromShared),
        lastByteAt: r.timing.lastByteAt === undefined ? undefined : clock.fromShared(r.timing.lastByteAt)
      }
    })
    return {
      url,
      count: Effect.map(ask(Number.MAX_SAFE_INTEGER, 0), (a) => a.total),
      requests: (from, complete = 0) => Effect.map(ask(from, complete), (a) => a.requests.map(local))
    }
  })

/** The manager, the provider and the loop over them, with the timing hooks. */
const setup = (s: Settings, home: string) =>
  Effect.gen(function*() {
    const standin = yield* startStandin(s)
    const context = yield* Layer.build(
      Layer.provideMerge(
        McpManager.McpManager.Default({ startTimeout: "20 seconds", callTimeout: "20 seconds" }),
        HostServices.layer(Paths.Paths.Test(home))
      )
    )
    const manager = Context.get(context, McpManager.McpManager)
    const command = [...(pin ? ["taskset", "-c", "1"] : []), process.execPath, "--import", "tsx", echoFixture]
    yield* Effect.orDie(manager.register(McpServerEntry.McpServerEntry.make({
      name: ServerName.make("echo"),
      config: ServerConfig.StdioServerConfig.make({ command: command[0]!, args: command.slice(1), env: {} }),
      enabled: true
    })))
    yield* manager.list.pipe(
      Effect.orDie,
      Effect.map((all) => all.find((server) => server.name === "echo")?.state),
      Effect.filterOrFail((state) => state === "connected", (state) => `the echo fixture is ${state ?? "absent"}`),
      Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 400 }),
      Effect.orDieWith((why) => new Error(`${why}, not connected, after 20 s`))
    )

    const calls: Array<CallTiming> = []
    const timedManager = McpManager.McpManager.make({
      ...manager,
      call: (name, args, options) =>
        Effect.suspend(() => {
          const start = performance.now()
          return manager.call(name, args, options).pipe(
            Effect.ensuring(Effect.sync(() => calls.push({ start, end: performance.now() })))
          )
        })
    })

    const http = yield* Layer.build(NodeHttpClient.dispatcherLayer)
    const provider = yield* OpenAiCompatible.make({ baseUrl: standin.url, model: "standin-model", maxRetries: 1 })
      .pipe(Effect.provide(http))
    const streamStarts: Array<number> = []
    const streamEnds: Array<number> = []
    // The loop pulls the provider's raw parts (StreamParts.ts): the timing wraps the request's
    // opening and the pull that says it has ended.
    const timedModel = StreamParts.withOpen(provider, (request) =>
      Effect.suspend(() => {
        streamStarts.push(performance.now())
        return Effect.map(StreamParts.openOf(provider)(request), (pull) =>
          Effect.tap(pull, (parts) =>
            Effect.sync(() => {
              if (parts === undefined) streamEnds.push(performance.now())
            })))
      }))
    const managerContext = Context.add(context, McpManager.McpManager, timedManager)
    const agentWith = (model: LanguageModel.Service) =>
      Effect.map(
        Layer.build(
          // The echo server's tools offered from round 1 (no activate_tools round): the loop's own
          // time per round is the figure, lazy loading's cost is bench/agent-tokens.ts's.
          Agent.Default({ agentsDir: Path.join(root, "agents"), alwaysOffered: "all" }).pipe(
            Layer.provideMerge(ChatStore.Default),
            Layer.provideMerge(Approvals.unattended("allow")),
            Layer.provide(Layer.succeed(LanguageModel.LanguageModel, model)),
            Layer.provide(Layer.succeedContext(managerContext))
          )
        ),
        (built) => Context.get(built, Agent)
      )
    const agent = yield* agentWith(timedModel)
    const inProcess = {
      decoded: yield* agentWith(yield* inProcessModel(s, "through LanguageModel.make")),
      raw: yield* agentWith(yield* inProcessModel(s, "raw"))
    }
    const dispatcher = Context.get(http, NodeHttpClient.Dispatcher)
    return { standin, provider, manager, agent, inProcess, calls, streamStarts, streamEnds, dispatcher }
  })

type Setup = Effect.Effect.Success<ReturnType<typeof setup>>

/**
 * A model in this process answering as the stand-in does (a call to the echo tool each round but
 * the last, then text), with no HTTP: either through `LanguageModel.make` alone — a model without
 * raw parts, which the loop reads through `streamText`, so @effect/ai builds its response schema
 * and decodes each part with it (every provider before StreamParts) — or `raw`, handing its parts
 * over as the providers do (`StreamParts.withStreamParts`). Their difference is @effect/ai's
 * per-request cost in the loop.
 */
const inProcessModel = (s: Settings, kind: "through LanguageModel.make" | "raw") =>
  Effect.gen(function*() {
    const encoded = (options: LanguageModel.ProviderOptions | { readonly prompt: any }) => {
      const content: ReadonlyArray<{ role: string }> = options.prompt.content
      const results = content.filter((m) => m.role === "tool").length
      const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 }
      if (results >= s.rounds - 1) {
        return [
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: "All done." },
          { type: "text-end", id: "t" },
          { type: "finish", reason: "stop", usage }
        ] as const
      }
      return [
        { type: "tool-call", id: `call_${results}`, name: "mcp__echo__echo", params: { message: "in process" } },
        { type: "finish", reason: "tool-calls", usage }
      ] as const
    }
    const made = yield* LanguageModel.make({
      streamText: (options) => Stream.fromIterable(encoded(options) as ReadonlyArray<Response.StreamPartEncoded>),
      generateText: () => Effect.dieMessage("not used")
    })
    if (kind !== "raw") return made
    return StreamParts.withStreamParts(
      made,
      (options) => Stream.fromIterable(encoded(options) as ReadonlyArray<Response.StreamPartEncoded>)
    )
  })

/** One in-process turn: (its wall time − its tool calls) per round, and its CPU per round. */
const inProcessTurn = (env: Setup, s: Settings, agent: Agent) =>
  Effect.gen(function*() {
    const firstCall = env.calls.length
    const cpu = process.cpuUsage()
    const start = performance.now()
    let end: TurnEvent.TurnEvent | undefined
    yield* Stream.runForEach(agent.run({ message: "in process" }), (event) => Effect.sync(() => (end = event)))
    const wall = performance.now() - start
    const used = process.cpuUsage(cpu)
    if (end?._tag !== "TurnDone" || end.rounds !== s.rounds) {
      return yield* Effect.dieMessage(`the in-process turn did not end as scripted: ${JSON.stringify(end)}`)
    }
    const tools = env.calls.slice(firstCall).reduce((sum, c) => sum + c.end - c.start, 0)
    return { loop: (wall - tools) / s.rounds, cpu: (used.user + used.system) / 1000 / s.rounds }
  })

/** One round's figures (ms). */
interface Round {
  readonly gap: number
  readonly tool: number
  readonly toolEvents: number
  readonly loop: number
  readonly tail: number
  readonly beforeCall: number
  readonly afterCall: number
  readonly beforeStream: number
  readonly streamToRequest: number
}

/** One loop turn: its tool rounds' figures. */
const loopTurn = (env: Setup, s: Settings) =>
  Effect.gen(function*() {
    const firstRequest = yield* env.standin.count
    const firstCall = env.calls.length
    const firstEnd = env.streamEnds.length
    const firstStart = env.streamStarts.length
    const started: Array<number> = []
    const done: Array<number> = []
    let end: TurnEvent.TurnEvent | undefined
    yield* Stream.runForEach(env.agent.run({ message: "loop: call the echo tool, then answer" }), (event) =>
      Effect.sync(() => {
        if (event._tag === "ToolStarted") {
          started.push(performance.now())
        } else if (event._tag === "ToolDone") {
          done.push(performance.now())
        }
        end = event
      }))
    if (end?._tag !== "TurnDone" || end.rounds !== s.rounds) {
      return yield* Effect.dieMessage(`the loop turn did not end as scripted: ${JSON.stringify(end)}`)
    }
    const requests = yield* env.standin.requests(firstRequest, firstRequest + s.rounds)
    const calls = env.calls.slice(firstCall)
    const ends = env.streamEnds.slice(firstEnd)
    const starts = env.streamStarts.slice(firstStart)
    const rounds: Array<Round> = []
    for (let k = 0; k < s.rounds - 1; k++) {
      const lastByte = requests[k]!.timing.lastByteAt!
      const next = requests[k + 1]!.timing.arrived
      const call = calls[k]!
      const gap = next - lastByte
      const tool = call.end - call.start
      rounds.push({
        gap,
        tool,
        toolEvents: done[k]! - started[k]!,
        loop: gap - tool,
        tail: ends[k]! - lastByte,
        beforeCall: call.start - ends[k]!,
        afterCall: next - call.end,
        beforeStream: starts[k + 1]! - call.end,
        streamToRequest: next - starts[k + 1]!
      })
    }
    return rounds
  })

/** When the first content delta's bytes of request `index` were handed to the socket. */
const firstContentAt = (env: Setup, index: number) =>
  Effect.flatMap(env.standin.requests(index, index + 1), (requests) => {
    const at = requests[0]?.timing.eventsAt[FIRST_CONTENT_EVENT]
    return at === undefined ? Effect.dieMessage(`request ${index} has no first content delta`) : Effect.succeed(at)
  })

type Reader = "raw" | "provider" | "agent"

/** Reads one first-token answer by `reader`; the time from the stand-in's write to the reader's first text. */
const firstToken = (env: Setup, reader: Reader) =>
  Effect.gen(function*() {
    const index = yield* env.standin.count
    let seen: number | undefined
    const see = () => {
      if (seen === undefined) seen = performance.now()
    }
    switch (reader) {
      case "raw":
        yield* Effect.promise(() => rawRead(env.standin.url, see))
        break
      case "provider":
        // What the loop reads: the provider's raw parts.
        yield* Stream.runForEach(
          StreamParts.of(env.provider)({ prompt: Prompt.make(`${FIRST_TOKEN}: say hello`), tools: [] }),
          (part) => Effect.sync(() => part.type === "text-delta" && see())
        ).pipe(Effect.orDie)
        break
      case "agent":
        yield* Stream.runForEach(
          env.agent.run({ message: `${FIRST_TOKEN}: say hello` }),
          (event) => Effect.sync(() => event._tag === "TextDelta" && see())
        ).pipe(Effect.orDie)
        break
    }
    if (seen === undefined) return yield* Effect.dieMessage(`${reader}: no text was streamed`)
    return seen - (yield* firstContentAt(env, index))
  })

/** The reference: a plain `fetch` SSE reader, as small as a reader can be and still parse the chunks. */
const rawRead = async (url: string, see: () => void, message = `${FIRST_TOKEN}: say hello`): Promise<void> => {
  const response = await fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({
      model: "standin-model",
      stream: true,
      messages: [{ role: "user", content: message }]
    })
  })
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return
    buffer += decoder.decode(value, { stream: true })
    let end: number
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      if (!frame.startsWith("data: ") || frame === "data: [DONE]") continue
      const content = JSON.parse(frame.slice(6))?.choices?.[0]?.delta?.content
      if (typeof content === "string" && content.length > 0) see()
    }
  }
}

/**
 * What @effect/ai's `LanguageModel.streamText` does on every request with a toolkit, before it
 * decodes a part: builds the response schema `Response.StreamPart(toolkit)` (two schemas per tool).
 * Timed alone for the loop's toolkit (built as Agent.ts builds it), and for ten times as many tools.
 */
const responseSchemaCost = (env: Setup, samples: number) =>
  Effect.gen(function*() {
    const tools = yield* env.manager.tools
    const toolkit = (copies: number) => {
      const record: Record<string, JsonSchemaTool.JsonSchemaTool> = {}
      for (let c = 0; c < copies; c++) {
        for (const t of tools) {
          const name = c === 0 ? t.name : `${t.name}_${c}`
          record[name] = JsonSchemaTool.fromJsonSchema(name, t.tool.description, t.tool.inputSchema)
        }
      }
      return { tools: record } as unknown as Toolkit.Toolkit<Record<string, JsonSchemaTool.JsonSchemaTool>>
    }
    return [1, 10].map((copies) => {
      const kit = toolkit(copies)
      const times: Array<number> = []
      for (let i = 0; i < samples + 3; i++) {
        const start = performance.now()
        Response.StreamPart(kit)
        if (i >= 3) times.push(performance.now() - start)
      }
      return { count: copies * tools.length, times }
    })
  })

/**
 * The process's CPU per request for one tool-call answer (a round's answer), read by the raw
 * `fetch` reader, by the provider with the loop's toolkit through `streamText` (calls unresolved:
 * @effect/ai's decode included) and by the provider's raw parts (`StreamParts.of`, what the loop
 * reads): the provider's and @effect/ai's cost per round, without the loop.
 */
const requestCost = (env: Setup, samples: number) =>
  Effect.gen(function*() {
    const record: Record<string, JsonSchemaTool.JsonSchemaTool> = {}
    for (const t of yield* env.manager.tools) {
      record[t.name] = JsonSchemaTool.fromJsonSchema(t.name, t.tool.description, t.tool.inputSchema)
    }
    const toolkit = { tools: record, handle: () => Effect.dieMessage("unused") }
    const message = "provider: call the echo tool"
    const one = {
      raw: Effect.promise(() => rawRead(env.standin.url, () => {}, message)),
      provider: Stream.runDrain(
        env.provider.streamText({ prompt: message, toolkit, disableToolCallResolution: true } as any) as Stream.Stream<
          unknown,
          unknown
        >
      ).pipe(Effect.orDie),
      parts: Stream.runDrain(
        StreamParts.of(env.provider)({ prompt: Prompt.make(message), tools: Object.values(record) })
      )
        .pipe(Effect.orDie)
    }
    const cpu = { raw: [] as Array<number>, provider: [] as Array<number>, parts: [] as Array<number> }
    const orders = [["raw", "provider", "parts"], ["provider", "parts", "raw"], ["parts", "raw", "provider"]] as const
    for (let i = 0; i < samples + 3; i++) {
      for (const kind of orders[i % 3]!) {
        const before = process.cpuUsage()
        yield* one[kind]
        const used = process.cpuUsage(before)
        if (i >= 3) cpu[kind].push((used.user + used.system) / 1000)
      }
    }
    return cpu
  })

/**
 * The request's transport alone, the floor under "stream start → request k+1 arrives": `bodies`
 * (the loop's own request bodies of one turn, as it sent them) sent again, in turn, by a bare
 * undici `request` on the provider's dispatcher (its kept-alive connections) — from the call to
 * the stand-in having read the body (`timing.arrived`, in its thread), the reply then read to its
 * end. Its share of receiving (node:http's parser, the body's events) is in this figure as it is
 * in the loop's.
 */
const requestTransport = (env: Setup, bodies: ReadonlyArray<string>, samples: number) =>
  Effect.gen(function*() {
    const url = new URL(`${env.standin.url}/chat/completions`)
    const times: Array<number> = []
    for (let i = 0; i < samples + 3; i++) {
      for (const body of bodies) {
        const index = yield* env.standin.count
        const sent = performance.now()
        const response = yield* Effect.promise(() =>
          env.dispatcher.request({
            origin: url.origin,
            path: url.pathname,
            method: "POST",
            headers: { "content-type": "application/json" },
            body
          })
        )
        yield* Effect.promise(() => response.body.text())
        const arrived = (yield* env.standin.requests(index, index + 1))[0]?.timing.arrived
        if (arrived === undefined) return yield* Effect.dieMessage("the stand-in did not record the request")
        if (i >= 3) times.push(arrived - sent)
        // As in a turn: the model's answer streams for a while before the next request.
        yield* Effect.sleep("2 millis")
      }
    }
    return times
  })

/**
 * `BENCH_AGENT_PROFILE=<file>`: a V8 CPU profile of the timed loop turns alone (not the other
 * sections), written to `<file>` (`.cpuprofile`, for Chrome's DevTools or a script); the effect
 * returned stops it. Unset: nothing is profiled.
 */
const profileOf = (file: string | undefined): Effect.Effect<Effect.Effect<void>> =>
  file === undefined || file === ""
    ? Effect.succeed(Effect.void)
    : Effect.promise(async () => {
      const session = new Inspector.Session()
      session.connect()
      await session.post("Profiler.enable")
      await session.post("Profiler.setSamplingInterval", { interval: 100 })
      await session.post("Profiler.start")
      return Effect.promise(async () => {
        const { profile } = await session.post("Profiler.stop")
        Fs.writeFileSync(file, JSON.stringify(profile))
        session.disconnect()
        process.stderr.write(`bench agent: the loop turns' CPU profile is in ${file}\n`)
      })
    })

const row = (label: string, xs: ReadonlyArray<number>, digits = 2) =>
  `| ${label} | ${fmt(median(xs), digits)} | ${fmt(p90(xs), digits)} |`

/** Runs the section and prints its tables (markdown on stdout, progress on stderr). */
export const runAgentSection = async (s: Settings = settings()): Promise<void> => {
  const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-bench-agent-"))
  process.stderr.write(
    `bench agent: ${s.turns} turns of ${s.rounds} rounds (+${s.warmup} warm-up), events ${s.eventDelay} ms apart, ` +
      `${pin ? "MCP server on CPU 1" : "not pinned"}\n`
  )
  try {
    const { added, cpuPerRound, inProcess, perRequest, reads, rounds, schemaCost, transport } = await Effect.runPromise(
      Effect.scoped(Effect.gen(function*() {
        const env = yield* setup(s, home)
        const readers: ReadonlyArray<Reader> = ["raw", "provider", "agent"]
        for (let i = 0; i < s.warmup; i++) {
          yield* loopTurn(env, s)
          for (const reader of readers) yield* firstToken(env, reader)
        }
        const rounds: Array<Round> = []
        const profiler = yield* profileOf(process.env.BENCH_AGENT_PROFILE)
        const cpuBefore = process.cpuUsage()
        for (let i = 0; i < s.turns; i++) {
          const turn = yield* loopTurn(env, s)
          rounds.push(...turn)
          process.stderr.write(`  turn ${i + 1}: loop ${turn.map((r) => r.loop.toFixed(2)).join(", ")} ms per round\n`)
        }
        const cpu = process.cpuUsage(cpuBefore)
        yield* profiler
        // The last turn's requests after its first (each carries a tool result), as the loop sent them.
        const total = yield* env.standin.count
        const bodies = (yield* env.standin.requests(total - s.rounds + 1, total)).map((r) => r.text)
        const transport = yield* requestTransport(env, bodies, Math.max(3, Math.ceil(s.turns / 2)))
        const cpuPerRound = (cpu.user + cpu.system) / 1000 / (s.turns * s.rounds)
        const inProcess = {
          decoded: { loop: [] as Array<number>, cpu: [] as Array<number> },
          raw: { loop: [] as Array<number>, cpu: [] as Array<number> }
        }
        for (let i = 0; i < s.warmup; i++) {
          yield* inProcessTurn(env, s, env.inProcess.decoded)
          yield* inProcessTurn(env, s, env.inProcess.raw)
        }
        for (let i = 0; i < s.turns; i++) {
          for (const kind of i % 2 === 0 ? ["decoded", "raw"] as const : ["raw", "decoded"] as const) {
            const r = yield* inProcessTurn(env, s, env.inProcess[kind])
            inProcess[kind].loop.push(r.loop)
            inProcess[kind].cpu.push(r.cpu)
          }
        }
        const schemaCost = yield* responseSchemaCost(env, s.turns)
        const perRequest = yield* requestCost(env, s.turns)
        const reads: Record<Reader, Array<number>> = { raw: [], provider: [], agent: [] }
        for (let i = 0; i < s.turns; i++) {
          for (let j = 0; j < readers.length; j++) {
            const reader = readers[(i + j) % readers.length]!
            reads[reader].push(yield* firstToken(env, reader))
          }
        }
        const added = {
          provider: reads.provider.map((p, i) => p - reads.raw[i]!),
          loop: reads.agent.map((a, i) => a - reads.provider[i]!),
          all: reads.agent.map((a, i) => a - reads.raw[i]!)
        }
        return { added, cpuPerRound, inProcess, perRequest, reads, rounds, schemaCost, transport }
        // As every `skald` command runs: under the OTEL_* variables' telemetry (none: the tracer off).
      })).pipe(Effect.provide(Telemetry.layer))
    )
    const of = (k: keyof Round) => rounds.map((r) => r[k])
    console.log(
      `\n### The agent loop (${s.turns} turns of ${s.rounds} rounds: ${rounds.length} tool rounds; ` +
        `events ${s.eventDelay} ms apart)\n`
    )
    console.log("| per tool round | median (ms) | p90 (ms) |")
    console.log("| --- | ---: | ---: |")
    console.log(row("**the loop's own time** (gap − tool call)", of("loop")))
    console.log(row("gap: last byte of answer k → request k+1 arrives", of("gap")))
    console.log(row("tool call (the manager's `call`, from the loop)", of("tool")))
    console.log(row("tool call, `ToolStarted` → `ToolDone` at the consumer", of("toolEvents")))
    console.log(row("… provider's tail: last byte → the model stream ends", of("tail")))
    console.log(row("… stream end → the call starts (assistant message persisted)", of("beforeCall")))
    console.log(row("… call end → request k+1 arrives", of("afterCall")))
    console.log(
      row("… … call end → the next model stream starts (result persisted, `ToolDone`, the tools)", of("beforeStream"))
    )
    console.log(
      row(
        "… … stream start → request k+1 arrives (the request built, encoded and sent)",
        of("streamToRequest")
      )
    )
    console.log(
      row(
        "(reference) the same request bodies sent by a bare undici `request` → arrived at the stand-in",
        transport
      )
    )
    console.log(
      `| process CPU per round, all rounds (loop, provider, stand-in, MCP client) | ${fmt(cpuPerRound, 2)} | |`
    )
    for (const { count, times } of schemaCost) {
      console.log(row(`@effect/ai's \`Response.StreamPart(toolkit)\`, built per request: ${count} tools, alone`, times))
    }
    console.log(`\n### The loop with an in-process model, no HTTP (${s.turns} turns each, alternating)\n`)
    console.log("| per round (turn set-up included) | median (ms) | p90 (ms) |")
    console.log("| --- | ---: | ---: |")
    console.log(row("through `LanguageModel.make` (as every provider): wall − tool calls", inProcess.decoded.loop))
    console.log(row("… CPU", inProcess.decoded.cpu))
    console.log(row("raw parts (`StreamParts`, as the providers now): wall − tool calls", inProcess.raw.loop))
    console.log(row("… CPU", inProcess.raw.cpu))
    console.log(row("(no loop) one tool-call answer, raw `fetch` reader: CPU per request", perRequest.raw))
    console.log(row("(no loop) the same answer through the provider with the loop's toolkit: CPU", perRequest.provider))
    console.log(row("(no loop) the same answer, the provider's raw parts (what the loop reads): CPU", perRequest.parts))
    console.log(`\n### First streamed token (${s.turns} iterations, rotating order)\n`)
    console.log("| from the first content delta written to … | median (ms) | p90 (ms) |")
    console.log("| --- | ---: | ---: |")
    console.log(row("a raw `fetch` SSE reader's first content (reference)", reads.raw, 3))
    console.log(row("the provider's first `text-delta` (its raw parts)", reads.provider, 3))
    console.log(row("the first `TextDelta` at the consumer of `Agent.run`", reads.agent, 3))
    console.log(row("added by the provider (provider − raw, per iteration)", added.provider, 3))
    console.log(row("added by the loop (agent − provider)", added.loop, 3))
    console.log(row("**added in all** (agent − raw)", added.all, 3))
    const verdict = (ok: boolean) => (ok ? "met" : "**not met**")
    const loop = median(of("loop"))
    const first = median(added.all)
    console.log("\n| target | measured (median; p90) | |")
    console.log("| --- | ---: | --- |")
    console.log(
      `| the loop's own time ≤ 2 ms per round | ${fmt(loop, 2)} ms; ${fmt(p90(of("loop")), 2)} ms | ${
        verdict(loop <= 2)
      } |`
    )
    const floor = median(transport)
    console.log(
      `| (for reading) the loop's own time less the request's bare transport (${fmt(floor, 2)} ms) | ${
        fmt(loop - floor, 2)
      } ms | |`
    )
    console.log(
      `| ≤ 1 ms added to the first token | ${fmt(first, 3)} ms; ${fmt(p90(added.all), 3)} ms | ${verdict(first <= 1)} |`
    )
    console.log(`\nLoad average at the end: ${Os.loadavg().map((l) => l.toFixed(2)).join(", ")}.`)
  } finally {
    Fs.rmSync(home, { recursive: true, force: true })
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === Path.resolve(process.argv[1])) {
  await runAgentSection()
}
