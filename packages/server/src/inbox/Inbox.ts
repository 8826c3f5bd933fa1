/**
 * The inbox: the live requests waiting for a person — approvals, elicitations, notifications.
 * Items live in memory (each is someone waiting: a host restart ends them); how each one ended
 * goes to the outcome log (InboxLog.ts), never what was answered.
 *
 * Every item is resolved exactly once, whichever comes first: an answer (`resolve`), its deadline
 * (`expired`), or its asker going away — the waiting fiber interrupted, e.g. a stopped turn or a
 * server's `notifications/cancelled` (`withdrawn`). All changes happen under one lock, so the
 * pending set, the answer given to the asker, the one `ItemResolved` and the one log row agree.
 *
 * @since 0.1.0
 */
import { InboxItem } from "@skald/domain"
import { Elicitation as McpElicitation } from "@skald/mcp"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import { InboxLog, rowOf } from "./InboxLog.js"

type Posted<A> = Omit<A, "_tag" | "id" | "createdAt" | "deadline">

/** What `ask` posts: an approval or an elicitation, without its id and times. */
export type AskInput =
  | ({ readonly _tag: "Approval" } & Posted<InboxItem.Approval>)
  | ({ readonly _tag: "Elicitation" } & Posted<InboxItem.Elicitation>)

/** What `notify` posts. */
export type NotifyInput = Posted<InboxItem.Notification>

/** Options of `ask`. */
export interface AskOptions {
  /** How long the person has; then the item resolves `expired` (none: it waits until answered or withdrawn). */
  readonly deadline?: Duration.DurationInput | undefined
}

/**
 * How many changes a watcher may fall behind. The changes are a sliding `PubSub`: a watcher that
 * lags more than this loses the oldest changes it has not read (never blocking the inbox or the
 * other watchers); it resynchronises by watching again (or `list`).
 */
export const WATCH_BUFFER = 1024

interface Entry {
  readonly item: InboxItem.InboxItem
  /** The asker's answer (a notification's is never awaited). */
  readonly answer: Deferred.Deferred<InboxItem.InboxAnswer>
}

/** What an item's asker gets when it expires or is withdrawn. */
const fallbackOf = (item: InboxItem.InboxItem): InboxItem.InboxAnswer =>
  item._tag === "Approval"
    ? new InboxItem.Deny()
    : item._tag === "Elicitation"
    ? new InboxItem.Cancel()
    : new InboxItem.Dismiss()

const expectedOf = (kind: InboxItem.Kind): string => {
  const names = InboxItem.answersOf[kind]
  return names.length === 1 ? names[0]! : `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}`
}

/**
 * The answer an elicitation is given, checked against its form (defaults filled in), or why it does
 * not fit (field names and problems only). URL mode takes only consent: content is dropped.
 */
const checkAccept = (
  item: InboxItem.Elicitation,
  answer: InboxItem.Accept
): Either.Either<InboxItem.Accept, InboxItem.InboxAnswerInvalid> => {
  if (item.mode === "url") return Either.right(new InboxItem.Accept({}))
  return Either.match(McpElicitation.validate(item.fields, answer.content), {
    onLeft: (problem) => Either.left(new InboxItem.InboxAnswerInvalid({ id: item.id, problem })),
    onRight: (content) => Either.right(new InboxItem.Accept({ content }))
  })
}

/** The inbox service. */
export class Inbox extends Effect.Service<Inbox>()("@skald/server/Inbox", {
  accessors: true,
  dependencies: [InboxLog.Default],
  scoped: Effect.gen(function*() {
    const log = yield* InboxLog
    const lock = yield* Effect.makeSemaphore(1)
    const pending = new Map<string, Entry>()
    const changes = yield* PubSub.sliding<InboxItem.InboxChange>(WATCH_BUFFER)
    const locked = lock.withPermits(1)

    /**
     * Ends the item `id` with `outcome`, giving its asker `answer`, if it is still pending: the one
     * place an item ends. Returns whether it did (false: it had already ended).
     */
    const finish = (id: string, outcome: InboxItem.Outcome, answer?: InboxItem.InboxAnswer) =>
      Effect.uninterruptible(Effect.gen(function*() {
        const ended = yield* locked(Effect.gen(function*() {
          const entry = pending.get(id)
          if (entry === undefined) return undefined
          pending.delete(id)
          yield* Deferred.succeed(entry.answer, answer ?? fallbackOf(entry.item))
          yield* PubSub.publish(changes, new InboxItem.ItemResolved({ id, outcome }))
          return entry.item
        }))
        if (ended === undefined) return false
        const now = yield* Clock.currentTimeMillis
        yield* log.record(rowOf(ended, outcome, now)).pipe(
          Effect.catchAll((error) =>
            Effect.logWarning(`the inbox could not log how item ${id} ended: ${error.message}`)
          )
        )
        return true
      }))

    const post = (item: InboxItem.InboxItem) =>
      Effect.flatMap(Deferred.make<InboxItem.InboxAnswer>(), (answer) =>
        locked(Effect.gen(function*() {
          pending.set(item.id, { item, answer })
          yield* PubSub.publish(changes, new InboxItem.ItemAdded({ item }))
          return answer
        })))

    const newId = Effect.sync(() => crypto.randomUUID())

    const ask = Effect.fn("Inbox.ask")(function*(input: AskInput, options?: AskOptions) {
      const id = yield* newId
      const createdAt = yield* Clock.currentTimeMillis
      const wait = options?.deadline === undefined ? undefined : Duration.decode(options.deadline)
      const deadline = wait === undefined ? undefined : createdAt + Duration.toMillis(wait)
      const { _tag, ...fields } = input
      const times = { id, createdAt, ...(deadline === undefined ? {} : { deadline }) }
      const item: InboxItem.InboxItem = input._tag === "Approval"
        ? new InboxItem.Approval({ ...(fields as Posted<InboxItem.Approval>), ...times })
        : new InboxItem.Elicitation({ ...(fields as Posted<InboxItem.Elicitation>), ...times })
      return yield* Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const answer = yield* post(item)
          const answered = Deferred.await(answer)
          const waiting = wait === undefined
            ? answered
            : Effect.race(
              answered,
              Effect.zipRight(Effect.sleep(wait), Effect.zipRight(finish(id, "expired"), answered))
            )
          return yield* restore(waiting).pipe(
            // The asker went away. Past the deadline (a caller's own timer firing with ours) it expired.
            Effect.onInterrupt(() =>
              Effect.flatMap(
                Clock.currentTimeMillis,
                (now) => finish(id, deadline !== undefined && now >= deadline ? "expired" : "withdrawn")
              )
            )
          )
        })
      )
    })

    const notify = Effect.fn("Inbox.notify")(function*(input: NotifyInput) {
      const id = yield* newId
      const createdAt = yield* Clock.currentTimeMillis
      yield* post(new InboxItem.Notification({ ...input, id, createdAt }))
      return id
    })

    const resolve = Effect.fn("Inbox.resolve")(function*(id: string, answer: InboxItem.InboxAnswer) {
      const outcome = InboxItem.outcomeOf(answer)
      // Checked and taken under the lock: an answer that does not fit leaves the item pending.
      const taken = yield* locked(Effect.gen(function*() {
        const entry = pending.get(id)
        if (entry === undefined) return yield* new InboxItem.InboxItemNotFound({ id })
        const item = entry.item
        if (!InboxItem.answersOf[item._tag].includes(answer._tag)) {
          return yield* new InboxItem.InboxAnswerMismatch({ id, expected: expectedOf(item._tag) })
        }
        if (item._tag === "Elicitation" && answer._tag === "Accept") return yield* checkAccept(item, answer)
        return answer
      }))
      // Another resolution may have come between the check and here: then this answer is too late.
      if (!(yield* finish(id, outcome, taken))) return yield* new InboxItem.InboxItemNotFound({ id })
    })

    const list: Effect.Effect<ReadonlyArray<InboxItem.InboxItem>> = locked(
      Effect.sync(() => [...pending.values()].map((entry) => entry.item))
    )

    // Subscribed and listed under the lock: no change falls between the snapshot and the live ones.
    const watch: Stream.Stream<InboxItem.InboxChange> = Stream.unwrapScoped(
      locked(Effect.gen(function*() {
        const subscription = yield* PubSub.subscribe(changes)
        const snapshot = [...pending.values()].map((entry) => new InboxItem.ItemAdded({ item: entry.item }))
        return Stream.concat(Stream.fromIterable(snapshot), Stream.fromQueue(subscription))
      }))
    )

    // The host closing withdraws what is still pending (askers still waiting get their fallback).
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(
        Effect.forEach([...pending.keys()], (id) => finish(id, "withdrawn"), { discard: true }),
        PubSub.shutdown(changes)
      )
    )

    return { ask, notify, list, resolve, watch } as const
  })
}) {}
