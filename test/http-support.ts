/**
 * Helpers for the HTTP tests: start an HTTP fixture server (or server-everything) as a scoped
 * child process on 127.0.0.1 and learn its URL, and connect a client to a URL.
 */
import type { McpError } from "@skald/domain"
import { HttpTransport, McpClient } from "@skald/mcp"
import { Context, Effect, Layer } from "effect"
import type { Scope } from "effect"
import * as ChildProcess from "node:child_process"
import * as net from "node:net"
import * as path from "node:path"
import { fixture, type FixtureCommand, repoRoot } from "./fixtures/fixtures.js"

/** A server process listening on loopback. */
export interface RunningServer {
  readonly url: string
  readonly pid: number
  /** Everything it wrote so far (stdout and stderr), for failure messages. */
  readonly output: () => string
}

/** The SDK fixture over HTTP (fixtures/http.ts): `kind` is echo, cancel, structured, media or paginated. */
export const httpFixture = (
  kind: string,
  mode: "stateful" | "stateless" | "json" = "stateful",
  env?: Readonly<Record<string, string>>
): FixtureCommand => fixture("http", env, [kind, mode])

/** A hostile HTTP fixture (fixtures/hostile-http.mjs) in `mode`. */
export const hostileHttp = (mode: string, env?: Readonly<Record<string, string>>): FixtureCommand =>
  fixture("hostile-http", env, [mode])

export interface StartOptions {
  /** How the process says it is ready; the URL is `url(match)`. */
  readonly ready: RegExp
  readonly url: (match: RegExpExecArray) => string
  /** Look for `ready` in stdout only (else in stdout and stderr). */
  readonly stdoutOnly: boolean
}

/** Starts a server process, ready once `options.ready` matches its output; SIGTERM (then SIGKILL) when the scope closes. */
export const spawnServer = (
  command: FixtureCommand,
  options: StartOptions
): Effect.Effect<RunningServer, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ child: ChildProcess.ChildProcess; server: RunningServer }, Error>((resume) => {
      const child = ChildProcess.spawn(command.command, command.args, {
        cwd: command.cwd,
        env: { ...process.env, ...command.env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      let stdout = ""
      let done = false
      const server = (url: string): RunningServer => ({ url, pid: child.pid!, output: () => output })
      const onData = (fromStdout: boolean) => (chunk: Buffer) => {
        output += chunk.toString("utf8")
        if (output.length > 100_000) output = output.slice(-50_000)
        if (done) return
        if (fromStdout) stdout += chunk.toString("utf8")
        const match = options.ready.exec(options.stdoutOnly ? stdout : output)
        if (match !== null) {
          done = true
          resume(Effect.succeed({ child, server: server(options.url(match)) }))
        }
      }
      child.stdout!.on("data", onData(true))
      child.stderr!.on("data", onData(false))
      child.once("error", (error) => {
        if (!done) {
          done = true
          resume(Effect.fail(error))
        }
      })
      child.once("exit", (code, signal) => {
        if (!done) {
          done = true
          resume(Effect.fail(new Error(`the server exited (${signal ?? code}) before it was ready:\n${output}`)))
        }
      })
      return Effect.sync(() => {
        child.kill("SIGKILL")
      })
    }).pipe(
      Effect.timeoutFail({
        duration: "30 seconds",
        onTimeout: () => new Error(`the server did not get ready: ${command.args.join(" ")}`)
      })
    ),
    ({ child }) => stop(child)
  ).pipe(Effect.map(({ server }) => server))

/** SIGTERM, then SIGKILL if it has not exited within 3 s; waits for the exit. */
const stop = (child: ChildProcess.ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    const timer = setTimeout(() => child.kill("SIGKILL"), 3000)
    child.once("exit", () => {
      clearTimeout(timer)
      resume(Effect.void)
    })
    child.kill("SIGTERM")
  })

/** Starts a fixture that prints its URL as its first stdout line; it is killed when the scope closes. */
export const startHttpFixture = (command: FixtureCommand): Effect.Effect<RunningServer, Error, Scope.Scope> =>
  spawnServer(command, { ready: /^(http:\/\/127\.0\.0\.1:\d+\/\S*)\n/, url: (m) => m[1]!, stdoutOnly: true })

/** A port that was free on 127.0.0.1 a moment ago. */
export const freePort: Effect.Effect<number> = Effect.async<number>((resume) => {
  const probe = net.createServer()
  probe.listen(0, "127.0.0.1", () => {
    const address = probe.address() as net.AddressInfo
    probe.close(() => resume(Effect.succeed(address.port)))
  })
})

const everythingMain = path.join(
  repoRoot,
  "node_modules",
  "@modelcontextprotocol",
  "server-everything",
  "dist",
  "index.js"
)

/**
 * `@modelcontextprotocol/server-everything` over HTTP: `streamableHttp` (endpoint `/mcp`) or the
 * legacy `sse` transport (endpoint `/sse`). It listens on every interface at PORT; only its
 * loopback URL is ever used. Retries with another port if the one picked was taken meanwhile.
 */
export const startEverything = (
  transport: "streamableHttp" | "sse"
): Effect.Effect<RunningServer, Error, Scope.Scope> =>
  Effect.gen(function*() {
    const port = yield* freePort
    const endpoint = transport === "sse" ? "/sse" : "/mcp"
    return yield* spawnServer(
      { command: process.execPath, args: [everythingMain, transport], cwd: repoRoot, env: { PORT: String(port) } },
      {
        ready: /listening on port \d+|running on port \d+/,
        url: () => `http://127.0.0.1:${port}${endpoint}`,
        stdoutOnly: false
      }
    )
  }).pipe(Effect.retry({ times: 2 }))

export interface HttpConnectOptions {
  readonly transport?: Omit<HttpTransport.Options, "server" | "url">
  readonly client?: McpClient.Options
}

/** The HTTP transport + client layer for `url`. */
export const httpClientLayer = (
  server: string,
  url: string,
  options: HttpConnectOptions = {}
): Layer.Layer<McpClient.McpClient, McpError.McpError> =>
  HttpTransport.layerClient({ server, url, ...options.transport }, options.client)

/** Connects a client to `url` that lives as long as the current scope. */
export const connectHttp = (
  server: string,
  url: string,
  options: HttpConnectOptions = {}
): Effect.Effect<McpClient.Service, McpError.McpError, Scope.Scope> =>
  Layer.build(httpClientLayer(server, url, options)).pipe(Effect.map(Context.get(McpClient.McpClient)))
