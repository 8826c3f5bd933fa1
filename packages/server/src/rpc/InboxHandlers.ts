/**
 * The Inbox group's handlers: thin over the Inbox service (its errors are the group's own). Each
 * client's `Watch` is its own subscription to the inbox's sliding changes (inbox/Inbox.ts
 * `WATCH_BUFFER`): a slow client loses its oldest unread changes, never blocking the inbox or
 * the other clients.
 *
 * @since 0.1.0
 */
import { InboxRpcs } from "@skald/domain"
import * as Effect from "effect/Effect"
import { Inbox } from "../inbox/Inbox.js"

/** The handlers of `InboxRpcs`. */
export const layer = InboxRpcs.InboxRpcs.toLayer(Effect.gen(function*() {
  const inbox = yield* Inbox
  return InboxRpcs.InboxRpcs.of({
    "Inbox.Watch": () => inbox.watch,
    "Inbox.List": () => inbox.list,
    "Inbox.Resolve": ({ answer, id }) => inbox.resolve(id, answer)
  })
}))
