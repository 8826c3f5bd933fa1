/**
 * A response body (a Node `Readable`, as undici gives it) read as pulls: each `next` gives the
 * chunks that arrived since the last one, waiting only when none has — one `Effect.async` per
 * network read at most, no `Stream` stage, no fiber. After the caller is done with it, `drain`
 * reads the rest to its end (so the connection goes back to the pool) or, past a deadline,
 * aborts the request (a server that hangs after its last event is cut off).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { Readable } from "node:stream"

/** Above this many unread bytes the body is paused until the next pull. */
const HIGH_WATER = 1 << 20

export class ResponseBody {
  private chunks: Array<Uint8Array> = []
  private buffered = 0
  private ended = false
  private failure: { readonly cause: unknown } | undefined = undefined
  private wake: (() => void) | undefined = undefined
  private draining = false
  private timer: ReturnType<typeof setTimeout> | undefined = undefined

  constructor(private readonly body: Readable) {
    body.on("data", (chunk: Uint8Array) => {
      if (this.draining) return
      this.chunks.push(chunk)
      this.buffered += chunk.length
      if (this.buffered > HIGH_WATER) body.pause()
      this.notify()
    })
    body.on("end", () => {
      this.ended = true
      if (this.timer !== undefined) clearTimeout(this.timer)
      this.notify()
    })
    // Always listened to: an aborted body errors, and an unheard 'error' would be thrown.
    body.on("error", (cause) => {
      this.failure ??= { cause }
      if (this.timer !== undefined) clearTimeout(this.timer)
      this.notify()
    })
  }

  /** Whether the body was read to its end. */
  get complete(): boolean {
    return this.ended
  }

  /** The chunks since the last pull (waiting for one if none came), `undefined` at the end; fails with the read's error. */
  readonly next: Effect.Effect<ReadonlyArray<Uint8Array> | undefined, unknown> = Effect.suspend(() =>
    this.take() ?? Effect.async<ReadonlyArray<Uint8Array> | undefined, unknown>((resume) => {
      this.wake = () => {
        const ready = this.take()
        if (ready === undefined) return
        this.wake = undefined
        resume(ready)
      }
      return Effect.sync(() => {
        this.wake = undefined
      })
    })
  )

  private take(): Effect.Effect<ReadonlyArray<Uint8Array> | undefined, unknown> | undefined {
    if (this.chunks.length > 0) {
      const chunks = this.chunks
      this.chunks = []
      this.buffered = 0
      if (this.body.isPaused()) this.body.resume()
      return Effect.succeed(chunks)
    }
    if (this.failure !== undefined) return Effect.fail(this.failure.cause)
    if (this.ended) return Effect.succeed(undefined)
    return undefined
  }

  private notify(): void {
    if (this.wake !== undefined) this.wake()
  }

  /** Reads the rest of the body, discarding it; `abort` if it has not ended within `millis`. */
  drain(millis: number, abort: () => void): void {
    this.draining = true
    this.chunks = []
    this.buffered = 0
    if (this.ended || this.failure !== undefined) return
    this.timer = setTimeout(abort, millis)
    this.timer.unref()
    this.body.resume()
  }
}
