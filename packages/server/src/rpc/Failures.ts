/**
 * The host's own failures (its database, a corrupt row, a file) as the groups' `HostFailure`,
 * and the one place the handlers turn a service error into it.
 *
 * @since 0.1.0
 */
import { RpcErrors } from "@skald/domain"
import * as Effect from "effect/Effect"

/** Any error with a message, as a `HostFailure`. */
export const hostFailure = (error: { readonly message: string }): RpcErrors.HostFailure =>
  new RpcErrors.HostFailure({ problem: error.message })

/** Maps every failure of `effect` to a `HostFailure`. */
export const orHostFailure = <A, E extends { readonly message: string }, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, RpcErrors.HostFailure, R> => Effect.mapError(effect, hostFailure)
