/**
 * Opening a file the HTTP server hands out (a media file, a file of the web UI) without ever
 * following a link: checked before the open (a symbolic link is never opened, a hard link or a
 * file outside its folder is refused) and again on the opened handle (a file swapped in between
 * is not served). One copy for both routes, so the two cannot drift.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Fs from "node:fs"

/** A filesystem call whose failure (missing, no access) is none. */
export const fsCall = <A>(f: () => Promise<A>) => Effect.option(Effect.tryPromise(f))

/** A refusal, logged as a warning (someone put that file there), as none. */
export const refusal = (what: string) => (name: string, why: string) =>
  Effect.as(Effect.logWarning(`refused to serve ${what} ${name}: ${why}`), Option.none())

/** An opened file: its handle (closed with the scope) and its size. */
export interface Opened {
  readonly handle: Fs.promises.FileHandle
  readonly size: number
}

/**
 * Opens `file` for reading in the current scope, or gives none: a regular file with one link whose
 * real path `inside` accepts (else refused as `outside`), opened with `O_NOFOLLOW` and checked
 * again on the handle (same inode and device, still one link).
 */
export const open = (
  file: string,
  options: {
    readonly name: string
    readonly inside: (realPath: string) => boolean
    readonly outside: string
    readonly refuse: (name: string, why: string) => Effect.Effect<Option.Option<never>>
  }
): Effect.Effect<Option.Option<Opened>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { name, refuse } = options
    const before = yield* fsCall(() => Fs.promises.lstat(file))
    if (Option.isNone(before)) return Option.none()
    if (before.value.isSymbolicLink()) return yield* refuse(name, "a symbolic link")
    if (!before.value.isFile()) return yield* refuse(name, "not a regular file")
    if (before.value.nlink !== 1) return yield* refuse(name, `a hard link (${before.value.nlink} links)`)
    const real = yield* fsCall(() => Fs.promises.realpath(file))
    if (Option.isNone(real) || !options.inside(real.value)) return yield* refuse(name, options.outside)
    // O_NONBLOCK: a FIFO swapped in after the checks cannot block a thread of the pool on open.
    const flags = Fs.constants.O_RDONLY | Fs.constants.O_NOFOLLOW | Fs.constants.O_NONBLOCK
    const handle = yield* Effect.acquireRelease(
      fsCall(() => Fs.promises.open(file, flags)),
      (handle) => Option.isSome(handle) ? Effect.ignore(Effect.tryPromise(() => handle.value.close())) : Effect.void
    )
    if (Option.isNone(handle)) return Option.none()
    const stat = yield* fsCall(() => handle.value.stat())
    if (Option.isNone(stat)) return Option.none()
    if (
      !stat.value.isFile() || stat.value.nlink !== 1 || stat.value.ino !== before.value.ino ||
      stat.value.dev !== before.value.dev
    ) return yield* refuse(name, "it changed while being opened")
    return Option.some({ handle: handle.value, size: stat.value.size })
  })
