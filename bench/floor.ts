/**
 * The floor under a call at 256 in flight, with no engine, JSON or pipe: 256 workers each waiting
 * for an answer that a `setImmediate` loop hands out, as a Promise (`await new Promise(…)`) and as
 * an Effect (`yield* Effect.async(…)`, bare and with each public way of running code when the
 * wait is interrupted — what the engine needs to abandon a request). Prints client CPU µs per
 * call: `node build/root/bench/floor.js` (pin it with `taskset -c 0` to compare with the bench). Each
 * variant runs in a process of its own: once several shapes of effect have gone through Effect's
 * run loop, V8's code for it is slower for all of them.
 * docs/performance.md, issue 28's round five.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as ChildProcess from "node:child_process"
import { fileURLToPath } from "node:url"

const calls = Number(process.env.BENCH_FLOOR_CALLS ?? 500_000)
const inFlight = 256
const cpu = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}

let waiting: Array<(answer: Exit.Exit<number>) => void> = []
let pumping = true
const pump = () => {
  const due = waiting
  waiting = []
  for (const resume of due) resume(Exit.succeed(1))
  if (pumping) setImmediate(pump)
}

const onStop = (_entry?: number) => {
  // What `abandon` would do: only the shape matters here.
  waiting.length
}

const waiters = new WeakMap<Fiber.RuntimeFiber<any, any>, { slot: { entry: number }; wait: Effect.Effect<number> }>()

/** The engine's structure (internal/requests.ts, awaitAnswer): `stop` runs when the wait is interrupted. */
const engineWait = (stop: () => void) =>
  Effect.uninterruptible(
    Effect.catchAllCause(
      Effect.interruptible(Effect.async<number>((resume) => void waiting.push(resume))),
      (cause) => {
        if (Cause.isInterruptedOnly(cause)) stop()
        return Effect.failCause(cause)
      }
    )
  )

const waits: Record<string, () => Effect.Effect<number>> = {
  "Effect.async, bare": () => Effect.async<number>((resume) => void waiting.push(resume)),
  "uninterruptible(catchAllCause(interruptible(async)))": () => engineWait(onStop),
  // What callTool runs since round six: the same structure, looked up by the fiber
  // (`withFiberRuntime`) and built once per fiber, the request handed over in a slot.
  "the same, built once per fiber": () =>
    Effect.withFiberRuntime((fiber) => {
      let waiter = waiters.get(fiber)
      if (waiter === undefined) {
        const slot = { entry: 0 }
        waiter = { slot, wait: engineWait(() => onStop(slot.entry)) }
        waiters.set(fiber, waiter)
      }
      waiter.slot.entry++
      return waiter.wait
    }),
  // The same structure built per call, behind the same `withFiberRuntime` (round five's callTool).
  "the same, built per call behind withFiberRuntime": () => Effect.withFiberRuntime(() => engineWait(onStop)),
  "uninterruptibleMask(catchAllCause(restore(async)))": () =>
    Effect.uninterruptibleMask((restore) =>
      Effect.catchAllCause(restore(Effect.async<number>((resume) => void waiting.push(resume))), (cause) => {
        if (Cause.isInterruptedOnly(cause)) onStop()
        return Effect.failCause(cause)
      })
    ),
  "Effect.async with a canceller": () =>
    Effect.async<number>((resume) => {
      waiting.push(resume)
      return Effect.sync(onStop)
    }),
  "Effect.onInterrupt(async)": () =>
    Effect.onInterrupt(Effect.async<number>((resume) => void waiting.push(resume)), () => Effect.sync(onStop))
}

const runEffect = (wait: () => Effect.Effect<number>, total: number) => {
  let next = 0
  const worker = Effect.gen(function*() {
    while (next < total) {
      next++
      if ((yield* wait()) !== 1) throw new Error("wrong answer")
    }
  })
  return Effect.runPromise(
    Effect.all(Array.from({ length: inFlight }, () => worker), { concurrency: "unbounded", discard: true })
  )
}

const runPromise = async (total: number) => {
  let next = 0
  const worker = async () => {
    while (next < total) {
      next++
      const answer = await new Promise<number>((resolve) => waiting.push(() => resolve(1)))
      if (answer !== 1) throw new Error("wrong answer")
    }
  }
  await Promise.all(Array.from({ length: inFlight }, worker))
}

const measure = async (name: string, run: (total: number) => Promise<void>) => {
  await run(100_000)
  const start = cpu()
  await run(calls)
  console.log(`${((cpu() - start) / calls).toFixed(2).padStart(6)} µs/call  ${name}`)
}

const variant = process.argv[2]
if (variant === undefined) {
  for (const name of ["Promise", ...Object.keys(waits)]) {
    ChildProcess.execFileSync(process.execPath, [fileURLToPath(import.meta.url), name], { stdio: "inherit" })
  }
} else {
  setImmediate(pump)
  const wait = waits[variant]
  await measure(variant, wait === undefined ? runPromise : (total) => runEffect(wait, total))
  pumping = false
}
