/**
 * Answering the inbox from this process's terminal (`skald chat`, `skald agent run`): a fiber
 * watches the Inbox and puts each item it can answer to the person, one at a time, through an
 * `Elicitation.Handler` — `Elicit.terminal` on a TTY (masked fields typed without echo), or
 * `declining` without one (stdin is not a terminal: every elicitation is declined, saying so on
 * stderr). An item resolved elsewhere meanwhile (its deadline, its server's cancel, another
 * client) ends its question. Answers go back through `Inbox.resolve`; nothing typed is printed.
 *
 * Approvals are asked by ApprovalPrompt.ts (in `--approve ask` mode); the two share the terminal
 * one question at a time (TerminalLock.ts).
 *
 * @since 0.1.0
 */
import { InboxItem } from "@skald/domain"
import type { Elicitation } from "@skald/mcp"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Inbox } from "../inbox/Inbox.js"
import { terminal } from "./TerminalLock.js"

const say = (text: string) => Effect.sync(() => void process.stderr.write(`${text}\n`))

/** The terminal around a question: the chat lets go of stdin while one is asked. */
export interface Hooks {
  readonly before: Effect.Effect<void>
  readonly after: Effect.Effect<void>
}

const noHooks: Hooks = { before: Effect.void, after: Effect.void }

/** What the engine asked, again, for a terminal handler (a URL's completion is not seen here). */
export const requestOf = (item: InboxItem.Elicitation): Elicitation.Request =>
  item.mode === "url"
    ? {
      _tag: "Url",
      server: item.origin.server ?? "?",
      message: item.message,
      url: item.url ?? "",
      elicitationId: item.id,
      completed: Effect.never
    }
    : {
      _tag: "Form",
      server: item.origin.server ?? "?",
      message: item.message,
      fields: item.fields,
      confirmation: item.confirmation
    }

/** The inbox answer of a handler's response. */
export const answerOf = (response: Elicitation.Response): InboxItem.InboxAnswer =>
  response.action === "accept"
    ? new InboxItem.Accept(response.content === undefined ? {} : { content: response.content })
    : response.action === "decline"
    ? new InboxItem.Decline()
    : new InboxItem.Cancel()

/** Declines every elicitation, saying on stderr what was asked and why it was declined. */
export const declining: Elicitation.Handler = {
  url: true,
  elicit: (request) =>
    Effect.as(
      say(
        `skald: MCP server '${request.server}' asks: ${request.message}\n` +
          "skald: declined — stdin is not a terminal (run `skald chat` on a terminal to answer)"
      ),
      { action: "decline" }
    )
}

/**
 * What the questions are asked from and answered to: this process's `Inbox`, or the running
 * host's over RPC (AgentViaHost.ts: its changes, filtered to this process's turns).
 */
export interface Source {
  readonly watch: Stream.Stream<InboxItem.InboxChange, unknown>
  readonly resolve: (id: string, answer: InboxItem.InboxAnswer) => Effect.Effect<void, { readonly message: string }>
}

/**
 * Starts answering the inbox's elicitations with `handler`, in the current scope (the fiber ends
 * with it). Items pending when it starts are asked too, oldest first.
 */
export const start = (
  handler: Elicitation.Handler,
  hooks: Hooks = noHooks
): Effect.Effect<void, never, Inbox | Scope.Scope> => Effect.flatMap(Inbox, (inbox) => startOn(inbox, handler, hooks))

/** {@link start} over another source of items (the running host's inbox). */
export const startOn = (
  inbox: Source,
  handler: Elicitation.Handler,
  hooks: Hooks = noHooks
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const waiting = yield* Queue.unbounded<InboxItem.Elicitation>()
    /** Completed when an item is resolved (by anyone): ends its question. */
    const ended = new Map<string, Deferred.Deferred<void>>()
    const endedOf = (id: string) => {
      let done = ended.get(id)
      if (done === undefined) {
        done = Deferred.unsafeMake<void>(FiberId.none)
        ended.set(id, done)
      }
      return done
    }

    yield* inbox.watch.pipe(
      Stream.runForEach((change) => {
        if (change._tag === "ItemAdded") {
          if (change.item._tag !== "Elicitation") return Effect.void
          endedOf(change.item.id)
          return Queue.offer(waiting, change.item)
        }
        const done = ended.get(change.id)
        return done === undefined ? Effect.void : Deferred.succeed(done, undefined)
      }),
      Effect.forkScoped
    )

    const ask = (item: InboxItem.Elicitation) =>
      Effect.gen(function*() {
        const done = endedOf(item.id)
        if (yield* Deferred.isDone(done)) return
        yield* hooks.before
        const answered = yield* Effect.raceFirst(
          Effect.map(handler.elicit(requestOf(item)), (response) => ({ response })),
          Effect.as(Deferred.await(done), undefined)
        ).pipe(Effect.ensuring(hooks.after))
        if (answered === undefined) {
          yield* say("skald: that question is no longer waiting (answered elsewhere, expired or withdrawn)")
          return
        }
        yield* inbox.resolve(item.id, answerOf(answered.response)).pipe(
          Effect.catchAll((error) => say(`skald: ${error.message}`))
        )
      }).pipe(Effect.ensuring(Effect.sync(() => ended.delete(item.id))))

    yield* Queue.take(waiting).pipe(
      Effect.flatMap((item) => terminal.withPermits(1)(ask(item))),
      Effect.forever,
      Effect.forkScoped
    )
  })
