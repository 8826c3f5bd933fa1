/**
 * Where the RPC handlers get the Agent. The host may run without a model (none configured yet):
 * `layerFromSettings` builds the Agent on first use, from the model settings as they are then,
 * and keeps it; until a model is configured every use fails with `ModelUnavailable`, and the
 * next use tries again (so configuring a model needs no restart). A model changed after that is
 * followed by the Agent's model itself (agent/llm/Model.ts). `layer` wraps an Agent that exists
 * (tests).
 *
 * @since 0.1.0
 */
import { RpcErrors } from "@skald/domain"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { Agent, type Options } from "../agent/Agent.js"
import * as Model from "../agent/llm/Model.js"
import { TicAgent } from "../tic/Tic.js"

/** The Agent, once there is one. */
export interface Service {
  /** The Agent, built now if needed; `ModelUnavailable` when no usable model is configured. */
  readonly get: Effect.Effect<Agent, RpcErrors.ModelUnavailable>
  /** The Agent if it has been built (never builds it). */
  readonly current: Effect.Effect<Option.Option<Agent>>
}

/** The RPC handlers' source of the Agent. */
export class AgentSource extends Context.Tag("@skald/server/rpc/AgentSource")<AgentSource, Service>() {}

/** An Agent that exists. */
export const layer: Layer.Layer<AgentSource, never, Agent> = Layer.effect(
  AgentSource,
  Effect.map(Agent, (agent) => ({ get: Effect.succeed(agent), current: Effect.succeed(Option.some(agent)) }))
)

const agentLayer = (options: Options, tuning: Model.Tuning) =>
  Agent.Default(options).pipe(Layer.provide(Model.layer(tuning)))

/** Builds the Agent on first use from the model settings (retried on the next use while that fails). */
export const layerFromSettings = (
  options: Options = {},
  tuning: Model.Tuning = {}
): Layer.Layer<AgentSource, never, Layer.Layer.Context<ReturnType<typeof agentLayer>>> =>
  Layer.scoped(
    AgentSource,
    Effect.gen(function*() {
      const scope = yield* Effect.scope
      const context = yield* Effect.context<Layer.Layer.Context<ReturnType<typeof agentLayer>>>()
      const lock = yield* Effect.makeSemaphore(1)
      let built: Agent | undefined
      const build = Effect.gen(function*() {
        const child = yield* Scope.fork(scope, ExecutionStrategy.sequential)
        const exit = yield* Layer.buildWithScope(agentLayer(options, tuning), child).pipe(
          Effect.provide(context),
          Effect.exit
        )
        if (Exit.isFailure(exit)) yield* Scope.close(child, exit)
        const got = yield* exit
        built = Context.get(got, Agent)
        return built
      }).pipe(
        Effect.mapError((error) => new RpcErrors.ModelUnavailable({ problem: error.message })),
        Effect.withSpan("AgentSource.build")
      )
      return {
        get: lock.withPermits(1)(Effect.suspend(() => built !== undefined ? Effect.succeed(built) : build)),
        current: Effect.sync(() => Option.fromNullable(built))
      }
    })
  )

/** The TIC's agent (tic/Tic.ts): this source's, so the TIC waits for a model like the handlers do. */
export const ticAgent: Layer.Layer<TicAgent, never, AgentSource> = Layer.effect(
  TicAgent,
  Effect.map(AgentSource, (source) => ({ get: source.get }))
)
