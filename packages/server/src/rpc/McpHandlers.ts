/**
 * The Mcp group's handlers: thin over the manager (live status, enable/disable, remove, restart,
 * tools), Registration (add, show), ServerLogs (tail and follow) and the event repository. A
 * registration takes effect at once: the manager reconciles after it.
 *
 * @since 0.1.0
 */
import type { PlatformError } from "@effect/platform/Error"
import { McpError, McpRpcs, RpcErrors, ServerName, ToolName } from "@skald/domain"
import type { OAuth } from "@skald/mcp"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as EventRepo from "../host/EventRepo.js"
import type {
  CorruptRow,
  DatabaseError,
  SecretStoreError,
  UnknownSecretReference,
  UnknownServer
} from "../host/HostError.js"
import { McpManager } from "../host/McpManager.js"
import { McpServerRepo } from "../host/McpServerRepo.js"
import * as OAuthTokens from "../host/OAuthTokens.js"
import { Registration } from "../host/Registration.js"
import { SecretStore } from "../host/SecretStore.js"
import { readLog, ServerLogs } from "../host/ServerLogs.js"
import { StatusRepo } from "../host/StatusRepo.js"
import { hostFailure, orHostFailure } from "./Failures.js"

/** A name no server can have is no registered server's. */
const nameOf = (name: string) =>
  ServerName.isValid(name) ? Effect.succeed(ServerName.make(name)) : Effect.fail(new RpcErrors.ServerNotFound({ name }))

const nameErrors = (error: UnknownServer | DatabaseError | CorruptRow | PlatformError) =>
  error._tag === "UnknownServer" ? new RpcErrors.ServerNotFound({ name: error.name }) : hostFailure(error)

/** How much of a log `Logs` gives by default. */
export const DEFAULT_TAIL = 64 * 1024

/** The last `bytes` of `data`, starting at a line. */
const tail = (data: Uint8Array, bytes: number): Uint8Array => {
  if (data.length <= bytes) return data
  let start = data.length - bytes
  while (start < data.length && data[start - 1] !== 0x0a) start++
  return data.subarray(start)
}

/** A stored event as the group gives it. */
export const storedEventOf = (e: EventRepo.StoredEvent): McpRpcs.StoredEvent =>
  McpRpcs.StoredEvent.make({
    id: e.id,
    server: e.server,
    method: e.method,
    params: e.params,
    receivedAt: e.receivedAt,
    status: e.status,
    ...(e.processedAt === undefined ? {} : { processedAt: e.processedAt })
  })

/** How long `Login` waits for the browser's redirect. */
export const LOGIN_TIMEOUT: Duration.DurationInput = "5 minutes"

type LoginError = RpcErrors.ServerNotFound | RpcErrors.AuthorizationFailed | RpcErrors.HostFailure

/**
 * Why a login failed, as the group says it: the flow's own failures (OAuth's, a stdio server, an
 * unset secret its client needs) are the authorization's; the host's database and files are its own.
 */
const loginError = (
  name: string,
  error:
    | OAuth.OAuthError
    | OAuth.OAuthRefreshFailed
    | OAuth.OAuthAuthorizationRequired
    | OAuthTokens.OAuthNotApplicable
    | UnknownServer
    | UnknownSecretReference
    | SecretStoreError
    | DatabaseError
    | CorruptRow
): LoginError => {
  switch (error._tag) {
    case "UnknownServer":
      return new RpcErrors.ServerNotFound({ name })
    case "OAuthError":
      return new RpcErrors.AuthorizationFailed({
        name,
        reason: error.clientRefused === true ? `${error.reason}; ${McpError.OAUTH_CLIENT_REFUSED}` : error.reason
      })
    case "OAuthRefreshFailed":
    case "OAuthNotApplicable":
      return new RpcErrors.AuthorizationFailed({ name, reason: error.reason })
    case "OAuthAuthorizationRequired":
    case "UnknownSecretReference":
      return new RpcErrors.AuthorizationFailed({ name, reason: error.message })
    default:
      return hostFailure(error)
  }
}

/** The handlers of `McpRpcs`. */
export const layer = McpRpcs.McpRpcs.toLayer(Effect.gen(function*() {
  const manager = yield* McpManager
  const registration = yield* Registration
  const logs = yield* ServerLogs
  const events = yield* EventRepo.EventRepo
  const repo = yield* McpServerRepo
  const secrets = yield* SecretStore
  const statuses = yield* StatusRepo
  const registered = (name: string) =>
    Effect.flatMap(nameOf(name), (valid) =>
      registration.show(valid).pipe(
        orHostFailure,
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(new RpcErrors.ServerNotFound({ name })),
          onSome: (description) => Effect.succeed({ name: valid, description })
        }))
      ))
  return McpRpcs.McpRpcs.of({
    "Mcp.List": () => orHostFailure(manager.list),
    "Mcp.Show": ({ name }) =>
      Effect.map(registered(name), ({ description }) => McpRpcs.ServerDescription.make(description)),
    "Mcp.Add": (input) =>
      Effect.gen(function*() {
        const done = yield* registration.register({
          name: input.name,
          transport: input.transport._tag === "stdio"
            ? {
              _tag: "stdio",
              command: input.transport.command,
              args: input.transport.args ?? [],
              env: input.transport.env ?? {},
              secretEnv: input.transport.secretEnv ?? {}
            }
            : input.transport,
          description: input.description,
          friendlyName: input.friendlyName,
          enabled: input.enabled ?? true,
          roots: input.roots,
          replace: input.replace ?? false
        }).pipe(Effect.mapError((error) => {
          switch (error._tag) {
            case "ServerAlreadyRegistered":
              return new RpcErrors.ServerExists({ name: error.name })
            case "InvalidServerEntry":
              return new RpcErrors.InvalidServer({ name: input.name, problem: error.reason })
            default:
              return hostFailure(error)
          }
        }))
        // The manager follows the registry within about a second; its own reconcile makes it at once.
        yield* manager.reconcile.pipe(Effect.catchAll((error) => Effect.logWarning(error.message)))
        return {
          replaced: done.replaced,
          storedSecrets: done.secrets.map((s) => s.name),
          droppedSecrets: done.droppedSecrets
        }
      }),
    "Mcp.SetEnabled": ({ enabled, name }) =>
      Effect.flatMap(nameOf(name), (valid) => Effect.mapError(manager.setEnabled(valid, enabled), nameErrors)),
    "Mcp.Remove": ({ name }) =>
      Effect.flatMap(nameOf(name), (valid) =>
        manager.unregister(valid).pipe(
          Effect.mapError(nameErrors),
          Effect.map((removedSecrets) => ({ removedSecrets }))
        )),
    "Mcp.Restart": ({ name }) =>
      Effect.flatMap(
        registered(name),
        ({ description, name: valid }) =>
          manager.restart(valid).pipe(Effect.mapError(nameErrors), Effect.as({ enabled: description.enabled }))
      ),
    "Mcp.Tools": ({ name }) =>
      Effect.gen(function*() {
        if (name === undefined) {
          return (yield* manager.tools).map((t) =>
            McpRpcs.ToolInfo.make({ name: t.name, server: t.server, tool: t.tool })
          )
        }
        const { name: server } = yield* registered(name).pipe(
          Effect.catchTag("HostFailure", () => Effect.succeed({ name: ServerName.make(name) }))
        )
        const list = yield* manager.toolList(server)
        if (Option.isNone(list)) return []
        const wire = new Map(list.value.wire.map((w) => [w.name, w]))
        return list.value.tools.map((tool) => {
          const sent = wire.get(tool.name)
          return McpRpcs.ToolInfo.make({
            name: ToolName.format(server, tool.name),
            server,
            tool,
            ...(sent === undefined ? {} : { wire: sent })
          })
        })
      }),
    "Mcp.Logs": ({ follow = false, name, tailBytes = DEFAULT_TAIL }) =>
      Stream.unwrap(Effect.gen(function*() {
        const valid = yield* nameOf(name)
        const data = Option.getOrElse(
          yield* readLog(valid).pipe(Effect.mapError(nameErrors)),
          () => new Uint8Array(0)
        )
        const head = Stream.make(tail(data, tailBytes))
        const rest = follow
          ? logs.follow(name, { from: data.length }).pipe(Stream.mapError(hostFailure))
          : Stream.empty
        return Stream.concat(head, rest).pipe(
          Stream.filter((bytes) => bytes.length > 0),
          Stream.decodeText()
        )
      })),
    "Mcp.Login": ({ name }) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const { name: valid } = yield* registered(name)
        const steps = yield* Mailbox.make<McpRpcs.LoginStep, LoginError>()
        const authorizer = yield* OAuthTokens.loopbackAuthorizer(
          (url) => steps.offer({ _tag: "Open", url: url.href }),
          LOGIN_TIMEOUT,
          valid
        )
        // The tokens stored, the server reconnects with them now, not at its next retry.
        yield* OAuthTokens.authorize(valid, authorizer).pipe(
          Effect.provideService(McpServerRepo, repo),
          Effect.provideService(SecretStore, secrets),
          Effect.provideService(StatusRepo, statuses),
          Effect.mapError((error) => loginError(valid, error)),
          // Whatever ends it (a defect too) ends the stream.
          Effect.matchCauseEffect({
            onFailure: (cause) => steps.failCause(cause),
            onSuccess: () => Effect.zipRight(steps.offer({ _tag: "Authorized" }), steps.end)
          }),
          Effect.forkScoped
        )
        return Mailbox.toStream(steps)
      })),
    "Mcp.Events": ({ limit, pending }) =>
      events.list({ pending: pending ?? false, ...(limit === undefined ? {} : { limit }) }).pipe(
        orHostFailure,
        Effect.map((stored) => stored.map(storedEventOf))
      )
  })
}))
