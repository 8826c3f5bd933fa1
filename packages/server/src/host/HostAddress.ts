/**
 * Where the running host of a home listens: `skald serve` writes `data/host.json` (`{pid, url}`,
 * mode 0600) once its RPC server answers, and removes it on the way out; a client of the same
 * home (`skald inbox`, `skald agent run`, `skald chat`) reads it to reach the host over RPC. The
 * access token is never written here: a client has it from its own environment.
 *
 * A host killed outright leaves the file behind; a record whose process no longer runs is no host.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Paths, PRIVATE_FILE_MODE } from "./Paths.js"
import { isAlive } from "./ProcessAlive.js"

/** What the record holds. */
export const Address = Schema.Struct({ pid: Schema.Number, url: Schema.String })
export type Address = typeof Address.Type

const decode = Schema.decodeUnknownOption(Schema.parseJson(Address))

/** The record's file in a home. */
export const fileOf = (paths: Paths): string => Path.join(paths.dataDir, "host.json")

const readRecord = (file: string): Option.Option<Address> => {
  try {
    return decode(Fs.readFileSync(file, "utf8"))
  } catch {
    return Option.none()
  }
}

/**
 * Records that this process serves the home at `url`, for as long as the current scope lasts
 * (removed on close, unless another host has recorded itself since).
 */
export const record = (url: string) =>
  Effect.gen(function*() {
    const file = fileOf(yield* Paths)
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        Fs.writeFileSync(`${file}.tmp`, JSON.stringify({ pid: process.pid, url }), { mode: PRIVATE_FILE_MODE })
        Fs.renameSync(`${file}.tmp`, file)
      }).pipe(
        Effect.catchAllDefect((cause) => Effect.logWarning(`could not record the host's address in ${file}: ${cause}`))
      ),
      () =>
        Effect.sync(() => {
          const current = readRecord(file)
          if (Option.isSome(current) && current.value.pid === process.pid) Fs.rmSync(file, { force: true })
        }).pipe(Effect.catchAllDefect(() => Effect.void))
    )
  })

/** The address of the host running for the home, if one runs (its process alive). */
export const find = Effect.map(Paths, (paths) => Option.filter(readRecord(fileOf(paths)), (a) => isAlive(a.pid)))
