/**
 * Connects one registered server: resolves its secrets, starts the transport (stdio or HTTP)
 * and initializes a client, all in the caller's scope. Used by the manager and by the one-off
 * `skald mcp tools|call` commands alike.
 *
 * @since 0.1.0
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type { McpError, McpServerEntry } from "@skald/domain"
import { HttpTransport, McpClient, StdioTransport, Transport } from "@skald/mcp"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { StartTimeout, type UnknownSecretReference, type SecretStoreError } from "./HostError.js"
import { SecretStore } from "./SecretStore.js"

/** How patiently to connect and call. */
export interface Options {
  readonly startTimeout: Duration.DurationInput
  readonly callTimeout: Duration.DurationInput
  /** Stdio shutdown graces (defaults of the transport when absent). */
  readonly stdinGrace?: Duration.DurationInput | undefined
  readonly termGrace?: Duration.DurationInput | undefined
}

/** A connected server. */
export interface Connection {
  readonly client: McpClient.Service
  /** The process id of a stdio server. */
  readonly pid: number | undefined
}

/** Why a server could not be connected. */
export type ConnectError = McpError.McpError | StartTimeout | UnknownSecretReference | SecretStoreError

/** Resolves the entry's `${VAR}` references and connects, within the start timeout. */
export const connect = (
  entry: McpServerEntry.McpServerEntry,
  options: Options
): Effect.Effect<Connection, ConnectError, SecretStore | HttpClient.HttpClient | Scope.Scope> =>
  Effect.gen(function*() {
    const server = entry.name
    const secrets = yield* SecretStore
    const resolved = yield* secrets.resolve(server, entry.config)
    const clientOptions: McpClient.Options = { startTimeout: options.startTimeout, callTimeout: options.callTimeout }
    const transport = resolved._tag === "stdio"
      ? yield* StdioTransport.make({
        server,
        command: resolved.command,
        args: resolved.args,
        env: resolved.env,
        stdinGrace: options.stdinGrace,
        termGrace: options.termGrace
      })
      : yield* HttpTransport.make({ server, url: resolved.url, apiKey: resolved.apiKey })
    const client = yield* McpClient.make(clientOptions).pipe(Effect.provideService(Transport.Transport, transport))
    return { client, pid: transport.pid }
  }).pipe(
    Effect.timeoutFail({
      duration: options.startTimeout,
      onTimeout: () => new StartTimeout({ server: entry.name, seconds: Duration.toSeconds(options.startTimeout) })
    })
  )
