/**
 * The reader: routes what the transport receives — responses to their requests (also straight
 * from a transport's read callback, internal/directDelivery.ts), the server's requests to their
 * handlers, notifications to the engine's own consumers and to the streams.
 */
import * as McpError from "@skald/domain/McpError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as PubSub from "effect/PubSub"
import * as Scope from "effect/Scope"
import type * as JsonRpc from "../JsonRpc.js"
import type * as McpEvents from "../McpEvents.js"
import * as McpLog from "../McpLog.js"
import type { Connection } from "./connection.js"
import * as DirectDelivery from "./directDelivery.js"
import type { Requests } from "./requests.js"
import type { ServerRequests } from "./serverRequests.js"
import type { ProgressTable } from "./taskCalls.js"
import type * as TaskPoller from "./taskPoller.js"

/** What the reader hands messages to. */
export interface Routes {
  readonly requests: Requests
  readonly serverRequests: ServerRequests
  readonly onToolsChanged: Effect.Effect<void, never, Scope.Scope>
  readonly taskSignals: TaskPoller.StatusSignals
  readonly taskProgress: ProgressTable
  readonly events: PubSub.PubSub<JsonRpc.Notification>
  readonly notifications: PubSub.PubSub<JsonRpc.Notification>
  readonly eventSink: McpEvents.Sink | undefined
  /** The connection's scope (the background tool refresh runs in it). */
  readonly scope: Scope.Scope
}

/**
 * Connects the direct-delivery door (when the transport has one) and returns the reader fiber's
 * effect: it ends the connection when the transport's stream ends or fails, or when interrupted.
 */
export const make = (conn: Connection, routes: Routes): Effect.Effect<void> => {
  const { log, transport } = conn
  const { requests, serverRequests, taskSignals, taskProgress, events, notifications, eventSink, scope } = routes
  const { pending, onResponse, closeWith } = requests

  const onNotification = (message: JsonRpc.Notification): Effect.Effect<void> => {
    const params = Predicate.isRecord(message.params) ? message.params : {}
    switch (message.method) {
      case "notifications/message": {
        const level = McpLog.isLevel(params.level) ? params.level : "info"
        const data = typeof params.data === "string" ? params.data : JSON.stringify(params.data)
        const text = typeof params.logger === "string" ? `${params.logger}: ${data}` : `${data}`
        return log(level, text)
      }
      case "notifications/tools/list_changed":
        return Scope.extend(routes.onToolsChanged, scope)
      case "notifications/elicitation/complete": {
        if (typeof params.elicitationId === "string") serverRequests.completeUrl(params.elicitationId)
        return PubSub.publish(notifications, message).pipe(Effect.asVoid)
      }
      case "notifications/tasks/status": {
        if (typeof params.taskId === "string") taskSignals.notify(params.taskId)
        return PubSub.publish(notifications, message).pipe(Effect.asVoid)
      }
      case "notifications/progress": {
        const token = params.progressToken
        const entry = typeof token === "number" ? pending.get(token) : undefined
        const told = entry !== undefined && entry.toolName !== undefined
          ? requests.onCallProgress(entry, params)
          : (typeof token === "string" ? taskProgress.get(token)?.(params) : undefined)
        const published = PubSub.publish(notifications, message).pipe(Effect.asVoid)
        if (told === undefined) return published
        return Effect.zipRight(
          Effect.catchAllCause(told, () => log("warning", "a progress handler failed; the call goes on")),
          published
        )
      }
      case "notifications/cancelled": {
        const id = params.requestId
        if (typeof id !== "string" && typeof id !== "number") return Effect.void
        return serverRequests.cancel(id)
      }
      default: {
        if (message.method.startsWith("notifications/")) {
          return PubSub.publish(notifications, message).pipe(Effect.asVoid)
        }
        const published = PubSub.publish(events, message).pipe(Effect.asVoid)
        return eventSink === undefined ? published : Effect.zipRight(eventSink.offer(conn.server, message), published)
      }
    }
  }

  // A transport with the side door (stdio) hands each response to `deliver` from its read
  // callback, unless something it queued earlier is still waiting for the reader: `backlog`
  // counts the messages it queued that the reader has not finished with. (Those queued before
  // the door opened are counted when it opens.) See internal/directDelivery.ts.
  let backlog = 0
  const direct = DirectDelivery.connect(transport, {
    response: (message) => {
      if (backlog > 0) return false
      const entry = pending.get(message.id)
      if (entry === undefined) return false
      requests.deliver(entry, message)
      return true
    },
    queued: () => {
      backlog++
    }
  })
  if (direct) backlog = Option.getOrElse(transport.incoming.unsafeSize(), () => 0)

  const route = (incoming: JsonRpc.Incoming): Effect.Effect<void> => {
    switch (incoming._tag) {
      case "Response": {
        const warning = onResponse(incoming.message)
        return warning === undefined ? Effect.void : log("warning", warning)
      }
      case "Notification":
        return onNotification(incoming.message)
      case "Undelivered":
        return Effect.void
      case "Request":
        return serverRequests.start(incoming.message)
    }
  }

  return Effect.gen(function*() {
    while (true) {
      const [messages, done] = yield* transport.incoming.takeAll
      for (const message of messages) {
        // Responses, the bulk of the traffic, are delivered without an effect step.
        if (message._tag === "Response") {
          const warning = onResponse(message.message)
          if (warning !== undefined) yield* log("warning", warning)
        } else if (message._tag === "Undelivered") {
          requests.undelivered(message.id, message.error)
        } else {
          yield* route(message)
        }
        if (direct && backlog > 0) backlog--
      }
      if (done) return yield* new McpError.McpConnectionClosed({ server: conn.server })
    }
  }).pipe(
    Effect.catchAll(closeWith),
    Effect.onInterrupt(() => closeWith(new McpError.McpConnectionClosed({ server: conn.server })))
  )
}
