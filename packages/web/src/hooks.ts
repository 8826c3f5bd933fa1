/**
 * React over Effect: the page's one `ManagedRuntime` runs every effect and stream; components
 * read streams and run actions through these hooks, which interrupt what they started
 * when the component goes away (or its inputs change).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { type DependencyList, useCallback, useEffect, useState } from "react"

/** Any runtime of the page (its services vary by what is built in). */
export type AnyRuntime<R> = ManagedRuntime.ManagedRuntime<R, never>

/**
 * Folds a stream into state while the component lives (or until `deps` change, which starts a
 * fresh fold from `initial`). A failure is kept as `error` (the stream ends there).
 */
export const useStreamFold = <A, S, E, R>(
  runtime: AnyRuntime<R>,
  make: () => Stream.Stream<A, E, R>,
  initial: S,
  step: (state: S, a: A) => S,
  deps: DependencyList
): { readonly state: S; readonly error: E | undefined } => {
  const [value, setValue] = useState<{ state: S; error: E | undefined }>({ state: initial, error: undefined })
  useEffect(() => {
    setValue({ state: initial, error: undefined })
    const fiber = runtime.runFork(
      Stream.runForEach(
        make(),
        (a) => Effect.sync(() => setValue((v) => ({ state: step(v.state, a), error: undefined })))
      )
    )
    fiber.addObserver((exit) => {
      if (Exit.isFailure(exit) && !Exit.isInterrupted(exit)) {
        const failure = Option.getOrUndefined(Cause.failureOption(exit.cause))
        if (failure !== undefined) setValue((v) => ({ state: v.state, error: failure }))
      }
    })
    return () => void runtime.runFork(Fiber.interrupt(fiber))
    // `make` and `step` are read when `deps` change, as the caller declares.
  }, [runtime, ...deps])
  return value
}

/**
 * An action the user triggers (a button): `run(effect)` runs it, `pending` while it runs, and
 * its failure's message kept as `error` until the next run.
 */
export const useAction = <R>(runtime: AnyRuntime<R>) => {
  const [pending, setPending] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  const run = useCallback(<A, E>(effect: Effect.Effect<A, E, R>) => {
    setPending(true)
    setError(undefined)
    runtime.runFork(effect).addObserver((exit) => {
      setPending(false)
      if (Exit.isFailure(exit) && !Exit.isInterrupted(exit)) {
        const error = Cause.squash(exit.cause)
        setError(error instanceof Error ? error.message : String(error))
      }
    })
  }, [runtime])
  return { run, pending, error } as const
}
