/**
 * Hosted elicitation: the `ElicitationHandler` of the servers the host runs. Each `elicitation/create`
 * becomes an inbox item (`Elicitation`) that a person answers wherever they watch the inbox (the
 * chat's terminal, the RPC server's clients); the answer goes back to the server. Values pass
 * through in memory only: the inbox logs that the item was answered and how, nothing else.
 *
 * The person's deadline is the inbox item's (default 5 minutes): it ends the item `expired` and
 * answers `cancel`. The engine's own user deadline is set a little later, as a backstop.
 * A server's `notifications/cancelled` for the request interrupts the handler: the item is
 * `withdrawn`.
 *
 * @since 0.1.0
 */
import type { InboxItem } from "@skald/domain"
import type { Elicitation } from "@skald/mcp"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { Inbox } from "./Inbox.js"

/** How long a person has to answer a hosted server's elicitation, unless configured. */
export const DEFAULT_DEADLINE = Duration.minutes(5)

/** How much later than the person's deadline the engine gives up on its own (a backstop). */
export const ENGINE_BACKSTOP = Duration.seconds(1)

/** The engine's user deadline for a person's deadline. */
export const engineDeadline = (deadline: Duration.DurationInput): Duration.Duration =>
  Duration.sum(Duration.decode(deadline), ENGINE_BACKSTOP)

/** The inbox item a server's request becomes (what is asked, never an answer). */
export const itemOf = (request: Elicitation.Request) =>
  request._tag === "Form"
    ? {
      _tag: "Elicitation" as const,
      origin: { server: request.server },
      mode: "form" as const,
      message: request.message,
      fields: request.fields,
      confirmation: request.confirmation
    }
    : {
      _tag: "Elicitation" as const,
      origin: { server: request.server },
      mode: "url" as const,
      message: request.message,
      fields: [],
      confirmation: false,
      url: request.url
    }

/** The MCP answer of an inbox answer (an elicitation only takes Accept, Decline or Cancel). */
export const responseOf = (answer: InboxItem.InboxAnswer): Elicitation.Response =>
  answer._tag === "Accept"
    ? answer.content === undefined ? { action: "accept" } : { action: "accept", content: answer.content }
    : answer._tag === "Decline"
    ? { action: "decline" }
    : { action: "cancel" }

/** The handler posting to `inbox`, with the person's `deadline`. Handles both modes. */
export const make = (
  inbox: Inbox,
  deadline: Duration.DurationInput = DEFAULT_DEADLINE
): Elicitation.Handler => ({
  url: true,
  elicit: (request) => Effect.map(inbox.ask(itemOf(request), { deadline }), responseOf)
})
