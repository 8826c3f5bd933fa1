/**
 * The path of push events into `mcp_events` (EventRepo.ts): a `McpEvents.Sink` the manager gives
 * every connection. A bounded queue (a server that bursts faster than the disk waits —
 * backpressure, nothing dropped) drained by one fiber in batched, transactional inserts. A burst
 * of 10,000 events yields 10,000 rows, in order.
 *
 * @since 0.1.0
 */
import type { JsonRpc, McpEvents } from "@skald/mcp"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import { EventRepo, type NewEvent } from "./EventRepo.js"
import { nowIso } from "./Time.js"

/** How many events may wait for the writer before servers are made to wait. */
export const QUEUE_CAPACITY = 10_000

/** The recorder: a `McpEvents.Sink` for the connections, persisting every event. */
export class EventRecorder extends Effect.Service<EventRecorder>()("@skald/server/EventRecorder", {
  scoped: Effect.gen(function*() {
    const repo = yield* EventRepo
    const queue = yield* Queue.bounded<NewEvent>(QUEUE_CAPACITY)
    // A failed insert is retried (the database may be busy with another process), never dropped.
    const insert = (batch: ReadonlyArray<NewEvent>) =>
      repo.insertAll(batch).pipe(
        Effect.tapError((error) =>
          Effect.logWarning(`could not store ${batch.length} MCP events, retrying: ${error.message}`)
        ),
        Effect.retry(Schedule.exponential("100 millis").pipe(Schedule.either(Schedule.spaced("5 seconds")))),
        Effect.orDie
      )
    yield* Effect.forkScoped(
      // A batch once taken is stored even if the host is stopping (uninterruptible insert).
      Effect.forever(
        Effect.flatMap(Queue.takeBetween(queue, 1, 1000), (batch) => Effect.uninterruptible(insert(Array.from(batch))))
      )
    )
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(queue), (rest) => insert(Array.from(rest))).pipe(Effect.ignore)
    )

    const sink: McpEvents.Sink = {
      offer: (server: string, event: JsonRpc.Notification) =>
        Effect.flatMap(
          nowIso,
          (receivedAt) => Queue.offer(queue, { server, method: event.method, params: event.params, receivedAt })
        ).pipe(Effect.asVoid)
    }
    return { sink } as const
  })
}) {}
