/**
 * An in-memory `Transport` for engine tests: it records every message the client sends (a queue
 * to await the next one, and the full history for assertions at the end), and lets the test play
 * the server — push incoming messages, end the connection, or fail it.
 */
import { McpError } from "@skald/domain"
import * as JsonRpc from "@skald/mcp/JsonRpc"
import * as McpClient from "@skald/mcp/McpClient"
import * as Protocol from "@skald/mcp/Protocol"
import { type Service, Transport } from "@skald/mcp/Transport"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"

/** The test's side of a `MemoryTransport`. */
export interface MemoryTransport {
  /** The transport to hand to the client (`kind: "stdio"`). */
  readonly transport: Service
  /** Every message the client sent, in order (including any sent after the connection closed). */
  readonly history: () => ReadonlyArray<JsonRpc.Message>
  /** Waits for the next message the client sends (each message is taken once). */
  readonly next: Effect.Effect<JsonRpc.Message>
  /** The messages sent and not yet taken with `next`, without waiting. */
  readonly drain: Effect.Effect<ReadonlyArray<JsonRpc.Message>>
  /** Delivers a message to the client, classified as the real transports do. Dies on a non-message. */
  readonly push: (message: JsonRpc.Message) => Effect.Effect<void>
  /** Delivers an already classified message as is. */
  readonly offer: (incoming: JsonRpc.Incoming) => Effect.Effect<void>
  /** The same, at once and outside any fiber, as a transport's read callback does. */
  readonly offerNow: (incoming: JsonRpc.Incoming) => void
  /** Ends the incoming mailbox: the server closed the connection cleanly. */
  readonly end: Effect.Effect<void>
  /** Fails the incoming mailbox with a connection error (server gone, message too large, …). */
  readonly fail: (error: McpError.McpConnectionError) => Effect.Effect<void>
}

/** Creates a memory transport. */
export const make = (server = "memory"): Effect.Effect<MemoryTransport> =>
  Effect.gen(function*() {
    const incoming = yield* Mailbox.make<JsonRpc.Incoming, McpError.McpConnectionError>()
    const outgoing = yield* Queue.unbounded<JsonRpc.Message>()
    const sent: Array<JsonRpc.Message> = []
    const transport: Service = {
      server,
      kind: "stdio",
      send: (message) => {
        sent.push(message)
        Queue.unsafeOffer(outgoing, message)
      },
      incoming
    }
    return {
      transport,
      history: () => sent.slice(),
      next: Queue.take(outgoing),
      drain: Effect.map(Queue.takeAll(outgoing), (chunk) => Array.from(chunk)),
      push: (message) =>
        Effect.suspend(() => {
          const classified = JsonRpc.classify(message)
          return classified === undefined
            ? Effect.dieMessage(`MemoryTransport.push: not a JSON-RPC message: ${JSON.stringify(message)}`)
            : Effect.asVoid(incoming.offer(classified))
        }),
      offer: (message) => Effect.asVoid(incoming.offer(message)),
      offerNow: (message) => void incoming.unsafeOffer(message),
      end: Effect.asVoid(incoming.end),
      fail: (error) => Effect.asVoid(incoming.fail(error))
    } satisfies MemoryTransport
  })

/** The transport as a layer, for `McpClient.layer`. */
export const layer = (peer: MemoryTransport): Layer.Layer<Transport> => Layer.succeed(Transport, peer.transport)

/** True when `message` is a request (has a method and an id). */
export const isRequest = (message: JsonRpc.Message): message is JsonRpc.Request =>
  "method" in message && "id" in message

/** True when `message` is a notification. */
export const isNotification = (message: JsonRpc.Message): message is JsonRpc.Notification =>
  "method" in message && !("id" in message)

/** True when `message` is a response (success or failure). */
export const isResponse = (message: JsonRpc.Message): message is JsonRpc.Success | JsonRpc.Failure =>
  !("method" in message)

/** Waits for the next message and dies unless it is a request for `method`. */
export const expectRequest = (peer: MemoryTransport, method: string): Effect.Effect<JsonRpc.Request> =>
  Effect.flatMap(peer.next, (message) =>
    isRequest(message) && message.method === method
      ? Effect.succeed(message)
      : Effect.dieMessage(`expected a ${method} request, got ${JSON.stringify(message)}`))

/** Waits for the next message and dies unless it is a notification for `method`. */
export const expectNotification = (peer: MemoryTransport, method: string): Effect.Effect<JsonRpc.Notification> =>
  Effect.flatMap(peer.next, (message) =>
    isNotification(message) && message.method === method
      ? Effect.succeed(message)
      : Effect.dieMessage(`expected a ${method} notification, got ${JSON.stringify(message)}`))

/** What the scripted peer answers to `initialize`. */
export interface PeerOptions {
  readonly protocolVersion?: string
  readonly capabilities?: McpClient.JsonObject
  readonly serverInfo?: McpClient.JsonObject
}

/** The scripted peer's half of the handshake: answers the next `initialize`, then expects `notifications/initialized`. */
export const answerInitialize = (
  peer: MemoryTransport,
  options: PeerOptions = {}
): Effect.Effect<JsonRpc.Request> =>
  Effect.gen(function*() {
    const init = yield* expectRequest(peer, "initialize")
    yield* peer.push(JsonRpc.success(init.id, {
      protocolVersion: options.protocolVersion ?? Protocol.PROTOCOL_VERSION,
      capabilities: options.capabilities ?? { tools: {} },
      serverInfo: options.serverInfo ?? { name: "memory-peer", version: "0.0.0" }
    }))
    yield* expectNotification(peer, "notifications/initialized")
    return init
  })

/** A connected client and the peer that plays its server. */
export interface Connected {
  readonly client: McpClient.Service
  readonly peer: MemoryTransport
  /** The `initialize` request the client sent. */
  readonly initialize: JsonRpc.Request
}

/**
 * Connects `McpClient.make` over a fresh memory transport; the scripted peer answers `initialize`
 * with `peer.protocolVersion` / `peer.capabilities`. The connection lives as long as the scope.
 */
export const connect = (
  options: { readonly peer?: PeerOptions; readonly client?: McpClient.Options; readonly server?: string } = {}
): Effect.Effect<Connected, McpError.McpError, Scope.Scope> =>
  Effect.gen(function*() {
    const peer = yield* make(options.server)
    const starting = yield* McpClient.make(options.client).pipe(
      Effect.provideService(Transport, peer.transport),
      Effect.fork
    )
    const initialize = yield* answerInitialize(peer, options.peer)
    const client = yield* Fiber.join(starting)
    return { client, peer, initialize }
  })

/** A connection error to fail a mailbox with. */
export const serverExited = (server = "memory") =>
  new McpError.McpServerExited({ server, code: 1, signal: null, stderrTail: ["boom"] })
