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

const TypeId: unique symbol = Symbol.for("@skald/server/agent/llm/StreamParts")

interface WithStreamParts {
  readonly [TypeId]: StreamParts
}

/**
 * `service` with its raw parts attached; `streamParts` gets the provider options `streamText`
 * would give (text response, `auto` tool choice, a span) and returns the provider's parts. The
 * offered tools' names are checked here, and the tracer's span is made per request: with `info`
 * and an installed tracer, the GenAI conventions' `chat <model>` span with the usage, and the
 * model metrics (agent/Telemetry.ts).
 */
export const withStreamParts = (
  service: LanguageModel.Service,
  streamParts: (
    options: LanguageModel.ProviderOptions
  ) => Stream.Stream<Response.StreamPartEncoded, AiError.AiError, IdGenerator.IdGenerator>,
  info?: Telemetry.ModelInfo
): LanguageModel.Service => {
  const raw: StreamParts = (request) =>
    Effect.withFiberRuntime<
      Stream.Stream<Response.StreamPartEncoded, AiError.AiError, IdGenerator.IdGenerator>,
      never,
      Scope.Scope
    >((fiber) => {
      // Under an installed tracer: the conventions' `chat <model>` client span, its usage and the
      // model metrics (agent/Telemetry.ts); the built-in tracer's span otherwise, as before.
      const parts = (span: Tracer.Span) =>
        streamParts({
          prompt: request.prompt,
          tools: request.tools,
          toolChoice: "auto",
          responseFormat: { type: "text" },
          span
        }).pipe(checked(request.tools))
      if (info === undefined || !Span.isTraced(fiber)) {
        return Effect.map(Effect.makeSpanScoped("LanguageModel.streamParts", { captureStackTrace: false }), parts)
      }
      // One finalizer tells the span the outcome (error.type), records the metrics and ends it.
      return Effect.map(
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
        ({ observer, span }) => Stream.tap(parts(span), (part) => Effect.sync(() => observer.observe(part)))
      )
    }).pipe(
      Stream.unwrapScoped,
      Stream.provideServiceEffect(
        IdGenerator.IdGenerator,
        Effect.map(
          Effect.serviceOption(IdGenerator.IdGenerator),
          Option.getOrElse(() => IdGenerator.defaultIdGenerator)
        )
      )
    )
  return withRaw(service, raw)
}

/** `service` with `raw` as its parts, as they are (a wrapper of another model's `of`, e.g. a timing one). */
export const withRaw = (service: LanguageModel.Service, raw: StreamParts): LanguageModel.Service =>
  ({ ...service, [TypeId]: raw }) as LanguageModel.Service

/** Fails a tool call the request did not offer, or whose arguments are not a JSON object. */
const checked = (tools: ReadonlyArray<Tool.Any>) => {
  const names = new Set(tools.map((tool) => tool.name))
  return <E, R>(stream: Stream.Stream<Response.StreamPartEncoded, E, R>) =>
    Stream.mapChunksEffect(stream, (chunk) => {
      for (const part of chunk) {
        if (part.type !== "tool-call" || part.providerExecuted === true) continue
        const problem = !names.has(part.name)
          ? `the model called ${part.name}, a tool it was not given`
          : typeof part.params !== "object" || part.params === null || Array.isArray(part.params)
          ? `the model called ${part.name} with arguments that are not a JSON object: ${JSON.stringify(part.params)}`
          : undefined
        if (problem !== undefined) {
          return Effect.fail(
            new AiError.MalformedOutput({ module: "StreamParts", method: "streamParts", description: problem })
          )
        }
      }
      return Effect.succeed(chunk)
    })
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

/** The model's raw parts when it has them, else the adapter over its `streamText`. */
export const of = (model: LanguageModel.Service): StreamParts =>
  TypeId in model ? (model as unknown as WithStreamParts)[TypeId] : viaStreamText(model)

/** Whether the model hands its parts over without `@effect/ai`'s decode. */
export const isRaw = (model: LanguageModel.Service): boolean => TypeId in model
