/**
 * The TIC agent over RPC (`skald tic run` through the running host): one tick now — claim a
 * bounded batch of pending events, run the `tic` agent on it, mark it processed when its turn
 * completes — and what it did.
 *
 * @since 0.1.0
 */
import * as Rpc from "@effect/rpc/Rpc"
import * as RpcGroup from "@effect/rpc/RpcGroup"
import * as Schema from "effect/Schema"
import { HostFailure, ModelUnavailable } from "./RpcErrors.js"

/** A notification the tick's turn posted to the inbox. */
export class TicNotified extends Schema.Class<TicNotified>("@skald/domain/rpc/TicNotified")({
  /** The inbox item's id (absent if the answer did not say it). */
  id: Schema.optionalWith(Schema.String, { exact: true }),
  title: Schema.String,
  body: Schema.String
}) {}

/** What one tick did. */
export class TicReport extends Schema.Class<TicReport>("@skald/domain/rpc/TicReport")({
  /**
   * `idle`: no free pending event (none pending, or all held by another turn); `done`: the turn
   * completed and its events are processed; `failed`: the turn did not complete, its events stay pending.
   */
  outcome: Schema.Literal("idle", "done", "failed"),
  /** The ids of the events the tick took (oldest first). */
  claimed: Schema.Array(Schema.Number),
  /** The ids it marked processed. */
  processed: Schema.Array(Schema.Number),
  notified: Schema.Array(TicNotified),
  /** The tick's chat session (absent when idle). */
  sessionId: Schema.optionalWith(Schema.String, { exact: true }),
  /** The agent's final answer. */
  answer: Schema.optionalWith(Schema.String, { exact: true }),
  /** Why the turn did not complete (`failed`). */
  problem: Schema.optionalWith(Schema.String, { exact: true }),
  /** The events still pending after the tick. */
  pending: Schema.Number
}) {}

/** One tick now. */
export const Run = Rpc.make("Tic.Run", {
  success: TicReport,
  error: Schema.Union(ModelUnavailable, HostFailure)
})

/** The TIC agent's RPCs. */
export class TicRpcs extends RpcGroup.make(Run) {}
