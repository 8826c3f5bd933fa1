/**
 * The page's client of the host: the RPC groups it uses (Mcp, Host, Agent, Inbox) over one WebSocket to
 * `ws://<the page's host>/rpc` (BrowserSocket + `RpcClient.layerProtocolSocket`, with the shared
 * serialization of `RpcProtocol`), its observed {@link ConnectionState}, and the page's one
 * `ManagedRuntime`. The protocol reconnects by itself after a pause; what the page shows comes
 * from streams that {@link resubscribing} runs again each time it is back. A host that needs its
 * access token gets it as a subprotocol (Token.ts); without it the page waits for one.
 */
import * as BrowserSocket from "@effect/platform-browser/BrowserSocket"
import * as Socket from "@effect/platform/Socket"
import * as RpcClient from "@effect/rpc/RpcClient"
import { AgentRpcs, HostRpcs, InboxRpcs, McpRpcs, RpcProtocol } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { type ConnectionState, observeSocket, sendOnlyWhileOpen } from "./Connection.js"
import * as Token from "./Token.js"

/** The groups the page calls (the host serves them together with the others, by tag). */
export class PageRpcs extends McpRpcs.McpRpcs.merge(HostRpcs.HostRpcs, AgentRpcs.AgentRpcs, InboxRpcs.InboxRpcs) {}

/** How soon after a lost connection the page tries again: 200 ms growing to at most 2 s apart. */
export const retrySchedule = Schedule.exponential("200 millis", 1.5).pipe(Schedule.union(Schedule.spaced("2 seconds")))

/** The RPC URL of the host that served the page. */
export const rpcUrl = (): string => `ws://${globalThis.location.host}${RpcProtocol.PATH}`

/** How many WebSockets refused in a row (closed without opening) make the page ask about its token again. */
const CHECK_EVERY_REFUSALS = 5

export class HostClient extends Effect.Service<HostClient>()("@skald/web/HostClient", {
  scoped: Effect.gen(function*() {
    const state = yield* SubscriptionRef.make<ConnectionState>({ _tag: "Connecting" })
    const token = yield* SubscriptionRef.make<string | undefined>(Token.stored())
    // The host is asked about the token before the first WebSocket, and again after every few
    // refused in a row (a host restarted with another token): a refused upgrade is only a failed
    // WebSocket to the page, and a console error in the browser.
    let checkNext = true
    let refusals = 0
    /** Until the host takes the token (or cannot be asked: the WebSocket then fails as usual). */
    const untilAccepted: Effect.Effect<void> = Effect.gen(function*() {
      const given = yield* SubscriptionRef.get(token)
      const status = yield* Effect.option(Token.check(given))
      if (Option.isNone(status) || !status.value.tokenRequired || status.value.tokenAccepted) return
      yield* SubscriptionRef.set(state, { _tag: "NeedsToken", refused: given !== undefined })
      yield* token.changes.pipe(Stream.drop(1), Stream.take(1), Stream.runDrain)
      return yield* untilAccepted
    })
    const open = Effect.gen(function*() {
      if (checkNext || (refusals > 0 && refusals % CHECK_EVERY_REFUSALS === 0)) {
        checkNext = false
        yield* untilAccepted
      }
      const make = yield* Socket.WebSocketConstructor
      const ws = sendOnlyWhileOpen(make(rpcUrl(), RpcProtocol.protocolsFor(yield* SubscriptionRef.get(token))))
      let opened = false
      ws.addEventListener("open", () => {
        opened = true
        refusals = 0
      })
      ws.addEventListener("close", () => {
        if (!opened) refusals++
      })
      return ws
    })
    const socket = Layer.scoped(
      Socket.Socket,
      Socket.fromWebSocket(Effect.acquireRelease(open, (ws) => Effect.sync(() => ws.close(1000))))
    ).pipe(Layer.provide(BrowserSocket.layerWebSocketConstructor))
    const protocol = RpcClient.layerProtocolSocket({ retryTransientErrors: true, retrySchedule }).pipe(
      Layer.provide(observeSocket(state)),
      Layer.provide(socket),
      Layer.provide(RpcProtocol.layerSerialization)
    )
    const client = yield* RpcClient.make(PageRpcs).pipe(Effect.provide(yield* Layer.build(protocol)))
    /** A token typed into the page: kept for this tab, and tried at once. */
    const setToken = (value: string) =>
      Effect.zipRight(Effect.sync(() => Token.store(value)), SubscriptionRef.set(token, value))
    return { state, client, setToken } as const
  })
}) {}

/** The page's runtime: one client for the page's lifetime. */
export const makeRuntime = () => ManagedRuntime.make(HostClient.Default)

export type PageRuntime = ReturnType<typeof makeRuntime>
