/**
 * The stdio transport: a child process speaking newline-delimited JSON-RPC, as a scoped resource.
 * Closing the scope runs the spec's shutdown sequence on the whole process group.
 *
 * @since 0.1.0
 */
import * as McpError from "@skald/domain/McpError"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as ChildProcess from "node:child_process"
import * as DirectDelivery from "./internal/directDelivery.js"
import * as ExitReaper from "./internal/exitReaper.js"
import * as HeapTrim from "./internal/heapTrim.js"
import * as LineFramer from "./internal/lineFramer.js"
import * as StderrLines from "./internal/stderrLines.js"
import * as WriteBatcher from "./internal/writeBatcher.js"
import * as JsonRpc from "./JsonRpc.js"
import * as McpClient from "./McpClient.js"
import * as McpLog from "./McpLog.js"
import { DEFAULT_MAX_MESSAGE_BYTES } from "./Protocol.js"
import { type Service, Transport } from "./Transport.js"

/** How to start the server and how patiently to stop it. */
export interface Options {
  /** The server name, for logs and errors. */
  readonly server: string
  readonly command: string
  readonly args?: ReadonlyArray<string> | undefined
  /** Merged over the parent's environment (or, with `inheritEnv: false`, the whole environment). */
  readonly env?: Readonly<Record<string, string>> | undefined
  /**
   * Whether the server inherits this process's environment (default true, as `spawn` does). A
   * host that holds secrets in its own environment passes false and builds the server's
   * environment itself, so nothing it did not mean to share reaches the server.
   */
  readonly inheritEnv?: boolean | undefined
  readonly cwd?: string | undefined
  /** The largest line accepted from the server (default 64 MiB). */
  readonly maxMessageBytes?: number | undefined
  /** How long to wait for the server to exit after its stdin is closed (default 2 s). */
  readonly stdinGrace?: Duration.DurationInput | undefined
  /** How long to wait after SIGTERM before SIGKILL (default 2 s). */
  readonly termGrace?: Duration.DurationInput | undefined
  /** How many of the last stderr lines an exit error carries (default 20). */
  readonly stderrTailLines?: number | undefined
  /**
   * The most messages one pipe write holds (default 32). The messages of one event-loop turn are
   * written together, in writes of at most this many, so that a burst's first requests reach the
   * server while the rest are still being made; 1 writes each message as it is sent.
   */
  readonly writeBatch?: number | undefined
}

type ExitInfo = { readonly code: number | null; readonly signal: NodeJS.Signals | null }

const spawnReason = (error: NodeJS.ErrnoException): string => {
  switch (error.code) {
    case "ENOENT":
      return "command not found"
    case "EACCES":
      return "permission denied"
    default:
      return error.message
  }
}

const killGroup = (pid: number | undefined, signal: NodeJS.Signals): boolean => {
  if (pid === undefined) return false
  try {
    process.kill(-pid, signal)
    return true
  } catch {
    return false
  }
}

/** Starts the server process; the returned transport lives as long as the scope. */
export const make = (options: Options): Effect.Effect<Service, McpError.McpSpawnError, Scope.Scope> =>
  Effect.gen(function*() {
    // Large answers' read buffers stay mapped between answers (internal/heapTrim.ts).
    HeapTrim.once()
    const server = options.server
    const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
    const stdinGrace = Duration.decode(options.stdinGrace ?? "2 seconds")
    const termGrace = Duration.decode(options.termGrace ?? "2 seconds")
    const tailSize = options.stderrTailLines ?? 20
    const commandLine = [options.command, ...(options.args ?? [])].join(" ")

    const incoming = yield* Mailbox.make<JsonRpc.Incoming, McpError.McpConnectionError>()
    // Log lines from the process callbacks go through a mailbox, in order, to the sink in place at
    // connect time. A mailbox keeps lines buffered until its taker actually resumes, so the last
    // drain below sees every line, even one logged as the pump was being interrupted.
    const logs = yield* Mailbox.make<McpLog.McpLogLine>()
    const sink = yield* McpLog.McpLogSink
    const log = (tag: McpLog.Tag, text: string) => logs.unsafeOffer({ server, tag, text })
    const emitAll = (lines: Iterable<McpLog.McpLogLine>) => Effect.forEach(lines, sink.emit, { discard: true })

    // Registered first, so it runs last: whatever was logged during shutdown still reaches the sink.
    yield* Effect.addFinalizer(() => logs.clear.pipe(Effect.flatMap(emitAll)))
    yield* logs.takeAll.pipe(Effect.flatMap(([lines]) => emitAll(lines)), Effect.forever, Effect.forkScoped)

    const exited = yield* Deferred.make<ExitInfo>()
    const stderrTail: Array<string> = []

    // Writes of one event-loop turn go out together, cut every `writeBatch` messages
    // (internal/writeBatcher.ts). Made before the process is acquired: its release (shutdown)
    // flushes, and may run before the code below does (an interruption right after the spawn, e.g.
    // a server restarted while starting).
    let stdin: NodeJS.WritableStream & { readonly writable: boolean } | undefined
    const writes = WriteBatcher.make({
      write: (data) => {
        if (stdin?.writable === true) stdin.write(data)
      },
      schedule: setImmediate,
      maxMessages: options.writeBatch
    })

    let untrack: (() => void) | undefined
    const child = yield* Effect.acquireRelease(
      Effect.async<ChildProcess.ChildProcess, McpError.McpSpawnError>((resume) => {
        const handle = ChildProcess.spawn(options.command, options.args ?? [], {
          stdio: ["pipe", "pipe", "pipe"],
          env: options.inheritEnv === false
            ? { ...options.env }
            : options.env === undefined
            ? process.env
            : { ...process.env, ...options.env },
          cwd: options.cwd,
          // Own process group (setsid): a terminal's Ctrl-C does not reach it, and the whole group is signalled.
          detached: true,
          windowsHide: true
        })
        let spawned = false
        handle.once("error", (error: NodeJS.ErrnoException) => {
          if (!spawned) {
            resume(
              Effect.fail(new McpError.McpSpawnError({ server, command: commandLine, reason: spawnReason(error) }))
            )
          } else {
            log("lifecycle", `process error: ${error.message}`)
          }
        })
        handle.once("spawn", () => {
          spawned = true
          resume(Effect.succeed(handle))
        })
        handle.once("exit", (code, signal) => {
          Deferred.unsafeDone(exited, Exit.succeed({ code, signal }))
        })
      }),
      (handle) => shutdown(handle)
    )

    const pid = child.pid
    stdin = child.stdin ?? undefined
    // If this process exits before the scope closes, the group is still shut down (internal/exitReaper.ts);
    // the shutdown lets go of it once done.
    if (pid !== undefined) untrack = ExitReaper.track(pid, Duration.toMillis(stdinGrace), Duration.toMillis(termGrace))
    log("lifecycle", `started (pid ${pid}): ${commandLine}`)

    // stderr: captured line by line onto the log stream, tagged `stderr`, and kept for exit errors.
    // A line over 64 KiB is cut there with a marker; the lines after it are still read.
    const stderrLines = StderrLines.make({
      maxLineBytes: 64 * 1024,
      onLine: (line) => {
        if (stderrTail.length === tailSize) stderrTail.shift()
        stderrTail.push(line)
        log("stderr", line)
      }
    })
    child.stderr!.on("data", stderrLines.push)
    child.stderr!.on("error", () => {})

    // stdout: newline-delimited JSON-RPC. Responses go to the engine directly when it takes them
    // (internal/directDelivery.ts); everything else, in order, through `incoming`.
    let receiver: DirectDelivery.Receiver | undefined
    const stdoutFramer = LineFramer.make({
      maxLineBytes: maxMessageBytes,
      onLine: (line) => {
        let value: unknown
        try {
          value = JSON.parse(line)
        } catch {
          log("warning", `ignored a stdout line that is not JSON: ${preview(line)}`)
          return
        }
        if (receiver !== undefined) {
          const response = JsonRpc.asResponse(value)
          if (response !== undefined && receiver.response(response)) return
        }
        const message = JsonRpc.classify(value)
        if (message === undefined) {
          log("warning", `ignored a stdout line that is not a JSON-RPC 2.0 message: ${preview(line)}`)
          return
        }
        receiver?.queued()
        incoming.unsafeOffer(message)
      },
      onTooLarge: () => {
        log("lifecycle", `closed the connection: a message exceeded ${maxMessageBytes} bytes`)
        incoming.unsafeDone(Exit.fail(new McpError.McpMessageTooLarge({ server, limitBytes: maxMessageBytes })))
        child.stdout!.destroy()
      }
    })
    child.stdout!.on("data", stdoutFramer.push)
    child.stdout!.on("error", () => {})
    child.stdin!.on("error", () => {})

    // Exit: wait briefly for stdout to drain (a response written just before exiting still counts),
    // then fail every pending request with the exit status and the last stderr lines.
    child.once("exit", (code, signal) => {
      log("lifecycle", signal !== null ? `killed by ${signal}` : `exited with code ${code}`)
      const finish = () =>
        incoming.unsafeDone(
          Exit.fail(new McpError.McpServerExited({ server, code, signal, stderrTail: stderrTail.slice() }))
        )
      if (child.stdout!.readableEnded || child.stdout!.destroyed) return finish()
      const timer = setTimeout(finish, 100)
      child.stdout!.once("close", () => {
        clearTimeout(timer)
        finish()
      })
    })

    const send = (message: JsonRpc.Message) => writes.send(JSON.stringify(message))

    function shutdown(handle: ChildProcess.ChildProcess) {
      // Finalizers run uninterruptibly: the wait itself must be interruptible for its timeout to fire.
      const waitExit = (d: Duration.Duration) =>
        Deferred.await(exited).pipe(Effect.interruptible, Effect.timeoutOption(d))
      const isDone = Deferred.isDone(exited)
      return Effect.gen(function*() {
        if (!(yield* isDone)) {
          // What was queued this turn (a last `notifications/cancelled`) goes out before EOF.
          writes.flush()
          handle.stdin?.end()
          if (Option.isNone(yield* waitExit(stdinGrace))) {
            log("lifecycle", `did not exit ${Duration.format(stdinGrace)} after stdin closed; sending SIGTERM`)
            killGroup(handle.pid, "SIGTERM")
            if (Option.isNone(yield* waitExit(termGrace))) {
              log("lifecycle", `did not exit ${Duration.format(termGrace)} after SIGTERM; sending SIGKILL`)
              killGroup(handle.pid, "SIGKILL")
              yield* Deferred.await(exited)
            }
          }
        }
        // Whatever the server left behind in its group (grandchildren) goes with it.
        killGroup(handle.pid, "SIGKILL")
        untrack?.()
        handle.stdout?.destroy()
        handle.stderr?.destroy()
        handle.stdin?.destroy()
      })
    }

    const service = { server, kind: "stdio", pid, send, sendJson: writes.send, incoming } satisfies Service
    return DirectDelivery.offer(service, (r) => {
      receiver = r
    })
  })

const preview = (line: string): string => {
  const cut = line.length > 200 ? `${line.slice(0, 200)}… (${line.length} chars)` : line
  return JSON.stringify(cut)
}

/** The stdio transport as a scoped layer. */
export const layer = (options: Options): Layer.Layer<Transport, McpError.McpSpawnError> =>
  Layer.scoped(Transport, make(options))

/**
 * Starts the server and connects a client to it, both living as long as the scope:
 * `const client = yield* StdioTransport.client({ server, command, args })`.
 */
export const client = (
  options: Options,
  clientOptions?: McpClient.Options
): Effect.Effect<McpClient.Service, McpError.McpError, Scope.Scope> =>
  McpClient.make(clientOptions).pipe(Effect.provideServiceEffect(Transport, make(options)))

/** A client of a stdio server as one scoped layer. */
export const layerClient = (
  options: Options,
  clientOptions?: McpClient.Options
): Layer.Layer<McpClient.McpClient, McpError.McpError> =>
  Layer.scoped(McpClient.McpClient, client(options, clientOptions))
