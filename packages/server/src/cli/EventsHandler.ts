/**
 * What `skald events` does (its options and help are in Events.ts; this module is loaded when it
 * runs, see Lazy.ts).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { EventRepo } from "../host/EventRepo.js"
import type { EventsArgs } from "./Events.js"
import * as Host from "./HostRuntime.js"
import { stdout } from "./Io.js"
import * as Output from "./Output.js"

/** `skald events`. */
export const events = ({ home, json, limit, pending }: EventsArgs) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const events = yield* (yield* EventRepo).list({
        pending,
        ...(Option.isSome(limit) ? { limit: limit.value } : {})
      })
      if (json) return yield* stdout(Output.json(events))
      if (events.length === 0) return
      yield* stdout(
        events.map((e) =>
          `${e.id}\t${e.receivedAt}\t${e.status}\t${e.server}\t${e.method}\t${JSON.stringify(e.params) ?? ""}`
        ).join("\n")
      )
    })
  )
