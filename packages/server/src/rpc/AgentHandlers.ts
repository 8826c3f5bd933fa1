/**
 * The Agent group's handlers: thin over the Agent (its detached turns and their logs) and the
 * ChatStore; the services' errors become the group's.
 *
 * - `Send` begins a detached turn (Agent.start) and streams its log from index 0: the client
 *   going away ends only its stream, never the turn.
 * - `Attach` streams the session's running or last turn from an index.
 * - A slow client reads the turn's log at its own pace (the RPC's acks pace the stream); one
 *   further behind than the log keeps gets `TurnEventsLost` and can attach again from the
 *   earliest kept index (docs/rpc.md).
 *
 * @since 0.1.0
 */
import { AgentRpcs, RpcErrors } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { Agent, RunError } from "../agent/Agent.js"
import { ChatStore, type Session, type StoredMessage } from "../agent/ChatStore.js"
import * as History from "../agent/History.js"
import * as PromptCommands from "../agent/PromptCommands.js"
import type * as TurnLog from "../agent/TurnLog.js"
import { McpManager } from "../host/McpManager.js"
import { AgentSource } from "./AgentSource.js"
import { hostFailure, orHostFailure } from "./Failures.js"

const runError = (error: RunError) => {
  switch (error._tag) {
    case "SessionBusy":
      return new RpcErrors.SessionBusy({ sessionId: error.sessionId })
    case "UnknownSession":
      return new RpcErrors.SessionNotFound({ sessionId: error.sessionId })
    case "UnknownAgent":
      return new RpcErrors.AgentNotFound({ agent: error.agent, reason: error.reason })
    default:
      return hostFailure(error)
  }
}

const lost = (sessionId: string) => (error: TurnLog.EventsLost) =>
  new RpcErrors.TurnEventsLost({ sessionId, fromIndex: error.fromIndex, firstKept: error.firstKept })

const infoOf = (session: Session, running: boolean) =>
  AgentRpcs.SessionInfo.make({
    id: session.id,
    agent: session.agent,
    ...(session.title === undefined ? {} : { title: session.title }),
    ...(session.parent === undefined ? {} : { parent: session.parent }),
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    running
  })

const messageOf = (m: StoredMessage) =>
  AgentRpcs.StoredMessage.make({
    seq: m.seq,
    role: m.role,
    text: m.text,
    createdAt: m.createdAt,
    calls: m.calls.map((c) =>
      AgentRpcs.StoredCall.make({
        callId: c.callId,
        name: c.name,
        arguments: c.arguments,
        status: c.status,
        ...(c.result === undefined ? {} : { result: c.result }),
        resultType: c.resultType,
        mediaUrls: c.result === undefined ? [] : History.mediaUrls(c.result)
      })
    )
  })

/** The handlers of `AgentRpcs`. */
export const layer = AgentRpcs.AgentRpcs.toLayer(Effect.gen(function*() {
  const source = yield* AgentSource
  const store = yield* ChatStore
  const manager = yield* McpManager
  const busy = (sessionId: string) =>
    Effect.flatMap(
      source.current,
      Option.match({ onNone: () => Effect.succeed(false), onSome: (agent: Agent) => agent.isBusy(sessionId) })
    )
  return AgentRpcs.AgentRpcs.of({
    "Agent.Send": (input) =>
      Stream.unwrap(Effect.gen(function*() {
        const agent = yield* source.get
        const { sessionId } = yield* agent.start(input).pipe(Effect.mapError(runError))
        const events = yield* agent.attach(sessionId, 0).pipe(
          Effect.mapError(() => new RpcErrors.HostFailure({ problem: "the turn's events could not be read" }))
        )
        return Stream.mapError(events, lost(sessionId))
      })),
    "Agent.Stop": ({ sessionId }) =>
      Effect.flatMap(source.current, (agent) =>
        Option.isNone(agent)
          ? Effect.succeed({ stopped: false })
          : Effect.map(agent.value.stop(sessionId), (stopped) => ({ stopped }))),
    "Agent.Attach": ({ fromIndex = 0, sessionId }) =>
      Stream.unwrap(Effect.gen(function*() {
        const agent = yield* source.current
        if (Option.isNone(agent)) return yield* new RpcErrors.TurnNotFound({ sessionId })
        const events = yield* agent.value.attach(sessionId, fromIndex).pipe(
          Effect.mapError(() => new RpcErrors.TurnNotFound({ sessionId }))
        )
        return Stream.mapError(events, lost(sessionId))
      })),
    "Agent.Sessions": () =>
      Effect.gen(function*() {
        const sessions = yield* orHostFailure(store.listSessions)
        return yield* Effect.forEach(sessions, (s) => Effect.map(busy(s.id), (running) => infoOf(s, running)))
      }),
    "Agent.History": ({ sessionId }) =>
      Effect.gen(function*() {
        const found = yield* orHostFailure(store.getSession(sessionId))
        if (Option.isNone(found)) return yield* new RpcErrors.SessionNotFound({ sessionId })
        const messages = yield* orHostFailure(store.history(sessionId))
        const subs = yield* orHostFailure(store.subSessions(sessionId))
        return AgentRpcs.SessionHistory.make({
          session: infoOf(found.value, yield* busy(sessionId)),
          messages: messages.map(messageOf),
          ...(subs.length === 0 ? {} : { subAgents: subs.map((sub) => infoOf(sub, false)) })
        })
      }),
    "Agent.Command": ({ line }) =>
      orHostFailure(PromptCommands.run(line).pipe(Effect.provideService(McpManager, manager))),
    "Agent.DeleteSession": ({ sessionId }) =>
      Effect.gen(function*() {
        if (yield* busy(sessionId)) return yield* new RpcErrors.SessionBusy({ sessionId })
        if (!(yield* orHostFailure(store.removeSession(sessionId)))) {
          return yield* new RpcErrors.SessionNotFound({ sessionId })
        }
      })
  })
}))
