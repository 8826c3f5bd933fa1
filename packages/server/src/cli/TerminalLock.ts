/**
 * One question on the terminal at a time: the approval question (ApprovalPrompt.ts) and an
 * elicitation's fields (InboxPrompt.ts) are asked by different fibers of the same process, and
 * both read stdin; each holds this permit while it asks.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"

/** The process's terminal (one per process, as stdin is). */
export const terminal: Effect.Semaphore = Effect.unsafeMakeSemaphore(1)
