/**
 * The TIC agent (docs/events.md, *The TIC agent*): every `SKALD_TIC_INTERVAL` seconds (default
 * 900; 0: never on its own) a tick claims a bounded batch of pending push events (by count and by
 * tokens), runs the `tic` agent (`agents/tic/AGENT.md`) in a new session with the batch as its
 * message, and marks the batch processed once the turn completes. `tick` also runs one on demand
 * (`skald tic run`).
 *
 * At-least-once, never twice at once: the batch is a claim (EventRepo.ts) with a lease, renewed
 * while the turn runs. A turn that fails or is interrupted releases it (the events are free again);
 * a host that dies holds it until the lease runs out, then the next tick — in this host or another
 * process on the same database — takes the events again. Events of a disabled or deleted server are
 * processed like any other.
 *
 * @since 0.1.0
 */
import type { RpcErrors } from "@skald/domain"
import { TicRpcs } from "@skald/domain"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Crypto from "node:crypto"
import { Agent } from "../agent/Agent.js"
import * as Notify from "../agent/tools/Notify.js"
import { EventRepo } from "../host/EventRepo.js"
import type { CorruptRow, DatabaseError } from "../host/HostError.js"
import * as Batch from "./Batch.js"

/** Where the TIC gets the Agent (the host builds it from the model settings on first use). */
export class TicAgent extends Context.Tag("@skald/server/tic/TicAgent")<TicAgent, {
  readonly get: Effect.Effect<Agent, RpcErrors.ModelUnavailable>
}>() {}

/** The Agent in the context as the TIC's. */
export const agentLayer: Layer.Layer<TicAgent, never, Agent> = Layer.effect(
  TicAgent,
  Effect.map(Agent, (agent) => ({ get: Effect.succeed(agent) }))
)

/** The TIC's settings; each absent one comes from its variable. */
export interface Options {
  /** Between ticks (`SKALD_TIC_INTERVAL`, seconds, default 900); zero: no scheduled ticks. */
  readonly interval?: Duration.DurationInput | undefined
  /** Events per batch at most (`SKALD_TIC_BATCH_EVENTS`, default 100). */
  readonly batchEvents?: number | undefined
  /** Tokens of the batch's event lines at most (`SKALD_TIC_BATCH_TOKENS`, default 8,000). */
  readonly batchTokens?: number | undefined
  /** How long a claim holds without renewal (`SKALD_TIC_LEASE`, seconds, default 120); renewed every third of it. */
  readonly lease?: Duration.DurationInput | undefined
  /** The agent (default `tic`). */
  readonly agent?: string | undefined
}

/** The defaults. */
export const defaults = { intervalSeconds: 900, batchEvents: 100, batchTokens: 8000, leaseSeconds: 120 } as const

const seconds = (name: string, fallback: number) =>
  Config.number(name).pipe(
    Config.validate({ message: `${name} is a number of seconds, 0 or more`, validation: (n) => n >= 0 }),
    Config.withDefault(fallback),
    Effect.map((n) => Duration.seconds(n))
  )

const positive = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: `${name} is a whole number, 1 or more`, validation: (n) => n >= 1 }),
    Config.withDefault(fallback)
  )

/** The TIC service. */
export class Tic extends Effect.Service<Tic>()("@skald/server/Tic", {
  scoped: (options: Options = {}) =>
    Effect.gen(function*() {
      const repo = yield* EventRepo
      const source = yield* TicAgent
      const interval = options.interval !== undefined
        ? Duration.decode(options.interval)
        : yield* seconds("SKALD_TIC_INTERVAL", defaults.intervalSeconds)
      const batchEvents = options.batchEvents ?? (yield* positive("SKALD_TIC_BATCH_EVENTS", defaults.batchEvents))
      const batchTokens = options.batchTokens ?? (yield* positive("SKALD_TIC_BATCH_TOKENS", defaults.batchTokens))
      const lease = options.lease !== undefined
        ? Duration.decode(options.lease)
        : yield* seconds("SKALD_TIC_LEASE", defaults.leaseSeconds)
      const leaseMillis = Math.max(1, Duration.toMillis(lease))
      const agentName = options.agent ?? Notify.TIC_AGENT
      // One tick at a time in this process (the claims keep other processes apart).
      const lock = yield* Effect.makeSemaphore(1)

      /** Runs the agent on the claimed batch; the turn's outcome and what it notified. */
      const runTurn = (agent: Agent, message: string) =>
        Effect.gen(function*() {
          let sessionId: string | undefined
          let answer: string | undefined
          let problem: string | undefined
          let completed = false
          const briefings = new Map<string, { readonly briefing: string; readonly title?: string | undefined }>()
          const notified: Array<TicRpcs.TicNotified> = []
          const run = yield* agent.run({ agent: agentName, message }).pipe(
            Stream.runForEach((event) =>
              Effect.sync(() => {
                switch (event._tag) {
                  case "TurnStarted":
                    sessionId = event.sessionId
                    break
                  case "ToolStarted":
                    if (event.name === Notify.NAME) {
                      const args = event.arguments as { briefing?: unknown; title?: unknown }
                      if (typeof args?.briefing === "string") {
                        briefings.set(event.callId, {
                          briefing: args.briefing,
                          title: typeof args.title === "string" ? args.title : undefined
                        })
                      }
                    }
                    break
                  case "ToolDone": {
                    const posted = briefings.get(event.callId)
                    if (event.name === Notify.NAME && event.status === "done" && posted !== undefined) {
                      const id = /notification ([0-9a-f-]+)/.exec(event.result)?.[1]
                      notified.push(TicRpcs.TicNotified.make({
                        ...(id === undefined ? {} : { id }),
                        title: Notify.titleOf(posted.briefing, posted.title),
                        body: posted.briefing.trim()
                      }))
                    }
                    break
                  }
                  case "TurnDone":
                    completed = true
                    answer = event.text
                    break
                  case "TurnFailed":
                    problem = event.message
                    break
                  case "TurnStopped":
                    problem = "the turn was stopped before it completed"
                    break
                }
              })
            ),
            Effect.either
          )
          if (run._tag === "Left") problem = run.left.message
          return { sessionId, answer, problem, completed, notified }
        })

      const tick: Effect.Effect<TicRpcs.TicReport, TicError> = lock.withPermits(1)(Effect.gen(function*() {
        const token = Crypto.randomUUID()
        const events = yield* repo.claim({ token, limit: batchEvents, leaseMillis, cut: Batch.cut(batchTokens) })
        if (events.length === 0) {
          return TicRpcs.TicReport.make({
            outcome: "idle",
            claimed: [],
            processed: [],
            notified: [],
            pending: yield* repo.pendingCount
          })
        }
        const claimed = events.map((e) => e.id)
        return yield* Effect.gen(function*() {
          // The lease is renewed while the turn runs; a host that dies stops renewing it.
          yield* repo.renew(token, leaseMillis).pipe(
            Effect.catchAll((error) => Effect.logWarning(`could not renew the TIC's claim: ${error.message}`)),
            Effect.repeat(Schedule.spaced(Duration.millis(Math.max(1, Math.floor(leaseMillis / 3))))),
            Effect.delay(Duration.millis(Math.max(1, Math.floor(leaseMillis / 3)))),
            Effect.forkScoped
          )
          const waiting = Math.max(0, (yield* repo.pendingCount) - events.length)
          const agent = yield* source.get
          const turn = yield* runTurn(agent, Batch.message(events, batchTokens, waiting))
          const processed = turn.completed ? yield* repo.complete(token) : []
          if (!turn.completed) yield* repo.release(token)
          const report = TicRpcs.TicReport.make({
            outcome: turn.completed ? "done" : "failed",
            claimed,
            processed,
            notified: turn.notified,
            ...(turn.sessionId === undefined ? {} : { sessionId: turn.sessionId }),
            ...(turn.answer === undefined ? {} : { answer: turn.answer }),
            ...(turn.problem === undefined ? {} : { problem: turn.problem }),
            pending: yield* repo.pendingCount
          })
          yield* Effect.logInfo(
            `TIC: ${report.outcome}, ${claimed.length} events, ${processed.length} processed, ` +
              `${report.notified.length} notified, ${report.pending} pending`
          )
          return report
        }).pipe(
          Effect.scoped,
          // Failed or interrupted before the end: the events are free again at once.
          Effect.onError(() => repo.release(token).pipe(Effect.ignore))
        )
      }))

      if (Duration.toMillis(interval) > 0) {
        yield* Effect.sleep(interval).pipe(
          Effect.zipRight(
            tick.pipe(Effect.catchAllCause((cause) => Effect.logWarning("the TIC's tick failed", cause)))
          ),
          Effect.forever,
          Effect.forkScoped
        )
      }

      return { tick, interval, batchEvents, batchTokens, leaseMillis } as const
    })
}) {}

/** Why a tick could not run (a failed turn is a `failed` report, not an error). */
export type TicError = DatabaseError | CorruptRow | RpcErrors.ModelUnavailable
