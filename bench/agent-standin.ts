/**
 * The agent bench's model stand-in (test/fixtures/model-standin.ts, with bench/agent-script.ts's
 * script) in a worker thread: on an event loop of its own, as a model server in another process
 * is, so what the bench's thread does after it has sent a request (the events' consumer, the
 * rest of its tick) does not delay the stand-in's reading it. The bench asks for the requests'
 * bodies and times (`Ask`); the times cross the threads on the shared clock (`clockOf`).
 */
import { Effect } from "effect"
import { parentPort, workerData } from "node:worker_threads"
import * as ModelStandin from "../test/fixtures/model-standin.js"
import { type Answer, type Ask, clockOf, script, type Seen, type Settings } from "./agent-script.js"

const { base, settings } = workerData as { readonly base: string; readonly settings: Settings }
const clock = clockOf(BigInt(base))
const port = parentPort!

Effect.runFork(Effect.scoped(Effect.gen(function*() {
  const standin = yield* ModelStandin.start(script(settings))
  const seen = (r: ModelStandin.RecordedRequest): Seen => ({
    index: r.index,
    text: r.text,
    timing: {
      arrived: clock.toShared(r.timing.arrived),
      eventsAt: r.timing.eventsAt.map(clock.toShared),
      lastByteAt: r.timing.lastByteAt === undefined ? undefined : clock.toShared(r.timing.lastByteAt)
    }
  })
  port.on("message", (ask: Ask) => {
    // Answered once the first `complete` requests have been answered to their last byte.
    const reply = () => {
      const all = standin.requests
      if (all.length < ask.complete || (ask.complete > 0 && all[ask.complete - 1]!.timing.lastByteAt === undefined)) {
        setTimeout(reply, 1)
        return
      }
      const answer: Answer = {
        type: "requests",
        id: ask.id,
        total: all.length,
        requests: all.slice(ask.from).map(seen)
      }
      port.postMessage(answer)
    }
    reply()
  })
  port.postMessage({ type: "ready", url: standin.url } satisfies Answer)
  yield* Effect.never
})))
