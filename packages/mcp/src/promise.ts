/**
 * `@skald/mcp/promise`: the engine for plain TypeScript (Promise) code. `connect` starts a stdio
 * server (or reaches an HTTP one) and resolves with a client whose calls are Promises:
 *
 * ```ts
 * import { connect } from "@skald/mcp/promise"
 * const client = await connect({ command: "node", args: ["server.js"] })
 * const { result } = await client.callTool("echo", { message: "hi" }, { signal: AbortSignal.timeout(5000) })
 * await client.close()
 * ```
 *
 * The client lives in a `ManagedRuntime` (its layer: the transport and the engine); `close`
 * disposes it, which runs the transport's shutdown. Each call runs on a fiber of that runtime (a
 * pool of workers; a call with a signal, its own fiber): what fails rejects with the engine's own error — an `McpError`
 * (`McpTimeout`, `McpUnknownTool`, `McpServerExited`, …, each keeping its `_tag`) — and an
 * aborted `signal` interrupts the fiber, so the request is abandoned as any interrupted call is
 * (`notifications/cancelled` sent once) and the Promise rejects with the signal's reason.
 *
 * Shipped as one esbuild bundle (scripts/bundle.js) with its own copy of `effect` and of the
 * domain's classes, since the app does not share an Effect instance with it: check a rejection's
 * `_tag`, or `instanceof` the classes of the `McpError` exported here (not `@skald/domain`'s).
 *
 * @since 0.1.0
 */
import type * as McpError from "@skald/domain/McpError"
import type * as McpTool from "@skald/domain/McpTool"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Runtime from "effect/Runtime"
import type * as HttpTransport from "./HttpTransport.js"
import * as McpClient from "./McpClient.js"
import * as McpLog from "./McpLog.js"
import * as StdioTransport from "./StdioTransport.js"

/** The engine's errors, the classes a rejection is an instance of (`McpTimeout`, `McpUnknownTool`, …). */
export * as McpError from "@skald/domain/McpError"

/** A stdio server: the command to start (the rest as `StdioTransport.Options`; `server` defaults to the command). */
export interface StdioConfig extends Omit<StdioTransport.Options, "server"> {
  readonly server?: string | undefined
  readonly url?: undefined
}

/** A streamable HTTP server (the rest as `HttpTransport.Options`; `server` defaults to the URL). */
export interface HttpConfig extends Omit<HttpTransport.Options, "server"> {
  readonly server?: string | undefined
  readonly command?: undefined
}

/** What `connect` needs: a server, how the client introduces itself, and where its log lines go. */
export type Config = (StdioConfig | HttpConfig) & {
  /** The engine's options (client info, timeouts, …). */
  readonly client?: McpClient.Options | undefined
  /**
   * Told every diagnostic line of the connection (the server's stderr, its `notifications/message`,
   * start and stop); by default they are dropped.
   */
  readonly onLog?: ((line: McpLog.McpLogLine) => void) | undefined
}

/** Per-call options. */
export interface CallOptions {
  /** Aborting it abandons the request (`notifications/cancelled`); the call rejects with `signal.reason`. */
  readonly signal?: AbortSignal | undefined
  /** Overrides the client's timeout for this request (a number is milliseconds). */
  readonly timeout?: Duration.DurationInput | undefined
  /** Told each `notifications/progress` of this call. */
  readonly onProgress?: ((progress: McpClient.Progress) => void) | undefined
}

/** A connected client. Every method rejects with an `McpError` (its `_tag` says which). */
export interface Client {
  /** The server name, for logs and errors. */
  readonly server: string
  /** What the server said in `initialize`. */
  readonly identity: McpClient.ServerIdentity
  /** Calls a tool and classifies its result (`isError` results resolve, with `isError: true`). */
  readonly callTool: (
    name: string,
    args?: McpClient.JsonObject,
    options?: CallOptions
  ) => Promise<McpClient.CallOutcome>
  /** Lists every tool now (following `nextCursor`); the engine's cached list is updated. */
  readonly listTools: (
    options?: { readonly signal?: AbortSignal | undefined }
  ) => Promise<ReadonlyArray<McpTool.McpTool>>
  /** Ends the connection (the transport's shutdown sequence); calls still under way reject. */
  readonly close: () => Promise<void>
  /** The Effect client underneath, for what this face does not cover. */
  readonly effect: McpClient.Service
}

/** A call waiting for, or running on, a worker of the pool. */
interface Job {
  readonly effect: Effect.Effect<unknown, McpError.McpError>
  readonly resolve: (a: unknown) => void
  readonly reject: (e: unknown) => void
}

const silentSink: McpLog.Sink = { emit: () => Effect.void }

/** Settles a Promise from a call fiber's exit: the typed failure itself, the abort reason, or the defect. */
const settle = <A>(
  exit: Exit.Exit<A, McpError.McpError>,
  resolve: (a: A) => void,
  reject: (e: unknown) => void,
  signal: AbortSignal | undefined
) => {
  if (Exit.isSuccess(exit)) return resolve(exit.value)
  const failure = Cause.failureOption(exit.cause)
  if (failure._tag === "Some") return reject(failure.value)
  if (signal?.aborted === true && Cause.isInterruptedOnly(exit.cause)) return reject(signal.reason)
  reject(Cause.squash(exit.cause))
}

const transportLayer = (config: Config): Effect.Effect<Layer.Layer<McpClient.McpClient, McpError.McpError>> => {
  if (config.url !== undefined) {
    const { client, onLog: _onLog, ...options } = config
    // HTTP (node:http, SSE, OAuth's pieces) is loaded only for an HTTP server.
    return Effect.map(
      Effect.promise(() => import("./HttpTransport.js")),
      (Http) => Http.layerClient({ ...options, server: config.server ?? config.url }, client)
    )
  }
  const { client, onLog: _onLog, ...options } = config as StdioConfig & Config
  return Effect.succeed(
    StdioTransport.layerClient({ ...options, server: config.server ?? options.command }, client)
  )
}

/**
 * Connects and initializes; resolves with the client once `initialize` has answered. Rejects
 * with the `McpError` that stopped it (`McpSpawnError`, `McpServerExited`, `McpTimeout`, …).
 */
export const connect = async (config: Config): Promise<Client> => {
  const onLog = config.onLog
  const sink: McpLog.Sink = onLog === undefined ? silentSink : { emit: (line) => Effect.sync(() => onLog(line)) }
  const layer = await Effect.runPromise(transportLayer(config))
  const managed = ManagedRuntime.make(
    Layer.provide(layer, Layer.succeed(McpLog.McpLogSink, sink))
  )
  const built = await Effect.runPromiseExit(managed.runtimeEffect)
  if (Exit.isFailure(built)) {
    await managed.dispose()
    throw Cause.squash(built.cause)
  }
  const runtime = built.value
  const service = Context.get(runtime.context, McpClient.McpClient)
  const fork = Runtime.runFork(runtime)

  /**
   * Calls without a signal run on a pool of worker fibers, one call at a time each: a call is
   * handed to an idle worker, or starts a new one (so the pool grows to the most calls ever in
   * flight at once, and its workers wait, idle, after that). Not a fiber per call: every root fiber
   * passes through Effect's global set of root fibers, and a set whose entries churn keeps the
   * fibers it held — with each its exit value, the call's result — alive through the next
   * young-generation collections, which promoted every 100 KB answer to the old generation (GC
   * was 18 % of the client's time on a stream of them; docs/performance.md).
   */
  const idle: Array<(job: Exit.Exit<Job>) => void> = []
  let closed = false
  const workers = new Set<Fiber.RuntimeFiber<void>>()
  const waitForJob = Effect.async<Job>((resume) => {
    idle.push(resume)
  })
  const runJob = (job: Job): Effect.Effect<void> =>
    Effect.flatMap(Effect.exit(job.effect), (exit) => {
      settle(exit, job.resolve, job.reject, undefined)
      // After close, a worker ends with its call (the calls of a closed client fail at once).
      return closed ? Effect.void : Effect.flatMap(waitForJob, runJob)
    })
  const startWorker = (job: Job) => {
    const fiber = fork(runJob(job), { immediate: true })
    workers.add(fiber)
    fiber.addObserver(() => workers.delete(fiber))
  }

  /** Runs `effect` on the pool, or (with a `signal`) as its own fiber, which the signal interrupts. */
  const run = <A>(effect: Effect.Effect<A, McpError.McpError>, signal: AbortSignal | undefined): Promise<A> =>
    new Promise<A>((resolve, reject) => {
      if (signal === undefined) {
        const job: Job = { effect, resolve: resolve as (a: unknown) => void, reject }
        const worker = idle.pop()
        if (worker !== undefined) worker(Exit.succeed(job))
        else startWorker(job)
        return
      }
      if (signal.aborted) return reject(signal.reason)
      const fiber = fork(effect, { immediate: true })
      const onAbort = () => fiber.unsafeInterruptAsFork(FiberId.none)
      signal.addEventListener("abort", onAbort, { once: true })
      fiber.addObserver((exit) => {
        signal.removeEventListener("abort", onAbort)
        settle(exit, resolve, reject, signal)
      })
    })

  let closing: Promise<void> | undefined
  return {
    server: service.server,
    identity: service.identity,
    callTool: (name, args, options) => {
      if (options === undefined) return run(service.callTool(name, args), undefined)
      const onProgress = options.onProgress
      return run(
        service.callTool(name, args, {
          timeout: options.timeout,
          onProgress: onProgress === undefined ? undefined : (p) => Effect.sync(() => onProgress(p))
        }),
        options.signal
      )
    },
    listTools: (options) => run(Effect.map(service.refreshTools, (list) => list.tools), options?.signal),
    close: () => (closing ??= managed.dispose().then(() => {
      closed = true
      // The idle workers wait for work that will not come; busy ones have failed with the connection.
      idle.length = 0
      for (const fiber of workers) fiber.unsafeInterruptAsFork(FiberId.none)
    })),
    effect: service
  }
}
