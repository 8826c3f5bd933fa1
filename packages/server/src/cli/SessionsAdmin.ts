/**
 * `skald sessions list|show|rm`'s two paths behind one interface (docs/rpc.md *The CLI as a
 * client*): the running host's Agent group (`Sessions`, `History`, `DeleteSession`) when a
 * `skald serve` runs for the home, else the home's chat store in this process. Both give the
 * sessions and messages in the chat store's shape, so the handlers (AgentHandlers.ts) print them
 * once; an unknown session is the same error on both paths.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { ChatStore, Session } from "../agent/ChatStore.js"
import type { CallRow } from "../agent/History.js"
import { UsageError } from "./CliError.js"
import * as HostPath from "./HostPath.js"
import * as Host from "./HostRuntime.js"
import * as RpcHost from "./RpcHost.js"

/** A message as `sessions show` prints it. */
export interface Message {
  readonly seq: number
  readonly role: string
  readonly text: string
  readonly createdAt: string
  readonly calls: ReadonlyArray<CallRow>
}

/** A session as `sessions show` prints it: its messages, and the sub-agent sessions it dispatched. */
export interface Shown {
  readonly session: Session
  readonly messages: ReadonlyArray<Message>
  readonly subAgents: ReadonlyArray<Session>
}

/** What the commands ask, whichever path answers. */
export interface Sessions {
  readonly list: Effect.Effect<ReadonlyArray<Session>, unknown>
  readonly show: (id: string) => Effect.Effect<Shown, unknown>
  readonly remove: (id: string) => Effect.Effect<void, unknown>
}

/** No session has that id (both paths). */
export const noSession = (id: string) =>
  new UsageError({ message: `no chat session has the id ${id}; see \`skald sessions list\`` })

const messageOf = (m: Message): Message => ({
  seq: m.seq,
  role: m.role,
  text: m.text,
  createdAt: m.createdAt,
  calls: m.calls.map((c) => ({
    callId: c.callId,
    name: c.name,
    arguments: c.arguments,
    status: c.status,
    result: c.result,
    resultType: c.resultType
  }))
})

/** The home's chat store in this process. */
const local = Effect.map(ChatStore, (store): Sessions => ({
  list: store.listSessions,
  show: (id) =>
    Effect.gen(function*() {
      const found = yield* store.getSession(id)
      if (Option.isNone(found)) return yield* noSession(id)
      const messages = yield* store.history(id)
      const subAgents = yield* store.subSessions(id)
      return { session: found.value, messages: messages.map(messageOf), subAgents }
    }),
  remove: (id) =>
    Effect.flatMap(store.removeSession(id), (removed) => removed ? Effect.void : Effect.fail(noSession(id)))
}))

const sessionOf = (
  s: { id: string; agent: string; title?: string; parent?: string; createdAt: string; updatedAt: string }
) =>
  Session.make({
    id: s.id,
    agent: s.agent,
    ...(s.title === undefined ? {} : { title: s.title }),
    ...(s.parent === undefined ? {} : { parent: s.parent }),
    createdAt: s.createdAt,
    updatedAt: s.updatedAt
  })

/** The running host's sessions, over its RPC. */
const viaHost = ({ client, url }: HostPath.Host): Sessions => {
  const call = <A, E>(effect: Effect.Effect<A, E>) =>
    effect.pipe(
      RpcHost.reaching(url),
      Effect.mapError((e: unknown) =>
        typeof e === "object" && e !== null && "_tag" in e && e._tag === "SessionNotFound"
          ? noSession((e as unknown as { sessionId: string }).sessionId)
          : e
      )
    ) as Effect.Effect<A, unknown>
  return {
    list: Effect.map(call(client.Agent.Sessions()), (all) => all.map(sessionOf)),
    show: (sessionId) =>
      Effect.map(call(client.Agent.History({ sessionId })), (history) => ({
        session: sessionOf(history.session),
        messages: history.messages.map((m) =>
          messageOf({ ...m, calls: m.calls.map((c) => ({ ...c, result: c.result })) })
        ),
        subAgents: (history.subAgents ?? []).map(sessionOf)
      })),
    remove: (sessionId) => call(client.Agent.DeleteSession({ sessionId }))
  }
}

/** The sessions for this command: the running host's when one runs for the home, else the home's in this process. */
export const open = (
  args: { readonly home: Option.Option<string>; readonly verbose: boolean }
): Effect.Effect<Sessions, unknown, Scope.Scope> =>
  Effect.flatMap(
    HostPath.choose(args.home, { verbose: args.verbose }),
    Option.match({
      onSome: (host) => Effect.succeed(viaHost(host)),
      onNone: () =>
        Effect.flatMap(
          Layer.build(ChatStore.Default.pipe(Layer.provide(Host.layer(args.home)))),
          (context) => Effect.provide(local, context)
        )
    })
  )
