/**
 * `@copilotkit/aimock` — a model server we did not write (OpenAI chat-completions and Anthropic
 * messages wire formats) — started on 127.0.0.1 on a free port for the scope, stopped after.
 */
import { LLMock } from "@copilotkit/aimock"
import * as Effect from "effect/Effect"

export const aimock = Effect.acquireRelease(
  Effect.promise(async () => {
    const mock = new LLMock({ port: 0, host: "127.0.0.1" })
    await mock.start()
    return mock
  }),
  (mock) => Effect.promise(() => mock.stop())
)
