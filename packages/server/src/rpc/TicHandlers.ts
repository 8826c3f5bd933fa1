/**
 * The Tic group's handlers: one tick of the host's TIC (tic/Tic.ts) now; a storage failure is the
 * group's `HostFailure`, a missing model its `ModelUnavailable`.
 *
 * @since 0.1.0
 */
import { TicRpcs } from "@skald/domain"
import * as Effect from "effect/Effect"
import { Tic } from "../tic/Tic.js"
import { hostFailure } from "./Failures.js"

/** The handlers of `TicRpcs`. */
export const layer = TicRpcs.TicRpcs.toLayer(Effect.gen(function*() {
  const tic = yield* Tic
  return TicRpcs.TicRpcs.of({
    "Tic.Run": () =>
      tic.tick.pipe(
        Effect.catchIf(
          (e) => e._tag !== "ModelUnavailable",
          (e) => Effect.fail(hostFailure(e))
        )
      )
  })
}))
