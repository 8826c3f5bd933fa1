/**
 * The page's client of the host: the RPC groups it uses (Mcp, Host, Agent, Inbox) over one WebSocket to
 * `ws://<the page's host>/rpc` (BrowserSocket + `RpcClient.layerProtocolSocket`, with the shared
 * serialization of `RpcProtocol`), its observed {@link ConnectionState}, and the page's one
 * `ManagedRuntime`. The protocol reconnects by itself after a pause; what the page shows comes
 * from streams that {@link resubscribing} runs again each time it is back.
 */
import * as BrowserSocket from "@effect/platform-browser/BrowserSocket"
import * as Socket from "@effect/platform/Socket"
import * as RpcClient from "@effect/rpc/RpcClient"
import { AgentRpcs, HostRpcs, InboxRpcs, McpRpcs, RpcProtocol } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schedule from "effect/Schedule"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { type ConnectionState, observeSocket } from "./Connection.js"

/** The groups the page calls (the host serves them together with the others, by tag). */
export class PageRpcs extends McpRpcs.McpRpcs.merge(HostRpcs.HostRpcs, AgentRpcs.AgentRpcs, InboxRpcs.InboxRpcs) {}

/** How soon after a lost connection the page tries again: 200 ms growing to at most 2 s apart. */
export const retrySchedule = Schedule.exponential("200 millis", 1.5).pipe(Schedule.union(Schedule.spaced("2 seconds")))

/** The RPC URL of the host that served the page. */
export const rpcUrl = (): string => `ws://${globalThis.location.host}${RpcProtocol.PATH}`

export class HostClient extends Effect.Service<HostClient>()("@skald/web/HostClient", {
  scoped: Effect.gen(function*() {
    const state = yield* SubscriptionRef.make<ConnectionState>({ _tag: "Connecting" })
    const socket = Layer.scoped(
      Socket.Socket,
      Socket.makeWebSocket(rpcUrl(), { protocols: RpcProtocol.protocolsFor() })
    )
      .pipe(Layer.provide(BrowserSocket.layerWebSocketConstructor))
    const protocol = RpcClient.layerProtocolSocket({ retryTransientErrors: true, retrySchedule }).pipe(
      Layer.provide(observeSocket(state)),
      Layer.provide(socket),
      Layer.provide(RpcProtocol.layerSerialization)
    )
    const client = yield* RpcClient.make(PageRpcs).pipe(Effect.provide(yield* Layer.build(protocol)))
    return { state, client } as const
  })
}) {}

/** The page's runtime: one client for the page's lifetime. */
export const makeRuntime = () => ManagedRuntime.make(HostClient.Default)

export type PageRuntime = ReturnType<typeof makeRuntime>
