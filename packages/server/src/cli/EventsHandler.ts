/**
 * What `skald events` does (its options and help are in Events.ts; this module is loaded when it
 * runs, see Lazy.ts).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { UsageError } from "./CliError.js"
import type { EventsArgs } from "./Events.js"
import { stdout } from "./Io.js"
import * as McpAdmin from "./McpAdmin.js"
import * as Output from "./Output.js"

/** `skald events`: the running host's (`Mcp.Events`) when one runs for the home, else the home's database. */
export const events = ({ json, limit, pending, ...args }: EventsArgs) =>
  Effect.scoped(
    Effect.gen(function*() {
      if (Option.isSome(limit) && limit.value < 1) {
        return yield* new UsageError({ message: `--limit takes a positive number, got ${limit.value}` })
      }
      const admin = yield* McpAdmin.open(args)
      const events = yield* admin.events({ pending, limit: Option.getOrUndefined(limit) })
      if (json) return yield* stdout(Output.json(events))
      if (events.length === 0) return
      yield* stdout(
        events.map((e) =>
          `${e.id}\t${e.receivedAt}\t${e.status}\t${e.server}\t${e.method}\t${JSON.stringify(e.params) ?? ""}`
        ).join("\n")
      )
    })
  )
