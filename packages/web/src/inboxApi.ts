/**
 * The inbox over the Inbox RPCs: `Inbox.Watch` folded into the pending items (re-subscribed after
 * a reconnect: each subscription starts with the pending items, so the page starts over), and an
 * answer sent with `Inbox.Resolve`.
 */
import type { InboxItem } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { resubscribing } from "./Connection.js"
import { HostClient } from "./HostClient.js"
import { act } from "./serversApi.js"

/**
 * How long a watch the host ended waits before it is subscribed again: a host shutting down ends
 * its inbox's watches some time before it closes the socket, and a subscription sent into the
 * closing socket makes the browser print an error.
 */
const WATCH_PAUSE = "3 seconds"

/** `null`: a fresh subscription (forget what was pending); then the changes. */
export const changes: Stream.Stream<InboxItem.InboxChange | null, never, HostClient> = Stream.unwrap(
  Effect.map(
    HostClient,
    ({ client, state }) =>
      resubscribing(state, Stream.concat(Stream.make(null), client.Inbox.Watch()), undefined, WATCH_PAUSE)
  )
)

/** The pending items, oldest first. */
export const fold = (
  items: ReadonlyArray<InboxItem.InboxItem>,
  change: InboxItem.InboxChange | null
): ReadonlyArray<InboxItem.InboxItem> => {
  if (change === null) return []
  switch (change._tag) {
    case "ItemAdded":
      return [...items.filter((i) => i.id !== change.item.id), change.item]
    case "ItemResolved":
      return items.filter((i) => i.id !== change.id)
  }
}

/** Answers a pending item. */
export const resolve = (id: string, answer: InboxItem.InboxAnswer) =>
  act((client) => client.Inbox.Resolve({ id, answer }))
