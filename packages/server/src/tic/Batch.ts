/**
 * A TIC batch as the `tic` agent reads it: one line per event (id, received at, server, method,
 * params JSON), bounded by tokens (gpt-tokenizer's o200k count: close enough for any provider's
 * budget). The cut keeps the oldest events that fit; the first one is always taken (else it would
 * block the queue forever), its line cut to the budget when it alone is over it.
 *
 * @since 0.1.0
 */
import { countTokens, decode, encode } from "gpt-tokenizer"
import type { StoredEvent } from "../host/EventRepo.js"

/** An event's line. */
export const lineOf = (event: StoredEvent): string =>
  `[${event.id}] ${event.receivedAt} ${event.server} ${event.method} ${JSON.stringify(event.params) ?? "null"}`

/** A line cut to at most `budget` tokens, with a note when it was cut. */
export const fitLine = (line: string, budget: number): string => {
  const tokens = encode(line)
  if (tokens.length <= budget) return line
  const note = ` …[cut: ${tokens.length - budget} more tokens]`
  return decode(tokens.slice(0, Math.max(1, budget - countTokens(note)))) + note
}

/** How many of `events` (a prefix) fit `budget` tokens: at least one when there is one. */
export const cut = (budget: number) => (events: ReadonlyArray<StoredEvent>): number => {
  let used = 0
  let n = 0
  for (const event of events) {
    used += countTokens(lineOf(event)) + 1
    if (used > budget && n > 0) break
    n++
  }
  return n
}

/** The turn's message for a batch, saying how many more events wait. */
export const message = (events: ReadonlyArray<StoredEvent>, budget: number, waiting: number): string => {
  const first = events[0]?.id
  const last = events[events.length - 1]?.id
  const head = `Pending events: ${events.length} (oldest first, ids ${first}–${last})` +
    (waiting > 0 ? `; ${waiting} more wait for the next tick.` : ".")
  const lines = events.map((e) => fitLine(lineOf(e), budget))
  return [head, "Each line: [id] received-at server method params.", "", ...lines].join("\n")
}
