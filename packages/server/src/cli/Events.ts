/**
 * `skald events [--json] [--pending]`: the push events servers sent (`mcp_events`).
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { EventRepo } from "../host/EventStore.js"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import { reportFailures, stdout } from "./Io.js"
import * as Output from "./Output.js"

/** `skald events`. */
export const command = Command.make(
  "events",
  {
    json: Options.boolean("json").pipe(Options.withDescription("Print a JSON array of the events.")),
    pending: Options.boolean("pending").pipe(Options.withDescription("Only the events not processed yet.")),
    limit: Options.integer("limit").pipe(Options.withDescription("At most this many (oldest first)."), Options.optional),
    home: Host.home
  },
  ({ home, json, limit, pending }) =>
    Host.run(
      home,
      Effect.gen(function*() {
        const events = yield* (yield* EventRepo).list({ pending, ...(Option.isSome(limit) ? { limit: limit.value } : {}) })
        if (json) return yield* stdout(Output.json(events))
        if (events.length === 0) return
        yield* stdout(
          events.map((e) =>
            `${e.id}\t${e.receivedAt}\t${e.status}\t${e.server}\t${e.method}\t${JSON.stringify(e.params) ?? ""}`
          ).join("\n")
        )
      })
    ).pipe(reportFailures)
).pipe(Command.withDescription(Help.about({
  summary: "List the events MCP servers pushed (oldest first).",
  usage: ["skald events [options]"],
  examples: ["skald events --pending", "skald events --json --limit 10"]
})))
