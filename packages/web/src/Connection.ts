/**
 * The page's connection to the host: the WebSocket under the RPC client, observed so the page can
 * show its state, and the two rules built on it — a call made while disconnected fails at once
 * with {@link Disconnected} (never queued, never silently lost), and a stream is subscribed again
 * after a reconnect ({@link resubscribing}: DESIGN §4, the RPC client does not do it).
 */
import * as Socket from "@effect/platform/Socket"
import { RpcClientError } from "@effect/rpc/RpcClientError"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"

/** Where the page stands with the host. */
export type ConnectionState =
  /** Never connected yet (the first attempts). */
  | { readonly _tag: "Connecting" }
  | { readonly _tag: "Connected"; readonly since: number }
  /** Was connected and lost it; retrying by itself. */
  | { readonly _tag: "Reconnecting"; readonly since: number; readonly reason: string }
  /** The host needs its access token: the page has none (or the one it has was `refused`); it waits for one. */
  | { readonly _tag: "NeedsToken"; readonly refused: boolean }

/** A call made while the page is not connected, or cut off by a lost connection. */
export class Disconnected extends Schema.TaggedError<Disconnected>("@skald/web/Disconnected")("Disconnected", {
  /** True when the call was sent and the connection dropped before its answer. */
  inFlight: Schema.Boolean
}) {
  override get message(): string {
    return this.inFlight
      ? "The connection to the Skald host was lost before it answered: the action may or may not have " +
        "taken effect. The page reconnects by itself; check the state once it is back."
      : "Not connected to the Skald host, so nothing was sent. The page reconnects by itself; try again " +
        "once it says connected."
  }
}

const reasonOf = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  if (Socket.isSocketError(error)) {
    return error.reason === "Close" && "code" in error
      ? `the connection closed (code ${error.code})`
      : error.reason === "OpenTimeout"
      ? "the host stopped answering"
      : `socket error: ${error.reason}`
  }
  return error instanceof Error ? error.message : String(error)
}

/**
 * The `Socket` in context, reporting into `state`: `Connected` when a WebSocket opens, and
 * `Reconnecting` (or still `Connecting`) when it ends, whatever ended it. The RPC protocol runs
 * the socket again after a pause; each run opens a new WebSocket.
 */
export const observeSocket = (state: SubscriptionRef.SubscriptionRef<ConnectionState>) =>
  Layer.effect(
    Socket.Socket,
    Effect.gen(function*() {
      const socket = yield* Socket.Socket
      let everConnected = false
      const opened = Effect.flatMap(Clock.currentTimeMillis, (since) => {
        everConnected = true
        return SubscriptionRef.set(state, { _tag: "Connected", since })
      })
      // The first end after a connection says when and why it was lost; failed attempts after it keep that.
      const ended = (cause: Cause.Cause<unknown>) =>
        Effect.flatMap(Clock.currentTimeMillis, (since) =>
          SubscriptionRef.update(state, (now): ConnectionState =>
            now._tag === "Connected"
              ? { _tag: "Reconnecting", since, reason: reasonOf(cause) }
              : everConnected
              ? now
              : { _tag: "Connecting" }))
      const observed = <A>(run: Effect.Effect<A, unknown, unknown>) =>
        Effect.onExit(run, (exit) =>
          exit._tag === "Failure" ? ended(exit.cause) : ended(Cause.empty))
      const wrapped: Socket.Socket = {
        [Socket.TypeId]: Socket.TypeId,
        run: (handler, options) =>
          observed(socket.run(handler, { onOpen: Effect.zipRight(opened, options?.onOpen ?? Effect.void) })) as any,
        runRaw: (handler, options) =>
          observed(socket.runRaw(handler, { onOpen: Effect.zipRight(opened, options?.onOpen ?? Effect.void) })) as any,
        writer: socket.writer
      }
      return wrapped
    })
  )

/**
 * `ws`, whose `send` does nothing unless it is open. The socket's writer sends until the page has
 * handled the socket's `close` event, but the browser moves the socket to CLOSING as soon as the
 * host's close frame arrives (or the page closes it): a write in between (a poll, a stream's
 * acknowledgement) is discarded by the browser anyway, and it prints *WebSocket is already in
 * CLOSING or CLOSED state* for it. Such a write is lost either way; a request among them fails with
 * the lost connection ({@link Disconnected}, `inFlight`). Self-contained (the tests run it in the page).
 */
export const sendOnlyWhileOpen = (ws: globalThis.WebSocket): globalThis.WebSocket => {
  const send = ws.send.bind(ws)
  ws.send = (data) => {
    if (ws.readyState === ws.OPEN) send(data)
  }
  return ws
}

/** The state now is `Connected`. */
export const isConnected = (state: ConnectionState): boolean => state._tag === "Connected"

/**
 * Runs `call` only while connected; a lost connection during it (the client's `RpcClientError`)
 * becomes {@link Disconnected} too.
 */
export const whileConnected = <A, E, R>(
  state: SubscriptionRef.SubscriptionRef<ConnectionState>,
  call: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, RpcClientError> | Disconnected, R> =>
  Effect.flatMap(SubscriptionRef.get(state), (now) =>
    isConnected(now)
      ? Effect.catchIf(
        call,
        (e): e is Extract<E, RpcClientError> => e instanceof RpcClientError,
        () => new Disconnected({ inFlight: true })
      ) as Effect.Effect<A, Exclude<E, RpcClientError> | Disconnected, R>
      : new Disconnected({ inFlight: false }))

/** Waits until the state is `Connected`. */
export const awaitConnected = (state: SubscriptionRef.SubscriptionRef<ConnectionState>) =>
  state.changes.pipe(Stream.filter(isConnected), Stream.take(1), Stream.runDrain)

/** How long a stream that ended while connected waits before it is subscribed again. */
const RESUBSCRIBE_PAUSE = "500 millis"

/**
 * `subscribe` again each time the connection comes back: the stream runs once connected; when the
 * connection drops (its `RpcClientError`) — or the host ends or interrupts it (a host shutting
 * down ends its streams before it closes the socket) — it waits until connected and subscribes
 * anew, after `onResubscribe`. A failure of the stream's own (a typed error) ends it.
 */
export const resubscribing = <A, E, R>(
  state: SubscriptionRef.SubscriptionRef<ConnectionState>,
  subscribe: Stream.Stream<A, E, R>,
  onResubscribe: Effect.Effect<void> = Effect.void,
  pause: Duration.DurationInput = RESUBSCRIBE_PAUSE
): Stream.Stream<A, Exclude<E, RpcClientError>, R> => {
  const lost: Stream.Stream<never, Exclude<E, RpcClientError> | typeof LOST> = Stream.fail(LOST)
  const once: Stream.Stream<A, Exclude<E, RpcClientError> | typeof LOST, R> = subscribe.pipe(
    Stream.catchAllCause((cause): Stream.Stream<never, Exclude<E, RpcClientError> | typeof LOST> => {
      const failure = Cause.failureOption(cause)
      if (failure._tag === "Some" && !(failure.value instanceof RpcClientError)) {
        return Stream.fail(failure.value as Exclude<E, RpcClientError>)
      }
      // The connection dropped, or the host interrupted the stream (or died in it): again.
      return lost
    }),
    Stream.concat(lost)
  )
  const loop = (first: boolean): Stream.Stream<A, Exclude<E, RpcClientError>, R> =>
    Stream.unwrap(
      (first ? awaitConnected(state) : Effect.zipRight(
        Effect.sleep(pause),
        Effect.zipRight(awaitConnected(state), onResubscribe)
      )).pipe(
        Effect.as(once.pipe(Stream.catchAll((e) => e === LOST ? loop(false) : Stream.fail(e))))
      )
    )
  return loop(true)
}

const LOST = "@skald/web/Connection/lost" as const
