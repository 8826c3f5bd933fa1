/**
 * Helpers for the agent's tests: the turn loop over a real manager (a temp home, fixture servers)
 * and a scripted model, and the check that a history is one a provider accepts.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import type { McpServerEntry } from "@skald/domain"
import type { TurnEvent } from "@skald/domain"
import type { McpManager } from "@skald/server"
import { Agent } from "@skald/server/agent/Agent"
import type { Options as AgentOptions } from "@skald/server/agent/Agent"
import { ChatStore } from "@skald/server/agent/ChatStore"
import * as Approvals from "@skald/server/inbox/Approvals"
import { Inbox } from "@skald/server/inbox/Inbox"
import { Chunk, Context, Effect, Layer, Schema, Stream } from "effect"
import { makeHome, startManager, waitForState } from "../host-support.js"
import * as Scripted from "./scripted-model.js"

/** The loop over a fresh home's manager with `servers` connected and a model playing `script`. */
export const startAgent = (
  servers: ReadonlyArray<McpServerEntry.McpServerEntry>,
  script: ReadonlyArray<Scripted.Round>,
  options: Options = {},
  managerOptions: Partial<McpManager.Options> = {}
) =>
  Effect.gen(function*() {
    const home = makeHome()
    const { context, manager } = yield* startManager(home, managerOptions)
    yield* Effect.forEach(servers, (entry) => Effect.orDie(manager.register(entry)), { discard: true })
    yield* Effect.forEach(servers, (entry) => waitForState(manager, entry.name, "connected"), { discard: true })
    const agent = yield* agentOver(context, script, options)
    return { ...agent, manager, home }
  })

/** The loop's options, and the approval gate's (default mode `allow`: no person is asked). */
export type Options = AgentOptions & { readonly approvals?: Approvals.Options | undefined }

/** The loop over an existing manager's context (its database) and a model playing `script`. */
export const agentOver = <R>(
  context: Context.Context<R>,
  script: ReadonlyArray<Scripted.Round>,
  options: Options = {}
) =>
  Effect.gen(function*() {
    const model = yield* Scripted.make(script)
    const { approvals = { mode: "allow" }, ...agentOptions } = options
    // The loop's mechanics are tested with every connected server's tools offered (lazy loading's
    // own tests, test/agent-lazy.test.ts, pass `alwaysOffered: []`).
    const layer = Agent.Default({ alwaysOffered: "all", ...agentOptions }).pipe(
      Layer.provideMerge(ChatStore.Default),
      Layer.provideMerge(Approvals.Approvals.Default(approvals).pipe(Layer.provideMerge(Inbox.Default))),
      Layer.provide(Layer.succeed(LanguageModel.LanguageModel, model.service)),
      Layer.provide(Layer.succeedContext(context))
    )
    const built = yield* Layer.build(layer)
    return {
      agent: Context.get(built, Agent),
      store: Context.get(built, ChatStore),
      inbox: Context.get(built, Inbox),
      model
    }
  })

/** All the events of a turn. */
export const events = <E>(stream: Stream.Stream<TurnEvent.TurnEvent, E>) =>
  Stream.runCollect(stream).pipe(Effect.map(Chunk.toArray))

const encodeMessages = Schema.encodeSync(Schema.Array(Prompt.Message))

/** The messages, encoded (plain data: compares with deepStrictEqual). */
export const encoded = (messages: ReadonlyArray<Prompt.Message>): ReadonlyArray<Prompt.MessageEncoded> =>
  encodeMessages(messages)
