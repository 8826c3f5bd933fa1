/**
 * Helpers shared by the integration tests: connecting a client to a fixture, capturing log lines,
 * reading a fixture's record file, and looking at processes in /proc.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as FileSystem from "@effect/platform/FileSystem"
import { assert } from "@effect/vitest"
import type { McpCallResult, McpError } from "@skald/domain"
import { McpClient, StdioTransport } from "@skald/mcp"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import type { Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { FixtureCommand } from "./fixtures/fixtures.js"

/** StdioTransport options other than what starts the process. */
export type TransportTuning = Omit<StdioTransport.Options, "server" | "command" | "args" | "env" | "cwd">

export interface ConnectOptions {
  readonly transport?: TransportTuning
  readonly client?: McpClient.Options
}

/** The stdio transport + client layer for a command. */
export const clientLayer = (
  server: string,
  command: FixtureCommand,
  options: ConnectOptions = {}
): Layer.Layer<McpClient.McpClient, McpError.McpError> =>
  McpClient.layer(options.client).pipe(
    Layer.provide(StdioTransport.layer({ server, ...command, ...options.transport }))
  )

/** Connects a client that lives as long as the current scope. */
export const connect = (
  server: string,
  command: FixtureCommand,
  options: ConnectOptions = {}
): Effect.Effect<McpClient.Service, McpError.McpError, Scope.Scope> =>
  Layer.build(clientLayer(server, command, options)).pipe(Effect.map(Context.get(McpClient.McpClient)))

/** The log capture (one definition, shared with the engine's tests). */
export { makeLogCapture } from "../packages/mcp/test/utils/LogCapture.js"

/**
 * A fresh temporary folder, removed with the current scope (`FileSystem.makeTempDirectoryScoped`:
 * acquired before what the test starts in it, so removed after that is stopped).
 */
export const tempDir = (prefix: string): Effect.Effect<string, never, Scope.Scope> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: `skald-${prefix}-` })).pipe(
    Effect.provide(NodeFileSystem.layer),
    Effect.orDie
  )

/** A fresh file path (the file itself is not created) in a temporary folder removed with the current scope. */
export const tempRecordFile = (prefix: string): Effect.Effect<string, never, Scope.Scope> =>
  Effect.map(tempDir(prefix), (dir) => path.join(dir, "record.jsonl"))

/** A fresh temporary file path, for plain (non-Effect) tests: the folder is left to the OS. */
export const tempFile = (prefix: string): string =>
  path.join(fs.mkdtempSync(path.join(os.tmpdir(), `skald-${prefix}-`)), "record.jsonl")

/** The JSON lines a fixture appended to `file` (none when it does not exist yet). */
export const readRecords = (file: string): Array<Record<string, unknown>> =>
  fs.existsSync(file)
    ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l))
    : []

/**
 * Runs `probe` every 20 ms until what it gives passes `accept`, and returns that; dies after
 * `within` (a bound against a hang, never an assertion about time) or when the probe fails.
 */
export const eventuallyEffect = <A, E, R>(
  probe: Effect.Effect<A, E, R>,
  accept: (a: A) => boolean,
  what: string,
  within: Duration.DurationInput = "10 seconds"
): Effect.Effect<A, never, R> =>
  probe.pipe(
    Effect.orDie,
    Effect.filterOrFail(accept, () => `not yet: ${what}`),
    Effect.retry(Schedule.spaced("20 millis")),
    Effect.timeoutFail({ duration: within, onTimeout: () => new Error(`gave up waiting: ${what}`) }),
    Effect.orDie
  )

/** Retries `check` until it returns true (`eventuallyEffect` over a plain check). */
export const eventually = (check: () => boolean, what: string, within: Duration.DurationInput = "10 seconds") =>
  Effect.asVoid(eventuallyEffect(Effect.sync(check), (ok) => ok, what, within))

/**
 * True while `pid` is a live process. A zombie (state Z: dead, waiting to be reaped by init) is
 * not alive.
 */
export const isAlive = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The state follows the parenthesised command name, which may itself contain ") ".
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3)
    return state !== "Z"
  } catch {
    return false
  }
}

/** Every live process whose command line contains one of `needles`: `{pid, cmdline}`. */
export const processesMatching = (needles: ReadonlyArray<string>): Array<{ pid: number; cmdline: string }> => {
  const found: Array<{ pid: number; cmdline: string }> = []
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const pid = Number(entry)
    if (pid === process.pid) continue
    let cmdline: string
    try {
      cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ")
    } catch {
      continue
    }
    if (needles.some((n) => cmdline.includes(n)) && isAlive(pid)) found.push({ pid, cmdline })
  }
  return found
}

/** The bytes of a Uint8Array as a plain array (for deepStrictEqual). */
export const bytes = (data: Uint8Array): Array<number> => Array.from(data)

type Result = McpCallResult.McpCallResult

export const expectText = (result: Result): McpCallResult.McpText => {
  if (result._tag !== "Text") return assert.fail(`expected a Text result, got ${result._tag}`)
  return result
}

export const expectJson = (result: Result): McpCallResult.McpJson => {
  if (result._tag !== "Json") return assert.fail(`expected a Json result, got ${result._tag}`)
  return result
}

export const expectMedia = (result: Result): McpCallResult.McpMediaResult => {
  if (result._tag !== "Media") return assert.fail(`expected a Media result, got ${result._tag}`)
  return result
}
