/**
 * An optional side door between a transport and the engine: a transport that reads messages in a
 * callback (stdio) offers each response to the engine first, and the engine settles it right
 * there, synchronously — no mailbox, no reader fiber between the bytes and the waiting caller.
 * Everything else (and any response the engine declines) still goes through `incoming`, in order.
 *
 * Order is kept by the engine: it declines every response while anything the transport queued
 * before it is still unprocessed (a notification, a server request), so a response never
 * overtakes an earlier message. Stdio offers every response; HTTP offers the answer to a request
 * that was the only one in flight (under load its answers go through `incoming`, a turn's together);
 * transports without the door (test transports) are unchanged.
 */
import type * as JsonRpc from "../JsonRpc.js"
import type { Service } from "../Transport.js"

/** The engine's side, handed to the transport. */
export interface Receiver {
  /** Offers a response; true when the engine took it (the transport then drops it). */
  readonly response: (message: JsonRpc.Success | JsonRpc.Failure) => boolean
  /** Tells the engine a message went to `incoming` instead (called before it is offered there). */
  readonly queued: () => void
}

const key: unique symbol = Symbol.for("@skald/mcp/internal/DirectDelivery")

interface Capable {
  readonly [key]: (receiver: Receiver) => void
}

/** Adds the door to a transport's service object. `connect` is called once, by the engine. */
export const offer = <S extends Service>(service: S, connect: (receiver: Receiver) => void): S =>
  Object.assign(service, { [key]: connect })

/** Connects the engine to the transport's door; false when the transport has none. */
export const connect = (transport: Service, receiver: Receiver): boolean => {
  const capable = transport as Service & Partial<Capable>
  if (typeof capable[key] !== "function") return false
  capable[key](receiver)
  return true
}
