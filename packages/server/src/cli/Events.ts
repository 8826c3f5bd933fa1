/**
 * `skald events [--json] [--pending]`: the push events servers sent (`mcp_events`). The command
 * and its options; what it does is in EventsHandler.ts.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import * as Lazy from "./Lazy.js"

const eventsConfig = {
  json: Options.boolean("json").pipe(Options.withDescription("Print a JSON array of the events.")),
  pending: Options.boolean("pending").pipe(Options.withDescription("Only the events not processed yet.")),
  limit: Options.integer("limit").pipe(Options.withDescription("At most this many (oldest first)."), Options.optional),
  home: Host.home,
  verbose: Host.verbose
}

/** What `skald events` parsed. */
export type EventsArgs = Command.Command.ParseConfig<typeof eventsConfig>

/** `skald events`. */
export const command = Command.make(
  "events",
  eventsConfig,
  Lazy.handler(() => import("./EventsHandler.js"), (m) => m.events)
).pipe(
  Command.withDescription(Help.about({
    summary: "List the events MCP servers pushed (oldest first).",
    usage: ["skald events [options]"],
    examples: ["skald events --pending", "skald events --json --limit 10"]
  }))
)
