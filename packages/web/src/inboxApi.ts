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

/** `null`: a fresh subscription (forget what was pending); then the changes. */
export const changes: Stream.Stream<InboxItem.InboxChange | null, never, HostClient> = Stream.unwrap(
  Effect.map(
    HostClient,
    ({ client, state }) => resubscribing(state, Stream.concat(Stream.make(null), client.Inbox.Watch()))
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
