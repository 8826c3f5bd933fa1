/**
 * What both ends of the host's RPC share besides the groups: the path, the one serialization (a
 * mismatch between client and server hangs silently, so both take it from here), and the
 * WebSocket subprotocols a client offers (docs/rpc.md).
 *
 * A browser cannot set headers on a WebSocket, so a client presents the host's access token as a
 * second `Sec-WebSocket-Protocol` entry: `new WebSocket(url, protocolsFor(token))` offers
 * `["skald-rpc", "skald-token.<token>"]`; the host answers with `skald-rpc`, never echoing the token.
 * Non-browser clients may send `Authorization: Bearer <token>` instead.
 *
 * A refused upgrade is only a failed WebSocket to a browser (it cannot read the 401), so a page
 * first asks `GET /rpc/auth` ({@link AUTH_PATH}) whether the host needs a token and whether the one
 * it has (sent as `Authorization: Bearer`) is accepted: {@link AuthStatus}.
 *
 * @since 0.1.0
 */
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import type * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

/** The path of the RPC WebSocket on the host's HTTP server. */
export const PATH = "/rpc"

/** The subprotocol every client offers first (the one the host selects). */
export const PROTOCOL = "skald-rpc"

/** The prefix of the subprotocol entry that carries the access token. */
export const TOKEN_PROTOCOL_PREFIX = "skald-token."

/** Where a client learns whether it needs a token and whether its own is accepted (`GET`, JSON). */
export const AUTH_PATH = "/rpc/auth"

/** What `GET /rpc/auth` answers: the host needs a token; the one presented (if any) is it. */
export const AuthStatus = Schema.Struct({
  tokenRequired: Schema.Boolean,
  tokenAccepted: Schema.Boolean
})

/** The characters an access token may hold (they must fit a `Sec-WebSocket-Protocol` entry). */
export const TOKEN_PATTERN = /^[A-Za-z0-9._~-]{16,256}$/

/** The subprotocols a client offers: `skald-rpc`, then the token entry when there is a token. */
export const protocolsFor = (token?: string | undefined): Array<string> =>
  token === undefined ? [PROTOCOL] : [PROTOCOL, `${TOKEN_PROTOCOL_PREFIX}${token}`]

/** The serialization both ends use: newline-delimited JSON. */
export const serialization: RpcSerialization.RpcSerialization["Type"] = RpcSerialization.ndjson

/** {@link serialization} as a layer, for `RpcServer` and `RpcClient` alike. */
export const layerSerialization: Layer.Layer<RpcSerialization.RpcSerialization> = RpcSerialization.layerNdjson
