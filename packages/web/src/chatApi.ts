/**
 * The Chat page's view of the Agent RPCs: the sessions polled while connected, a session's
 * history, and a turn followed to its end — when the connection drops (or the host ends the
 * stream) before the turn's end, the page waits until connected and `Attach`es from the number of
 * events it had, missing nothing and seeing nothing twice.
 */
import { RpcClientError } from "@effect/rpc/RpcClientError"
import { TurnEvent } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { awaitConnected, Disconnected, isConnected } from "./Connection.js"
import { HostClient } from "./HostClient.js"
import { act, polled } from "./serversApi.js"

/** The sessions, most recent first, every 2 s while connected. */
export const sessions = polled((client) => client.Agent.Sessions(), (all) => all, "2 seconds")

/** A session's stored messages, once connected (a page just opened may not be yet). */
export const history = (sessionId: string) =>
  Effect.flatMap(
    HostClient,
    ({ state }) => Effect.zipRight(awaitConnected(state), act((client) => client.Agent.History({ sessionId })))
  )

/** Stops the session's running turn. */
export const stop = (sessionId: string) => act((client) => client.Agent.Stop({ sessionId }))

/**
 * The turn's events from `start` on, re-attached after each lost connection until its end.
 * `sessionId`: known up front when attaching; for a new session it comes with `TurnStarted`.
 */
const followed = <E>(
  start: (client: HostClient["client"]) => Stream.Stream<TurnEvent.TurnEvent, E>,
  sessionId: string | undefined,
  /** Wait for the connection (an attach the page makes by itself), else refuse at once (a send). */
  awaitConnection: boolean
) =>
  Stream.unwrap(Effect.gen(function*() {
    const { client, state } = yield* HostClient
    if (awaitConnection) yield* awaitConnected(state)
    if (!isConnected(yield* SubscriptionRef.get(state))) return Stream.fail(new Disconnected({ inFlight: false }))
    let count = 0
    let session = sessionId
    let ended = false
    const again = (): Stream.Stream<TurnEvent.TurnEvent, unknown> =>
      session === undefined
        ? Stream.fail(new Disconnected({ inFlight: true }))
        : Stream.unwrap(
          Effect.sleep("300 millis").pipe(
            Effect.zipRight(awaitConnected(state)),
            Effect.as(run(client.Agent.Attach({ sessionId: session, fromIndex: count })))
          )
        )
    const run = (events: Stream.Stream<TurnEvent.TurnEvent, unknown>): Stream.Stream<TurnEvent.TurnEvent, unknown> =>
      events.pipe(
        Stream.tap((e) =>
          Effect.sync(() => {
            count++
            if (e._tag === "TurnStarted") session = e.sessionId
            if (TurnEvent.isEnd(e)) ended = true
          })
        ),
        Stream.catchAllCause((cause) => {
          const error = cause._tag === "Fail" ? cause.error : undefined
          // The connection dropped, or the host ended or interrupted the stream: attach again.
          return error === undefined || error instanceof RpcClientError ? again() : Stream.failCause(cause)
        }),
        Stream.concat(Stream.suspend(() => (ended ? Stream.empty : again())))
      )
    return run(start(client))
  }))

/** Sends `message` (in `sessionId`, else a new session): the turn's events to its end. */
export const send = (message: string, sessionId: string | undefined) =>
  followed(
    (client) => client.Agent.Send(sessionId === undefined ? { message } : { message, sessionId }),
    sessionId,
    false
  )

/** The running turn of `sessionId` from its start. */
export const attach = (sessionId: string) =>
  followed((client) => client.Agent.Attach({ sessionId, fromIndex: 0 }), sessionId, true)
