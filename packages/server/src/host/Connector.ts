/**
 * Connects one registered server: resolves its secrets, starts the transport (stdio or HTTP)
 * and initializes a client, all in the caller's scope. Used by the manager and by the one-off
 * `skald mcp tools|call` commands alike.
 *
 * @since 0.1.0
 */
import type { McpError, McpServerEntry } from "@skald/domain"
import {
  Elicitation,
  HttpTransport,
  McpClient,
  McpEvents,
  McpLog,
  type OAuth,
  Roots,
  Sampling,
  StdioTransport,
  Transport
} from "@skald/mcp"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { type SecretStoreError, StartTimeout, type UnknownSecretReference } from "./HostError.js"
import * as OAuthTokens from "./OAuthTokens.js"
import { type Resolved, SecretStore } from "./SecretStore.js"

/** How patiently to connect and call. */
export interface Options {
  readonly startTimeout: Duration.DurationInput
  readonly callTimeout: Duration.DurationInput
  /** How long the engine waits for an elicitation's answer before answering `cancel` (default 5 min). */
  readonly userDeadline?: Duration.DurationInput | undefined
  /** Stdio shutdown graces (defaults of the transport when absent). */
  readonly stdinGrace?: Duration.DurationInput | undefined
  readonly termGrace?: Duration.DurationInput | undefined
  /**
   * The base environment of stdio servers (see ServerEnvironment.ts); each server's registered
   * `env` goes on top and nothing else of this process's is inherited. Absent: the transport's
   * default (this process's environment, with the registered `env` merged over it).
   */
  readonly environment?: Readonly<Record<string, string>> | undefined
}

/** Where a connection's log lines and events go (defaults: Effect's logger; events only on the client's stream). */
export interface Sinks {
  readonly log?: McpLog.Sink | undefined
  readonly events?: McpEvents.Sink | undefined
  /** Told a stdio server's pid as soon as it is spawned, before it initializes. */
  readonly spawned?: ((pid: number) => Effect.Effect<void>) | undefined
  /** An HTTP server's OAuth session (OAuthTokens.session): asked on 401/403. */
  readonly auth?: OAuth.Session | undefined
  /** Who answers the server's elicitations: with one, the client declares `elicitation` (form, url). */
  readonly elicitation?: Elicitation.Handler | undefined
  /** Who answers the server's sampling requests: with one, the client declares `sampling` (with `tools`). */
  readonly sampling?: Sampling.Handler | undefined
}

/** A connected server. */
export interface Connection {
  readonly client: McpClient.Service
  /** The process id of a stdio server. */
  readonly pid: number | undefined
}

/** Why a server could not be connected. */
export type ConnectError = McpError.McpError | StartTimeout | UnknownSecretReference | SecretStoreError

/**
 * Connects a server whose config is already resolved, within the start timeout. `roots` (its
 * config's, absolute folders) are offered to it as MCP roots; none: no roots are declared.
 */
export const connectResolved = (
  server: string,
  resolved: Resolved,
  options: Options,
  sinks: Sinks = {},
  roots: ReadonlyArray<string> = []
): Effect.Effect<Connection, McpError.McpError | StartTimeout, Scope.Scope> =>
  Effect.gen(function*() {
    const clientOptions: McpClient.Options = {
      startTimeout: options.startTimeout,
      callTimeout: options.callTimeout,
      userDeadline: options.userDeadline
    }
    const transport = resolved._tag === "stdio"
      ? yield* StdioTransport.make({
        server,
        command: resolved.command,
        args: resolved.args,
        env: options.environment === undefined ? resolved.env : { ...options.environment, ...resolved.env },
        inheritEnv: options.environment === undefined,
        stdinGrace: options.stdinGrace,
        termGrace: options.termGrace
      })
      : yield* HttpTransport.make({ server, url: resolved.url, apiKey: resolved.apiKey, auth: sinks.auth })
    if (sinks.spawned !== undefined && transport.pid !== undefined) yield* sinks.spawned(transport.pid)
    const make = McpClient.make(clientOptions).pipe(Effect.provideService(Transport.Transport, transport))
    const client = yield* (roots.length === 0
      ? make
      : Effect.provideService(make, Roots.Roots, Roots.fixed(roots.map((root) => Roots.fromPath(root)))))
    return { client, pid: transport.pid }
  }).pipe(
    sinks.log === undefined ? (e) => e : Effect.provideService(McpLog.McpLogSink, sinks.log),
    sinks.events === undefined ? (e) => e : Effect.provideService(McpEvents.McpEventSink, sinks.events),
    sinks.elicitation === undefined
      ? (e) => e
      : Effect.provideService(Elicitation.ElicitationHandler, sinks.elicitation),
    sinks.sampling === undefined ? (e) => e : Effect.provideService(Sampling.SamplingHandler, sinks.sampling),
    Effect.timeoutFail({
      duration: options.startTimeout,
      onTimeout: () => new StartTimeout({ server, seconds: Duration.toSeconds(options.startTimeout) })
    })
  )

/** An HTTP server without an api key gets an OAuth session (it acts only on a 401/403). */
export const oauthFor = (
  server: string,
  resolved: Resolved
): Effect.Effect<OAuth.Session | undefined, never, SecretStore> =>
  resolved._tag === "http" && resolved.apiKey === undefined
    ? OAuthTokens.session(server, resolved.url, resolved.oauth)
    : Effect.succeed(undefined)

/** Resolves the entry's `${VAR}` references and connects, within the start timeout. */
export const connect = (
  entry: McpServerEntry.McpServerEntry,
  options: Options,
  sinks: (secrets: Resolved["secrets"]) => Sinks = () => ({})
): Effect.Effect<Connection, ConnectError, SecretStore | Scope.Scope> =>
  Effect.gen(function*() {
    const resolved = yield* (yield* SecretStore).resolve(entry.name, entry.config)
    const auth = yield* oauthFor(entry.name, resolved)
    return yield* connectResolved(
      entry.name,
      resolved,
      options,
      { ...sinks(resolved.secrets), auth },
      entry.config.roots
    )
  })
