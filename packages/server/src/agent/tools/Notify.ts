/**
 * `notify(briefing)` — the `tic` agent's one way to reach the person: posts a Notification to the
 * inbox (inbox/Inbox.ts; its RPC watch, `skald inbox` and the web UI show it). Offered only to the
 * agent named `tic` (TIC_AGENT); the title is the given one, else the briefing's first line.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Inbox } from "../../inbox/Inbox.js"
import { decode, type Definition } from "./ToolInput.js"

/** The tool's name. */
export const NAME = "notify"

/** The agent it is offered to. */
export const TIC_AGENT = "tic"

/** Its definition. */
export const definition: Definition = {
  name: NAME,
  description: "Post a briefing to the person's inbox: what happened and what they should do. " +
    "Use it only when the person should act or know now; one briefing may cover several events.",
  inputSchema: {
    type: "object",
    properties: {
      briefing: { type: "string", minLength: 1, description: "The briefing, in a few short lines." },
      title: { type: "string", description: "A short title (default: the briefing's first line)." }
    },
    required: ["briefing"],
    additionalProperties: false
  }
}

const Arguments = Schema.Struct({
  briefing: Schema.String.pipe(Schema.filter((s) => s.trim().length > 0, { message: () => "an empty briefing" })),
  title: Schema.optionalWith(Schema.String, { exact: true })
})

/** A title of at most 80 characters: the given one, else the briefing's first line. */
export const titleOf = (briefing: string, title?: string): string => {
  const line = (title ?? "").trim().length > 0 ? title!.trim() : (briefing.trim().split("\n")[0] ?? "").trim()
  return line.length <= 80 ? line : `${line.slice(0, 79)}…`
}

/** Runs a call from the session `sessionId`; the answer says the notification's id. */
export const run = Effect.fn("notify")(function*(
  args: unknown,
  origin: { readonly sessionId: string; readonly callId: string }
) {
  const { briefing, title } = yield* decode(NAME, Arguments, args)
  const id = yield* (yield* Inbox).notify({
    title: titleOf(briefing, title),
    body: briefing.trim(),
    origin: { sessionId: origin.sessionId, tool: NAME, callId: origin.callId }
  })
  return `Posted to the inbox (notification ${id}).`
})
