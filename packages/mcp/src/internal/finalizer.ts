/**
 * Finalizers for the per-request path. `Effect.addFinalizer` and `Effect.acquireRelease` run their
 * finalizer with the fiber refs of the moment it was added: at the scope's close they diff every
 * fiber ref twice and patch them twice (FiberRefsPatch), which costs more than closing a request
 * (0.18 ms of an agent round's 2 ms, docs/performance.md). A finalizer that reads nothing of its
 * fiber (abort a request, release a response) needs none of it: these add it to the scope as it is.
 */
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"

/**
 * Adds `finalizer` to the current scope, run when it closes (with the fiber refs of the fiber
 * closing it). For a finalizer that reads no fiber ref (no service, no log annotation, no span).
 */
export const add = (finalizer: Effect.Effect<unknown>): Effect.Effect<void, never, Scope.Scope> =>
  Effect.flatMap(Scope.Scope, (scope) => Scope.addFinalizer(scope, finalizer))

/** `Effect.acquireRelease` with a release that reads no fiber ref (`add`). */
export const acquireRelease = <A, E, R>(
  acquire: Effect.Effect<A, E, R>,
  release: (a: A) => Effect.Effect<unknown>
): Effect.Effect<A, E, R | Scope.Scope> => Effect.uninterruptible(Effect.tap(acquire, (a) => add(release(a))))
