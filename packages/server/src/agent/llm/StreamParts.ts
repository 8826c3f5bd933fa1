/**
 * The model's answer as the stream parts a provider builds, without `@effect/ai`'s per-request
 * schema: `LanguageModel.streamText` builds `Response.StreamPart(toolkit)` anew on every request
 * and decodes every chunk with it (1.5 ms for 5 tools, 37 ms for 50, docs/performance.md), which
 * the turn loop, reading only a few fields of each part, does not need.
 *
 * A provider that can hand its parts over attaches `streamParts` to the `LanguageModel` service it
 * makes (`withStreamParts`): it stays a `LanguageModel` for everything else (embedders, tests,
 * `generateText`), and the loop finds the raw path with `of(model)`. Any other `LanguageModel`
 * gets the adapter over `streamText` (the decoded parts have the same fields).
 *
 * What the schema's decode checked that the loop relies on is checked here: a tool call naming a
 * tool the request did not offer, or whose arguments are not a JSON object, is `MalformedOutput`
 * (the loop asks the model again with a note).
 *
 * The parts are pulled (`Open`, `Pull`), not streamed: a request is opened in a scope and each pull
 * gives its next parts. Every `Stream` stage costs a channel executor, and a stream's end runs
 * through each stage's teardown; a round's answer passed through about eight of them (the retry,
 * the checks, the span, the services, the body), which was ~1.8 ms of the loop's time per round
 * (docs/performance.md, *Run G*). `of` still gives the parts as a `Stream` (tests, benches, embedders).
 *
 * @since 0.1.0
 */
import * as AiError from "@effect/ai/AiError"
import * as IdGenerator from "@effect/ai/IdGenerator"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as Span from "@skald/mcp/internal/span"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Tracer from "effect/Tracer"
import * as Telemetry from "../Telemetry.js"

/** What the loop asks: the prompt (already built values) and the tools offered. */
export interface Request {
  readonly prompt: Prompt.Prompt
  readonly tools: ReadonlyArray<Tool.Any>
}

/** A part as the loop reads it: a provider's encoded part, or `streamText`'s decoded one (the same fields). */
export type Part = Response.StreamPartEncoded | Response.AnyPart

/** A model's parts for a request. */
export type StreamParts = (request: Request) => Stream.Stream<Part, AiError.AiError>

/** The next parts of an opened request (possibly none yet), or `undefined` once it has ended. */
export type Pull<A = Part> = Effect.Effect<ReadonlyArray<A> | undefined, AiError.AiError>

/**
 * Opens a request: its pull, live while the scope is open. Closing the scope before the end
 * aborts the request (the server sees the connection close).
 */
export type Open = (request: Request) => Effect.Effect<Pull, AiError.AiError, Scope.Scope>

const TypeId: unique symbol = Symbol.for("@skald/server/agent/llm/StreamParts")

interface WithOpen {
  readonly [TypeId]: Open
}

/** A pull as a stream (one stage). */
export const toStream = <A>(pull: Pull<A>): Stream.Stream<A, AiError.AiError> =>
  Stream.repeatEffectChunkOption(
    Effect.matchEffect(pull, {
      onFailure: (error) => Effect.fail(Option.some(error)),
      onSuccess: (parts) =>
        parts === undefined ? Effect.fail(Option.none()) : Effect.succeed(Chunk.unsafeFromArray(parts))
    })
  )

/** A stream's parts as a pull, in the current scope. */
export const fromStream = <A>(stream: Stream.Stream<A, AiError.AiError>): Effect.Effect<Pull<A>, never, Scope.Scope> =>
  Effect.map(Stream.toPull(stream), (pull) =>
    Effect.matchEffect(pull, {
      onFailure: Option.match({ onNone: () => Effect.succeed(undefined), onSome: Effect.fail }),
      onSuccess: (chunk) => Effect.succeed(Chunk.toReadonlyArray(chunk))
    }))

/**
 * Runs `f` on each part of the answer to `request`, in order; the request's scope closes when
 * the answer has ended (or `f` failed, or the fiber was interrupted: the request is aborted).
 */
export const runForEach = <E, R>(
  open: Open,
  request: Request,
  f: (part: Part) => Effect.Effect<void, E, R>
): Effect.Effect<void, AiError.AiError | E, R> =>
  Effect.scoped(Effect.flatMap(open(request), (pull) =>
    Effect.gen(function*() {
      for (;;) {
        const parts = yield* pull
        if (parts === undefined) return
        for (const part of parts) yield* f(part)
      }
    })))

/**
 * `service` with its raw parts attached; `open` gets the provider options `streamText` would
 * give (text response, `auto` tool choice, a span) and returns the provider's pull. The offered
 * tools' names are checked here, and the tracer's span is made per request: with `info` and an
 * installed tracer, the GenAI conventions' `chat <model>` span with the usage, and the model
 * metrics (agent/Telemetry.ts).
 */
export const withPulls = (
  service: LanguageModel.Service,
  open: (
    options: LanguageModel.ProviderOptions
  ) => Effect.Effect<Pull<Response.StreamPartEncoded>, AiError.AiError, Scope.Scope>,
  info?: Telemetry.ModelInfo
): LanguageModel.Service => {
  const raw: Open = (request) =>
    Effect.withFiberRuntime<Pull, AiError.AiError, Scope.Scope>((fiber) => {
      const names = namesOf(request.tools)
      const opened = (span: Tracer.Span, observe?: (part: Response.StreamPartEncoded) => void) =>
        Effect.map(
          open({
            prompt: request.prompt,
            tools: request.tools,
            toolChoice: "auto",
            responseFormat: { type: "text" },
            span
          }),
          (pull): Pull =>
            Effect.flatMap(pull, (parts) => {
              if (parts === undefined) return Effect.succeed(parts)
              const problem = unreadable(names, parts)
              if (problem !== undefined) return Effect.fail(problem)
              if (observe !== undefined) { for (const part of parts) observe(part) }
              return Effect.succeed(parts)
            })
        )
      // Under the built-in tracer (which exports nothing) the provider is given a span that nothing
      // ends: no finalizer in the request's scope. Under an installed one: the conventions' `chat
      // <model>` client span, its usage and the model metrics (agent/Telemetry.ts), or without
      // `info` a plain span for the request.
      if (!Span.isTraced(fiber)) {
        return Effect.flatMap(Effect.makeSpan("LanguageModel.streamParts", { captureStackTrace: false }), opened)
      }
      if (info === undefined) {
        return Effect.flatMap(
          Effect.makeSpanScoped("LanguageModel.streamParts", { captureStackTrace: false }),
          (span) => opened(span)
        )
      }
      // One finalizer tells the span the outcome (error.type), records the metrics and ends it.
      return Effect.flatMap(
        Effect.acquireRelease(
          Effect.flatMap(Clock.currentTimeNanos, (started) =>
            Effect.map(
              Effect.makeSpan(`chat ${info.model}`, {
                kind: "client",
                captureStackTrace: false,
                attributes: Telemetry.chatAttributes(info)
              }),
              (span) => ({ span, observer: Telemetry.chatObserver(info, span, started) })
            )),
          ({ observer, span }, exit) =>
            Effect.zipRight(
              observer.end(exit),
              Effect.map(Clock.currentTimeNanos, (now) => span.end(now, exit))
            )
        ),
        ({ observer, span }) => opened(span, observer.observe)
      )
    })
  return withOpen(service, raw)
}

/**
 * `service` with its raw parts attached as a stream per request (`withPulls` for a provider that
 * pulls); the stream gets an `IdGenerator` (the one in context, else @effect/ai's default).
 */
export const withStreamParts = (
  service: LanguageModel.Service,
  streamParts: (
    options: LanguageModel.ProviderOptions
  ) => Stream.Stream<Response.StreamPartEncoded, AiError.AiError, IdGenerator.IdGenerator>,
  info?: Telemetry.ModelInfo
): LanguageModel.Service =>
  withPulls(service, (options) =>
    Effect.flatMap(
      Effect.map(
        Effect.serviceOption(IdGenerator.IdGenerator),
        Option.getOrElse(() => IdGenerator.defaultIdGenerator)
      ),
      (ids) => fromStream(Stream.provideService(streamParts(options), IdGenerator.IdGenerator, ids))
    ), info)

/** `service` with `open` as its parts, as they are (a wrapper of another model's `openOf`, e.g. a timing one). */
export const withOpen = (service: LanguageModel.Service, open: Open): LanguageModel.Service =>
  ({ ...service, [TypeId]: open }) as LanguageModel.Service

/** `service` with `raw` as its parts, as they are (a wrapper of another model's `of`). */
export const withRaw = (service: LanguageModel.Service, raw: StreamParts): LanguageModel.Service =>
  withOpen(service, (request) => fromStream(raw(request)))

/** The offered tools' names, kept while the list lives (the loop offers one list while its tools stay). */
const offeredNames = new WeakMap<ReadonlyArray<Tool.Any>, ReadonlySet<string>>()
const namesOf = (tools: ReadonlyArray<Tool.Any>): ReadonlySet<string> => {
  let names = offeredNames.get(tools)
  if (names === undefined) {
    names = new Set(tools.map((tool) => tool.name))
    offeredNames.set(tools, names)
  }
  return names
}

/** Why a tool call of `parts` cannot be used: a tool not offered, or arguments that are not a JSON object. */
const unreadable = (
  names: ReadonlySet<string>,
  parts: ReadonlyArray<Response.StreamPartEncoded>
): AiError.MalformedOutput | undefined => {
  for (const part of parts) {
    if (part.type !== "tool-call" || part.providerExecuted === true) continue
    const problem = !names.has(part.name)
      ? `the model called ${part.name}, a tool it was not given`
      : typeof part.params !== "object" || part.params === null || Array.isArray(part.params)
      ? `the model called ${part.name} with arguments that are not a JSON object: ${JSON.stringify(part.params)}`
      : undefined
    if (problem !== undefined) {
      return new AiError.MalformedOutput({ module: "StreamParts", method: "streamParts", description: problem })
    }
  }
  return undefined
}

/** The adapter for a `LanguageModel` without raw parts: `streamText` with the tools, calls unresolved. */
const viaStreamText = (model: LanguageModel.Service): StreamParts => (request) => {
  const tools: Record<string, Tool.Any> = {}
  for (const tool of request.tools) tools[tool.name] = tool
  const toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> = {
    tools,
    handle: () => Effect.dieMessage("tool calls are not resolved here")
  }
  return model.streamText({ prompt: request.prompt, toolkit, disableToolCallResolution: true }) as Stream.Stream<
    Part,
    AiError.AiError
  >
}

/** The model's raw parts, pulled, when it has them, else the adapter over its `streamText`. */
export const openOf = (model: LanguageModel.Service): Open =>
  TypeId in model
    ? (model as unknown as WithOpen)[TypeId]
    : (request) => fromStream(viaStreamText(model)(request))

/** The model's raw parts as a stream when it has them, else the adapter over its `streamText`. */
export const of = (model: LanguageModel.Service): StreamParts =>
  TypeId in model
    ? (request) => Stream.unwrapScoped(Effect.map((model as unknown as WithOpen)[TypeId](request), toStream))
    : viaStreamText(model)

/** Whether the model hands its parts over without `@effect/ai`'s decode. */
export const isRaw = (model: LanguageModel.Service): boolean => TypeId in model
