/**
 * The composition root of `skald serve` (DESIGN §1): the one place the serve process's layers are
 * put together. From one home: the host's services (database, repositories, secret store, logs,
 * events, registration; HostServices.ts), the HTTP endpoints, the first run's demo server, the
 * inbox (its servers' elicitations and sampling approvals go there), the host's sampling
 * (sampling/HostSampling.ts), the MCP manager over all of them, the TIC agent's ticks over the
 * pushed events (tic/Tic.ts), and the RPC server at
 * `/rpc` (rpc/RpcServer.ts: the agent, built on first use from the model settings, the inbox, MCP
 * administration, the host's settings), recorded in the home once it answers (host/HostAddress.ts) so
 * the home's CLI reaches it. `skald serve` (cli/ServeHandler.ts) provides this layer and waits;
 * closing it stops every server.
 *
 * The order is part of the contract: the HTTP endpoint listens first, so a taken port stops the
 * host before any server starts, and the manager learns the address its media links point to; the
 * first run's demo server is registered before the manager reads the registry. `/rpc` answers 503
 * until the manager and the handlers are up (a moment after listening).
 *
 * @since 0.1.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as Agent from "./agent/Agent.js"
import { ChatStore } from "./agent/ChatStore.js"
import { ModelSettings } from "./agent/llm/ModelSettings.js"
import * as AppMetaRepo from "./host/AppMetaRepo.js"
import * as FirstRun from "./host/FirstRun.js"
import * as HostAddress from "./host/HostAddress.js"
import * as HostServices from "./host/HostServices.js"
import * as HttpEndpoints from "./host/HttpEndpoints.js"
import * as McpManager from "./host/McpManager.js"
import { Paths } from "./host/Paths.js"
import * as Approvals from "./inbox/Approvals.js"
import { Inbox } from "./inbox/Inbox.js"
import * as AgentSource from "./rpc/AgentSource.js"
import { HostInfo } from "./rpc/HostHandlers.js"
import * as RpcServer from "./rpc/RpcServer.js"
import * as HostSampling from "./sampling/HostSampling.js"
import * as Tic from "./tic/Tic.js"

/** What `skald serve` runs with. */
export interface Options {
  /** The home given on the command line (else `SKALD_HOME`, else `.`; Paths.ts). */
  readonly home: Option.Option<string>
  /** Where the HTTP endpoints listen. */
  readonly host: string
  readonly port: number
  readonly startTimeout: Duration.Duration
  readonly callTimeout: Duration.Duration
  /** The access token RPC clients present (required for a non-loopback `host`; docs/rpc.md). */
  readonly token?: Redacted.Redacted<string> | undefined
  /** The version the Host group reports (default "unknown"). */
  readonly version?: string | undefined
  /** The agent's settings (tests shorten them). */
  readonly agent?: Agent.Options | undefined
  /** The TIC agent's settings (default: from the SKALD_TIC_* variables; tic/Tic.ts). */
  readonly tic?: Tic.Options | undefined
  /** How long a person has to answer a server's elicitation in the inbox (default 5 min). */
  readonly elicitationDeadline?: Duration.Duration | undefined
  /** The servers' sampling through the host's model (limits, approval deadline; mode `ask`). */
  readonly sampling?: HostSampling.Options | undefined
  /** Told the endpoint's URL once it listens, before any server starts. */
  readonly onListening?: ((url: string) => Effect.Effect<void>) | undefined
  /** Told the demo server's name when the very first run of the home registered it. */
  readonly onFirstRun?: ((name: string) => Effect.Effect<void>) | undefined
}

/**
 * The serve process: the host's services of the home with the HTTP endpoints listening and the
 * MCP manager running. Everything it starts is stopped when the layer's scope closes.
 */
export const layer = (options: Options) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const services = HostServices.layer(Paths.Default(options.home))
    const listening = yield* Deferred.make<string>()
    type RpcApp = HttpApp.Default<never, Scope.Scope | HttpServerRequest.HttpServerRequest>
    const rpcApp = yield* Deferred.make<RpcApp>()
    const rpcRoute: RpcApp = Effect.flatMap(
      Deferred.poll(rpcApp),
      Option.match({
        onNone: () => Effect.succeed(HttpServerResponse.text("the host is starting; try again\n", { status: 503 })),
        onSome: Effect.flatten
      })
    )
    const http = HttpEndpoints.layer(
      {
        host: options.host,
        port: options.port,
        token: options.token,
        rpc: rpcRoute,
        rpcAuth: RpcServer.authStatus(options.token)
      },
      (url) => Effect.zipRight(Deferred.succeed(listening, url), options.onListening?.(url) ?? Effect.void)
    )
    const firstRun = Layer.effectDiscard(
      Effect.flatMap(FirstRun.ensure, (registered) =>
        Option.isSome(registered) && options.onFirstRun !== undefined
          ? options.onFirstRun(registered.value)
          : Effect.void)
    ).pipe(Layer.provide(AppMetaRepo.layer))
    const manager = Layer.unwrapEffect(
      Effect.map(Deferred.await(listening), (url) =>
        McpManager.McpManager.Default({
          startTimeout: options.startTimeout,
          callTimeout: options.callTimeout,
          elicitationDeadline: options.elicitationDeadline,
          mediaBaseUrl: url
        }))
    ).pipe(
      Layer.provide(firstRun),
      Layer.provide(http),
      // The servers' sampling requests are asked in the inbox, then answered by the host's model.
      Layer.provide(HostSampling.layer({ mode: "ask", ...options.sampling }))
    )
    const info = Layer.effect(
      HostInfo,
      Effect.map(Deferred.await(listening), (url) => ({
        version: options.version ?? "unknown",
        bindHost: options.host,
        port: Number(new URL(url).port),
        tokenRequired: options.token !== undefined
      }))
    )
    const rpc = Layer.scopedDiscard(
      Effect.flatMap(RpcServer.httpApp(options.token), (app) => Deferred.succeed(rpcApp, app)).pipe(
        // Once /rpc answers, the home's clients can find the host (data/host.json, removed on exit).
        Effect.zipRight(Effect.flatMap(Deferred.await(listening), HostAddress.record))
      )
    ).pipe(
      Layer.provide(RpcServer.handlers),
      // The TIC ticks with the agent the RPC handlers use (built on first use from the model settings).
      Layer.provide(Layer.mergeAll(Tic.Tic.Default(options.tic).pipe(Layer.provide(AgentSource.ticAgent)), info)),
      Layer.provideMerge(AgentSource.layerFromSettings(options.agent)),
      Layer.provideMerge(Layer.mergeAll(ChatStore.Default, ModelSettings.Default)),
      // The agent's tool calls pass the approval rules; a call that asks waits in the inbox for an
      // RPC client (the web UI, `skald inbox`) to answer, and is refused at the deadline.
      Layer.provideMerge(Approvals.Approvals.Default({ mode: "ask" }))
    )
    // The inbox outlives the manager: its servers' elicitations are withdrawn before it closes.
    return rpc.pipe(Layer.provideMerge(manager), Layer.provideMerge(Inbox.Default), Layer.provideMerge(services))
  }))
