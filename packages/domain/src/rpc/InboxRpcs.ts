/**
 * The inbox over RPC: watch (a stream of changes: first an `ItemAdded` per pending item, then
 * live changes), list the pending items, resolve one with an answer. Every client's watch gets
 * every change; a client that lags further than the host's watch buffer loses the oldest changes
 * it had not read, and resynchronises by watching again (docs/rpc.md, docs/inbox.md).
 *
 * @since 0.1.0
 */
import * as Rpc from "@effect/rpc/Rpc"
import * as RpcGroup from "@effect/rpc/RpcGroup"
import * as Schema from "effect/Schema"
import * as InboxItem from "../InboxItem.js"

/** The pending items, then each change as it happens. */
export const Watch = Rpc.make("Inbox.Watch", {
  success: InboxItem.InboxChange,
  stream: true
})

/** The pending items, oldest first. */
export const List = Rpc.make("Inbox.List", {
  success: Schema.Array(InboxItem.InboxItem)
})

/** Answers a pending item. Content that does not fit an elicitation's form leaves it pending. */
export const Resolve = Rpc.make("Inbox.Resolve", {
  payload: { id: Schema.String, answer: InboxItem.InboxAnswer },
  error: Schema.Union(InboxItem.InboxItemNotFound, InboxItem.InboxAnswerMismatch, InboxItem.InboxAnswerInvalid)
})

/** The inbox's RPCs. */
export class InboxRpcs extends RpcGroup.make(Watch, List, Resolve) {}
