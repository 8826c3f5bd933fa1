/**
 * The events of one turn, kept for any number of readers (the RPC's `Send` and `Attach`): an
 * index-addressed, bounded buffer. The turn appends; each reader reads from an index at its own
 * pace and waits when it has caught up, so a slow reader never holds the turn or another reader
 * back. The buffer keeps at least the last `capacity` events (it drops the oldest `capacity` at
 * once when it holds twice that); a reader further behind than what is kept fails with
 * `EventsLost`, naming the first index still kept.
 *
 * @since 0.1.0
 */
import type { TurnEvent } from "@skald/domain"
import * as Chunk from "effect/Chunk"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/** Events a turn's buffer keeps at least, by default. */
export const DEFAULT_CAPACITY = 10_000

/** The reader asked for events the buffer no longer keeps. */
export class EventsLost extends Data.TaggedError("EventsLost")<{
  readonly fromIndex: number
  readonly firstKept: number
}> {}

/** One turn's events. */
export interface TurnLog {
  /** Appends an event (index = the number of events appended before it). */
  readonly append: (event: TurnEvent.TurnEvent) => Effect.Effect<void>
  /** Marks the turn ended: readers get what is left, then their streams end. */
  readonly end: Effect.Effect<void>
  /** Whether the turn has ended. */
  readonly ended: Effect.Effect<boolean>
  /** The events from `index` on, live until the turn ends. */
  readonly from: (index: number) => Stream.Stream<TurnEvent.TurnEvent, EventsLost>
}

/** A new, empty log keeping at least `capacity` events. */
export const make = (capacity: number = DEFAULT_CAPACITY): Effect.Effect<TurnLog> =>
  Effect.sync(() => {
    const keep = Math.max(1, capacity)
    let events: Array<TurnEvent.TurnEvent> = []
    /** The index of `events[0]`. */
    let base = 0
    let done = false
    /** Completed (and replaced) on every change; readers that caught up wait on it. */
    let changed = Deferred.unsafeMake<void>(FiberId.none)
    const signal = () => {
      const current = changed
      changed = Deferred.unsafeMake<void>(FiberId.none)
      return Deferred.succeed(current, undefined)
    }
    const append = (event: TurnEvent.TurnEvent) =>
      Effect.suspend(() => {
        if (done) return Effect.void
        events.push(event)
        if (events.length >= 2 * keep) {
          events = events.slice(keep)
          base += keep
        }
        return signal()
      })
    const end = Effect.suspend(() => {
      if (done) return Effect.void
      done = true
      return signal()
    })
    type Page = readonly [Chunk.Chunk<TurnEvent.TurnEvent>, Option.Option<number>]
    const from = (index: number): Stream.Stream<TurnEvent.TurnEvent, EventsLost> =>
      Stream.paginateChunkEffect(Math.max(0, index), (next): Effect.Effect<Page, EventsLost> =>
        Effect.suspend(() => {
          if (next < base) return Effect.fail(new EventsLost({ fromIndex: next, firstKept: base }))
          const last = base + events.length
          if (next < last) {
            const chunk = Chunk.unsafeFromArray(events.slice(next - base))
            return Effect.succeed<Page>([chunk, done ? Option.none() : Option.some(last)])
          }
          if (done) return Effect.succeed<Page>([Chunk.empty(), Option.none()])
          return Effect.as(Deferred.await(changed), [Chunk.empty(), Option.some(next)] as Page)
        }))
    return { append, end, ended: Effect.sync(() => done), from }
  })
