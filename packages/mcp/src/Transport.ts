/**
 * The only per-transport code: how messages go out, how they come in, and what closing means.
 * Everything else (ids, routing, pagination, results, cancellation) is the engine's, written once.
 *
 * @since 0.1.0
 */
import type * as McpError from "@skald/domain/McpError"
import * as Context from "effect/Context"
import type * as Mailbox from "effect/Mailbox"
import type * as JsonRpc from "./JsonRpc.js"

/** A connected transport. */
export interface Service {
  /** The server name, for logs and errors. */
  readonly server: string
  /** `stdio` or `http`. */
  readonly kind: "stdio" | "http"
  /** The server's process id (stdio only). */
  readonly pid?: number | undefined
  /**
   * Queues one message for the peer, synchronously (the engine calls it on its hot path and in
   * interruption handlers). Never blocks on the peer: writes of one event-loop turn are batched.
   * A transport that has closed drops the message (the engine has already failed every request
   * with the reason).
   */
  readonly send: (message: JsonRpc.Message) => void
  /**
   * Optional, for a transport that writes JSON text as it is (stdio): `send` for a message the
   * engine has already serialized (one line of JSON, no newline). The engine writes its plain
   * `tools/call` requests this way — straight to text, with no message objects to build and walk.
   */
  readonly sendJson?: ((json: string) => void) | undefined
  /** The session the server assigned (`Mcp-Session-Id`, HTTP only), for the request spans' `mcp.session.id`. */
  readonly sessionId?: (() => string | undefined) | undefined
  /** Incoming messages, in order. Ends with the reason the connection closed. */
  readonly incoming: Mailbox.ReadonlyMailbox<JsonRpc.Incoming, McpError.McpConnectionError>
}

/** The transport a client runs on. Each transport is a scoped layer providing this tag. */
export class Transport extends Context.Tag("@skald/mcp/Transport")<Transport, Service>() {}
