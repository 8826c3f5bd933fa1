/**
 * `skald tic run [--json]`: one tick of the TIC agent now (docs/events.md, *The TIC agent*) — in
 * the home's running host when there is one (its RPC), else in this process. The command and its
 * options; what it does is in TicHandlers.ts.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import * as Lazy from "./Lazy.js"

const runConfig = {
  json: Options.boolean("json").pipe(Options.withDescription("Print the tick's report as JSON.")),
  home: Host.home
}

/** What `skald tic run` parsed. */
export type RunArgs = Command.Command.ParseConfig<typeof runConfig>

const run = Command.make("run", runConfig, Lazy.handler(() => import("./TicHandlers.js"), (m) => m.run)).pipe(
  Command.withDescription(Help.about({
    summary: "Run one tick now: the tic agent reads a batch of pending events and notifies the inbox when needed.",
    details: [
      "In the running host (`skald serve` of this home) when there is one, else in this process with the model " +
      "from the settings. Prints the events processed and the notifications posted.",
      "Exit status 2 when the turn did not complete (its events stay pending for the next tick)."
    ],
    usage: ["skald tic run [options]"],
    examples: ["skald tic run", "skald tic run --json"]
  }))
)

/** `skald tic …`. */
export const command = Command.make("tic").pipe(
  Command.withDescription(Help.about({
    summary: "The TIC agent, which turns the events MCP servers push into briefings in the inbox.",
    usage: ["skald tic run [options]"],
    examples: ["skald tic run"]
  })),
  Command.withSubcommands([run])
)
