/**
 * The CLI as a client of the running host (docs/rpc.md *The CLI as a client*): finds the `skald
 * serve` of the home from the address it recorded (host/HostAddress.ts) and connects an
 * `RpcClient` of every group over a WebSocket (NodeSocket, the shared serialization of
 * `RpcProtocol`), presenting the access token from `--token` or `SKALD_TOKEN` when there is one.
 *
 * @since 0.1.0
 */
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as Socket from "@effect/platform/Socket"
import * as RpcClient from "@effect/rpc/RpcClient"
import type { RpcClientError } from "@effect/rpc/RpcClientError"
import { RpcProtocol } from "@skald/domain"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as HostAddress from "../host/HostAddress.js"
import { Paths } from "../host/Paths.js"
import { Rpcs } from "../rpc/Rpcs.js"

/** No `skald serve` runs for the home. */
export class HostNotRunning extends Schema.TaggedError<HostNotRunning>()("HostNotRunning", { home: Schema.String }) {
  override get message(): string {
    return `\`skald serve\` is not running for the home ${this.home}: start it there (or pass that host's --home)`
  }
}

/** The recorded host did not take the connection (gone, or it wants another access token). */
export class HostUnreachable extends Schema.TaggedError<HostUnreachable>()("HostUnreachable", {
  url: Schema.String,
  problem: Schema.String
}) {
  override get message(): string {
    return `the host at ${this.url} did not take the connection (${this.problem}): is \`skald serve\` still ` +
      "running, and does SKALD_TOKEN (or --token) hold its access token?"
  }
}

/** A client of every group of the host. */
export type Client = RpcClient.FromGroup<typeof Rpcs, RpcClientError>

/** The host's address for the home, if one runs. */
export const find = HostAddress.find

/** The token a client presents: `--token`, else `SKALD_TOKEN`, else none. */
export const tokenOf = (flag: Option.Option<Redacted.Redacted<string>>) =>
  Option.isSome(flag)
    ? Effect.succeed(Option.getOrUndefined(Option.filter(flag, (t) => Redacted.value(t).length > 0)))
    : Config.option(Config.redacted("SKALD_TOKEN")).pipe(
      Effect.orElseSucceed(() => Option.none<Redacted.Redacted<string>>()),
      Effect.map((t) => Option.getOrUndefined(Option.filter(t, (v) => Redacted.value(v).length > 0)))
    )

/** A client of the host at `url` for the current scope. */
export const connectTo = (url: string, token: Redacted.Redacted<string> | undefined) =>
  Layer.build(
    RpcClient.layerProtocolSocket().pipe(
      Layer.provide(
        Layer.scoped(
          Socket.Socket,
          Socket.makeWebSocket(`${url.replace(/^http/, "ws")}${RpcProtocol.PATH}`, {
            protocols: RpcProtocol.protocolsFor(token === undefined ? undefined : Redacted.value(token))
          })
        )
      ),
      Layer.provide(NodeSocket.layerWebSocketConstructor),
      Layer.provide(RpcProtocol.layerSerialization)
    )
  ).pipe(Effect.flatMap((protocol) => RpcClient.make(Rpcs).pipe(Effect.provide(protocol))))

/** The host of the home and a client of it, or `HostNotRunning`. */
export const connect = (token: Redacted.Redacted<string> | undefined) =>
  Effect.gen(function*() {
    const paths = yield* Paths
    const address = yield* find
    if (Option.isNone(address)) return yield* new HostNotRunning({ home: paths.home })
    const client: Client = yield* connectTo(address.value.url, token)
    return { url: address.value.url, client }
  })

/** Turns a failed connection (`RpcClientError`) into `HostUnreachable` at `url`. */
export const reaching = (url: string) => <A, E, R>(effect: Effect.Effect<A, E | RpcClientError, R>) =>
  Effect.catchIf(
    effect,
    (e): e is RpcClientError =>
      typeof e === "object" && e !== null && "_tag" in e && (e as { _tag: unknown })._tag === "RpcClientError",
    (e) => new HostUnreachable({ url, problem: e.message })
  ) as Effect.Effect<A, Exclude<E, RpcClientError> | HostUnreachable, R>
