/**
 * Per-server log files (the seed's *Per-server logs*): `logs/mcp/<name>.log`, the name sanitized
 * to `[A-Za-z0-9._-]` (anything else becomes `_`), one line per record:
 *
 *     2026-07-03T12:34:56.789Z [stderr]     INFO: server ready
 *     2026-07-03T12:34:56.789Z [warning]    scraper: rate limit approaching
 *     2026-07-03T12:34:56.789Z [lifecycle]  failed to start: command not found
 *
 * Tags: `[stderr]` (a line of the process's stderr), `[<level>]` (a `notifications/message`
 * record), `[lifecycle]` (start, start failure and timeout, connect, disconnect, restart). Lines of a
 * one-off connection of the command line (`skald mcp call|tools`) carry `[cli pid <N>]` after the
 * tag. A file
 * that would grow past 5 MB is first rotated to `<name>.log.1` (one backup kept).
 *
 * Reading (`skald mcp logs`): `read` gives the current file, `follow` is `tail -f` — what is
 * appended as it comes, from the start again when the file was truncated or replaced (rotated:
 * another inode); both through `@effect/platform`'s `FileSystem`.
 *
 * Servers never wait for the disk: lines go to a bounded in-memory queue that one consumer fiber
 * drains in batches; when the writer falls that far behind, lines are dropped and the drop is
 * logged. Known secret values are replaced by `[redacted]` before a line is queued, in every form
 * they can take (Redactor.ts). Every line is also logged at Debug level (`skald serve --verbose`
 * shows it). Folders are created 0700 and files 0600.
 *
 * @since 0.1.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import type { ServerName } from "@skald/domain"
import type { McpLog } from "@skald/mcp"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { UnknownServer } from "./HostError.js"
import { McpServerRepo } from "./McpServerRepo.js"
import { ensurePrivateDir, Paths, PRIVATE_FILE_MODE, privateFile } from "./Paths.js"
import * as Redactor from "./Redactor.js"
import { isoOf } from "./Time.js"

/** Files rotate before they would exceed this many bytes. */
export const MAX_FILE_BYTES = 5 * 1024 * 1024

/** How many lines may wait for the writer before new ones are dropped. */
export const QUEUE_CAPACITY = 100_000

/** `<name>` with every character outside `[A-Za-z0-9._-]` replaced by `_`. */
export const sanitize = (name: string): string => name.replace(/[^A-Za-z0-9._-]/g, "_")

/** The log file of `server` in the logs folder `mcpLogsDir`. */
export const fileIn = (mcpLogsDir: string, server: string): string => Path.join(mcpLogsDir, `${sanitize(server)}.log`)

/** One formatted line (without the newline). */
export const formatLine = (at: Date | number, tag: McpLog.Tag, text: string): string =>
  `${typeof at === "number" ? isoOf(at) : at.toISOString()} ${`[${tag}]`.padEnd(12)} ${text}`

/** How often `follow` looks for new bytes unless told otherwise. */
export const FOLLOW_INTERVAL: Duration.DurationInput = "250 millis"

/** What `follow` starts from and how often it looks. */
export interface FollowOptions {
  /** The byte offset to start after (default 0: the whole file first). */
  readonly from?: number | undefined
  /** How often the file is checked (default FOLLOW_INTERVAL). */
  readonly every?: Duration.DurationInput | undefined
}

const isNotFound = (error: PlatformError): boolean => error._tag === "SystemError" && error.reason === "NotFound"

interface Pending {
  readonly file: string
  readonly line: string
}

/** The per-server log files. */
export class ServerLogs extends Effect.Service<ServerLogs>()("@skald/server/ServerLogs", {
  dependencies: [NodeFileSystem.layer],
  scoped: Effect.gen(function*() {
    const paths = yield* Paths
    const fs = yield* FileSystem.FileSystem
    // The fiber's clock, read once per text (not per line): a timestamp costs no effect on the hot path.
    const clock = yield* Effect.clock
    const queue = yield* Queue.dropping<Pending>(QUEUE_CAPACITY)
    let dropped = 0
    const sizes = new Map<string, number>()

    const fileOf = (server: string) => fileIn(paths.mcpLogsDir, server)

    const sizeOf = (file: string) =>
      Effect.tryPromise(async () => {
        const known = sizes.get(file)
        if (known !== undefined) return known
        // logs/ and logs/mcp/ are 0700, each file 0600 (one written by an older version too).
        ensurePrivateDir(paths.logsDir)
        ensurePrivateDir(Path.dirname(file))
        privateFile(file)
        privateFile(`${file}.1`)
        return await Fs.promises.stat(file).then((s) => s.size, () => 0)
      })

    const append = (file: string, text: string, bytes: number) =>
      Effect.tryPromise(async () => {
        await Fs.promises.mkdir(Path.dirname(file), { recursive: true, mode: 0o700 })
        // Never through a link planted in the log folder, symbolic or hard (docs/manager.md: the database rule).
        const stat = await Fs.promises.lstat(file).catch(() => undefined)
        if (stat !== undefined && (!stat.isFile() || stat.nlink !== 1)) {
          throw new Error(`${file} is not a plain file (a link?)`)
        }
        const flag = Fs.constants.O_WRONLY | Fs.constants.O_APPEND | Fs.constants.O_CREAT | Fs.constants.O_NOFOLLOW
        await Fs.promises.appendFile(file, text, { flag, mode: PRIVATE_FILE_MODE })
        sizes.set(file, (sizes.get(file) ?? 0) + bytes)
      })

    const rotate = (file: string) =>
      Effect.tryPromise(async () => {
        // A file removed meanwhile (by hand) just starts over.
        await Fs.promises.rename(file, `${file}.1`).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== "ENOENT") throw e
        })
        sizes.set(file, 0)
      })

    /**
     * Writes a batch: each file's lines in order, in chunks; before a line would take a file past
     * the limit, the file is rotated (so rotation happens between lines, never inside one).
     */
    const write = (batch: ReadonlyArray<Pending>) =>
      Effect.gen(function*() {
        const byFile = new Map<string, Array<string>>()
        for (const { file, line } of batch) {
          const lines = byFile.get(file) ?? []
          lines.push(line)
          byFile.set(file, lines)
        }
        for (const [file, lines] of byFile) {
          sizes.set(file, yield* sizeOf(file))
          let chunk = ""
          let chunkBytes = 0
          const flush = Effect.suspend(() => {
            if (chunkBytes === 0) return Effect.void
            const [text, bytes] = [chunk, chunkBytes]
            chunk = ""
            chunkBytes = 0
            return append(file, text, bytes)
          })
          for (const line of lines) {
            const next = `${line}\n`
            const bytes = Buffer.byteLength(next)
            const size = sizes.get(file)!
            if (size + chunkBytes > 0 && size + chunkBytes + bytes > MAX_FILE_BYTES) {
              yield* flush
              yield* rotate(file)
            } else if (chunkBytes + bytes > 256 * 1024) {
              yield* flush
            }
            chunk += next
            chunkBytes += bytes
          }
          yield* flush
        }
      }).pipe(
        Effect.catchAll((error) =>
          Effect.logWarning(`could not write an MCP server log: ${String(error.error ?? error)}`)
        )
      )

    const drain = Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(queue, 1, 10_000)
      if (dropped > 0) {
        const n = dropped
        dropped = 0
        yield* Effect.logWarning(`${n} MCP server log lines were dropped: the log writer fell behind`)
      }
      yield* write(Array.from(batch))
    })
    yield* Effect.forkScoped(Effect.forever(drain))
    // What is still queued when the host stops is written before the scope closes.
    yield* Effect.addFinalizer(() => Effect.flatMap(Queue.takeAll(queue), (rest) => write(Array.from(rest))))

    const enqueue = (server: string, tag: McpLog.Tag, text: string, origin: string | undefined) => {
      const file = fileOf(server)
      const lines = text.split(/\r?\n/)
      const at = clock.unsafeCurrentTimeMillis()
      for (const line of lines) {
        const tagged = origin === undefined ? line : `[${origin}] ${line}`
        if (!queue.unsafeOffer({ file, line: formatLine(at, tag, tagged) })) dropped++
      }
    }

    /**
     * A sink for one server's lines, with its secret values redacted (every form: Redactor.ts) before
     * a line is queued or logged; a multi-line text is redacted whole, then split. `origin` tags every
     * line written by a connection other than the host's (e.g. `cli pid 4242`: `[cli pid 4242] …`).
     */
    const sink = (
      server: string,
      secrets: ReadonlyArray<Redacted.Redacted<string>> = [],
      origin?: string
    ): McpLog.Sink => {
      const redactor = Redactor.make(secrets)
      return {
        emit: (line) =>
          Effect.suspend(() => {
            const text = redactor.redact(line.text)
            enqueue(server, line.tag, text, origin)
            return Effect.logDebug(text).pipe(Effect.annotateLogs({ "mcp.server": line.server, "mcp.log": line.tag }))
          })
      }
    }

    /** Writes a `[lifecycle]` line. */
    const lifecycle = (server: string, text: string, secrets: ReadonlyArray<Redacted.Redacted<string>> = []) =>
      sink(server, secrets).emit({ server, tag: "lifecycle", text })

    /** The server's current log file; none when it has none. */
    const read = (server: string): Effect.Effect<Option.Option<Uint8Array>, PlatformError> =>
      fs.readFile(fileOf(server)).pipe(
        Effect.map(Option.some),
        Effect.catchIf(isNotFound, () => Effect.succeed(Option.none()))
      )

    /**
     * `tail -f` of the server's log file: the bytes after `from` (default: all of it), then what is
     * appended, checked every `every`. A file that shrank (truncated) or is another file now
     * (rotated: a new inode) is given from its start; no file yet is nothing yet. Never ends.
     */
    const follow = (server: string, options: FollowOptions = {}): Stream.Stream<Uint8Array, PlatformError> =>
      Stream.suspend(() => {
        const file = fileOf(server)
        let offset = options.from ?? 0
        let inode: Option.Option<number> | undefined
        const poll = Effect.gen(function*() {
          const info = yield* fs.stat(file).pipe(
            Effect.map(Option.some),
            Effect.catchIf(isNotFound, () => Effect.succeed(Option.none()))
          )
          if (Option.isNone(info)) return Stream.empty
          const size = Number(info.value.size)
          if ((inode !== undefined && !Equal.equals(inode, info.value.ino)) || size < offset) offset = 0
          inode = info.value.ino
          if (size <= offset) return Stream.empty
          const start = offset
          offset = size
          return fs.stream(file, { offset: start, bytesToRead: size - start })
        })
        return Stream.repeatEffectWithSchedule(poll, Schedule.spaced(options.every ?? FOLLOW_INTERVAL)).pipe(
          Stream.flatten()
        )
      })

    return { sink, lifecycle, fileOf, read, follow } as const
  })
}) {}

/**
 * A server's log as a reader asks for it (`skald mcp logs`, `Mcp.Logs`): its current file, none
 * when it has none yet. The log of a server removed since is still given; a name with neither a
 * registration nor a log is `UnknownServer`.
 */
export const readLog = (server: ServerName.ServerName) =>
  Effect.gen(function*() {
    const current = yield* (yield* ServerLogs).read(server)
    if (Option.isNone(current) && Option.isNone(yield* (yield* McpServerRepo).get(server))) {
      return yield* new UnknownServer({ name: server })
    }
    return current
  })
