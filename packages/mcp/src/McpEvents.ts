/**
 * Where a connection's *events* go — the notifications outside `notifications/` (the seed's
 * `event/*` push events) — from the moment it is initialized, before anyone could subscribe to
 * `McpClient.events`. A host that must lose none (it persists them) provides a sink; the
 * connection captures it at connect time, like the log sink. Offering may wait (backpressure):
 * the connection's reader then waits too, and the server's writes with it — nothing is dropped.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as JsonRpc from "./JsonRpc.js"

/** Receives each event of a connection, in order. */
export interface Sink {
  readonly offer: (server: string, event: JsonRpc.Notification) => Effect.Effect<void>
}

/** The event sink of the connections made in this fiber; none by default (events go only to `McpClient.events`). */
export class McpEventSink extends Context.Reference<McpEventSink>()("@skald/mcp/McpEventSink", {
  defaultValue: (): Sink | undefined => undefined
}) {}
