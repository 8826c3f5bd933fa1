/**
 * The Servers page's view of the host (`ServersApi`) over the Mcp RPCs: the list polled while
 * connected (the group has no status stream), the log followed as a stream, each re-subscribed
 * after a reconnect; actions refused while disconnected.
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { resubscribing, whileConnected } from "./Connection.js"
import { HostClient } from "./HostClient.js"
import type { EventView, ServersApi } from "./ServersPage.js"

/** How often the page asks for the servers' status and events. */
export const POLL: Duration.DurationInput = "1 second"

/**
 * A call repeated every `every` while connected, its answers mapped; re-subscribed after a
 * reconnect. A call that fails (the host's own error, e.g. a server just removed) is tried again
 * at the next tick: the page keeps what it showed rather than stop following.
 */
export const polled = <A, B, E>(
  call: (client: HostClient["client"]) => Effect.Effect<A, E>,
  map: (a: A) => B,
  every: Duration.DurationInput = POLL
) =>
  Stream.unwrap(Effect.map(HostClient, ({ client, state }) =>
    resubscribing(
      state,
      Stream.repeatEffectWithSchedule(Effect.map(call(client), map), Schedule.spaced(every))
    ).pipe(Stream.retry(Schedule.spaced(every)))))

export const act = <A, E>(call: (client: HostClient["client"]) => Effect.Effect<A, E>) =>
  Effect.flatMap(HostClient, ({ client, state }) => whileConnected(state, call(client)))

/** The newest events of `server`, newest first. */
const recentOf = (server: string, all: ReadonlyArray<EventView & { readonly server: string }>): Array<EventView> =>
  all.filter((e) => e.server === server).slice(-20).reverse().map(({ id, method, params, receivedAt }) => ({
    id,
    method,
    params,
    receivedAt
  }))

export const serversApi: ServersApi<HostClient> = {
  servers: polled((client) => client.Mcp.List(), (list) => list),
  tools: (name) => polled((client) => client.Mcp.Tools({ name }), (tools) => tools.map((t) => t.tool), "5 seconds"),
  logs: (name) =>
    Stream.unwrap(Effect.map(HostClient, ({ client, state }) =>
      resubscribing(
        state,
        // A fresh subscription sends the tail again: the page starts over (null) each time.
        Stream.concat(
          Stream.make(null),
          client.Mcp.Logs({ name, follow: true }).pipe(Stream.splitLines)
        )
      ))),
  events: (name) => polled((client) => client.Mcp.Events({}), (all) => recentOf(name, all), "2 seconds"),
  setEnabled: (name, enabled) => act((client) => client.Mcp.SetEnabled({ name, enabled })),
  restart: (name) => act((client) => client.Mcp.Restart({ name })),
  remove: (name) => act((client) => client.Mcp.Remove({ name })),
  add: (payload) => act((client) => client.Mcp.Add(payload)),
  // Not resubscribed after a reconnect: a login cut off is given up (the host closes its listener).
  login: (name) => Stream.unwrap(Effect.map(HostClient, ({ client }) => client.Mcp.Login({ name })))
}
