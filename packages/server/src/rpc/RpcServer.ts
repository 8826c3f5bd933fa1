/**
 * The host's RPC server: every group (Agent, Inbox, Mcp, Host, Tic) with its handlers, as the HTTP app the
 * host's one HTTP server mounts at `/rpc` (a WebSocket upgrade; host/HttpEndpoints.ts puts it
 * behind the Host/Origin guard), with the one serialization of `RpcProtocol`.
 *
 * The access token (docs/rpc.md): when the host has one, an upgrade is refused (401, no upgrade)
 * unless it presents the token, as a `Sec-WebSocket-Protocol` entry `skald-token.<token>` (what a
 * browser can do) or `Authorization: Bearer <token>`; compared in constant time.
 *
 * @since 0.1.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as RpcServer from "@effect/rpc/RpcServer"
import { RpcProtocol } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Crypto from "node:crypto"
import * as AgentHandlers from "./AgentHandlers.js"
import * as HostHandlers from "./HostHandlers.js"
import * as InboxHandlers from "./InboxHandlers.js"
import * as McpHandlers from "./McpHandlers.js"
import { Rpcs } from "./Rpcs.js"
import * as TicHandlers from "./TicHandlers.js"

/** Every group the host serves (Rpcs.ts). */
export { Rpcs }

/** The handlers of every group. */
export const handlers = Layer.mergeAll(
  AgentHandlers.layer,
  InboxHandlers.layer,
  McpHandlers.layer,
  HostHandlers.layer,
  TicHandlers.layer
)

/** Whether `given` is `token`, in time independent of where they differ. */
export const sameToken = (given: string, token: Redacted.Redacted<string>): boolean => {
  const digest = (text: string) => Crypto.createHash("sha256").update(text, "utf8").digest()
  return Crypto.timingSafeEqual(digest(given), digest(Redacted.value(token)))
}

/** The token a request presents: the `skald-token.` subprotocol entry, else a Bearer header. */
export const presentedToken = (headers: Readonly<Record<string, string | undefined>>): string | undefined => {
  for (const entry of (headers["sec-websocket-protocol"] ?? "").split(",")) {
    const value = entry.trim()
    if (value.startsWith(RpcProtocol.TOKEN_PROTOCOL_PREFIX)) {
      return value.slice(RpcProtocol.TOKEN_PROTOCOL_PREFIX.length)
    }
  }
  const authorization = headers["authorization"]
  return authorization !== undefined && /^Bearer /i.test(authorization) ? authorization.slice(7).trim() : undefined
}

/** Refuses a request that does not present `token` (when there is one) with 401. */
export const requireToken =
  (token: Redacted.Redacted<string> | undefined) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
    token === undefined ? app : Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const given = presentedToken(request.headers)
      if (given === undefined || !sameToken(given, token)) {
        yield* Effect.logDebug("refused an RPC connection without the access token")
        return HttpServerResponse.text("refused: this host needs its access token\n", {
          status: 401,
          headers: { "x-content-type-options": "nosniff" }
        })
      }
      return yield* app
    })

/**
 * `GET /rpc/auth` (`RpcProtocol.AUTH_PATH`): whether the host needs a token and whether the request
 * presents it (a Bearer header), as `RpcProtocol.AuthStatus` JSON — what a page asks before it opens
 * the WebSocket, whose refusal it could not tell from a host that is down. It says no more than an
 * upgrade's 401 would (the comparison is the same, constant-time).
 */
export const authStatus = (token: Redacted.Redacted<string> | undefined): HttpApp.Default<
  never,
  HttpServerRequest.HttpServerRequest
> =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const given = token === undefined ? undefined : presentedToken(request.headers)
    const status: typeof RpcProtocol.AuthStatus.Type = {
      tokenRequired: token !== undefined,
      tokenAccepted: token === undefined || (given !== undefined && sameToken(given, token))
    }
    return HttpServerResponse.unsafeJson(status, { headers: { "cache-control": "no-store" } })
  })

/**
 * The `/rpc` app: the WebSocket protocol of `RpcServer` over the groups' handlers, the token
 * required when given. Lives in the current scope.
 */
export const httpApp = (token: Redacted.Redacted<string> | undefined) =>
  RpcServer.toHttpAppWebsocket(Rpcs, { spanPrefix: "Rpc" }).pipe(
    Effect.map((app): HttpApp.Default<never, Scope.Scope | HttpServerRequest.HttpServerRequest> =>
      requireToken(token)(app)
    ),
    Effect.provide(RpcProtocol.layerSerialization)
  )
