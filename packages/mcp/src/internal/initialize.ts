/**
 * `initialize` and version negotiation: the client asks for the newest protocol version it
 * speaks, accepts a compatible older one (with a warning), refuses any other, and names the
 * server by its `serverInfo.name` when asked to.
 */
import * as McpError from "@skald/domain/McpError"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type * as Tracer from "effect/Tracer"
import type * as Elicitation from "../Elicitation.js"
import type { ServerIdentity } from "../McpClient.js"
import * as Protocol from "../Protocol.js"
import * as Sampling from "../Sampling.js"
import type { Connection } from "./connection.js"
import * as Span from "./span.js"

export const initialize = (
  conn: Connection,
  elicitationHandler: Elicitation.Handler | undefined,
  roots: boolean,
  send: (
    method: string,
    params: unknown,
    timeoutMillis: number,
    cancellable: boolean,
    late?: undefined,
    span?: Tracer.Span
  ) => Effect.Effect<unknown, McpError.McpError>,
  notify: (method: string) => Effect.Effect<void>,
  samplingHandler: Sampling.Handler | undefined = undefined
): Effect.Effect<ServerIdentity, McpError.McpError> =>
  Span.hot("initialize", () => Span.requestAttributes(conn.server, "initialize"), (span) =>
    Effect.gen(function*() {
      const result = yield* send(
        "initialize",
        {
          protocolVersion: Protocol.PROTOCOL_VERSION,
          capabilities: {
            experimental: { tasks: {} },
            ...(roots ? { roots: { listChanged: true } } : {}),
            ...(samplingHandler === undefined ? {} : { sampling: Sampling.capability(samplingHandler) }),
            ...(elicitationHandler === undefined
              ? {}
              : { elicitation: elicitationHandler.url ? { form: {}, url: {} } : { form: {} } })
          },
          clientInfo: conn.settings.clientInfo
        },
        conn.settings.startTimeoutMillis,
        false,
        undefined,
        span
      )
      if (!Predicate.isRecord(result) || typeof result.protocolVersion !== "string") {
        return yield* new McpError.McpProtocolError({
          server: conn.server,
          detail: "the initialize answer has no protocolVersion"
        })
      }
      const version = result.protocolVersion
      const info = Predicate.isRecord(result.serverInfo) ? result.serverInfo : {}
      if (conn.settings.nameFromServerInfo && typeof info.name === "string" && info.name.trim().length > 0) {
        conn.server = info.name.trim()
        conn.renamed = conn.server !== conn.transport.server
      }
      if (version !== Protocol.PROTOCOL_VERSION) {
        if (!Protocol.COMPATIBLE_VERSIONS.includes(version)) {
          return yield* new McpError.McpUnsupportedProtocolVersion({
            server: conn.server,
            requested: Protocol.PROTOCOL_VERSION,
            received: version,
            supported: Protocol.SUPPORTED_VERSIONS
          })
        }
        yield* conn.log(
          "warning",
          `the server negotiated protocol version ${version} (asked for ${Protocol.PROTOCOL_VERSION})`
        )
      }
      yield* notify("notifications/initialized")
      return {
        protocolVersion: version,
        capabilities: Predicate.isRecord(result.capabilities) ? result.capabilities : {},
        serverInfo: info,
        instructions: typeof result.instructions === "string" ? result.instructions : undefined
      } satisfies ServerIdentity
    }))
