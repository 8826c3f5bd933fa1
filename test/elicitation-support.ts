/**
 * Test ElicitationHandlers: a scripted handler whose answer each test sets, and the common answers.
 */
import type { Elicitation } from "@skald/mcp"
import { Effect } from "effect"

/** How a scripted handler answers a request. */
export type Answer = (request: Elicitation.Request) => Effect.Effect<Elicitation.Response>

/** A handler whose answer each test sets; it keeps every request it was asked. */
export const scripted = (url: boolean, initial: Answer = () => Effect.succeed({ action: "decline" })) => {
  const state = {
    requests: [] as Array<Elicitation.Request>,
    answer: initial,
    /** Forgets earlier requests and answers with `answer` from now on. */
    reset: (answer: Answer) => {
      state.requests.length = 0
      state.answer = answer
    }
  }
  const handler: Elicitation.Handler = {
    url,
    elicit: (request) =>
      Effect.suspend(() => {
        state.requests.push(request)
        return state.answer(request)
      })
  }
  return { state, handler }
}

/** `accept`, with content when given. */
export const accept = (content?: Record<string, unknown>): Effect.Effect<Elicitation.Response> =>
  Effect.succeed(content === undefined ? { action: "accept" } : { action: "accept", content })

/** `decline`. */
export const decline: Effect.Effect<Elicitation.Response> = Effect.succeed({ action: "decline" })

/** `cancel`. */
export const cancel: Effect.Effect<Elicitation.Response> = Effect.succeed({ action: "cancel" })
