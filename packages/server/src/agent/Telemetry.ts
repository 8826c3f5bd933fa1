/**
 * The agent's spans and metrics (docs/telemetry.md), after the OpenTelemetry GenAI conventions
 * (semantic-conventions-genai, `docs/gen-ai/gen-ai-spans.md`, `gen-ai-agent-spans.md`,
 * `gen-ai-metrics.md`; status: development): one trace per turn — `invoke_agent <agent>` → one
 * `agent round` span per model round → the model request (`chat <model>`, made in StreamParts.ts)
 * and each tool execution (`execute_tool <tool>`, the MCP `tools/call` client span under it).
 *
 * As in @skald/mcp's internal/span.ts, nothing is made under Effect's built-in tracer: each helper
 * looks at the fiber's tracer once and runs the body as it is when none is installed, so the loop
 * costs the same without telemetry. The metrics (`gen_ai.client.operation.duration`,
 * `gen_ai.client.token.usage`, `skald.agent.active_turns`) are recorded under an installed tracer
 * only (TelemetrySdk.ts installs one, sampling nothing, when only metrics are exported).
 *
 * Content (tool arguments and results) is recorded only when `SKALD_OTEL_RECORD_CONTENT=true`,
 * each value redacted of every secret the host knows (host/Redactor.ts) and cut to `CONTENT_CAP`
 * characters.
 *
 * @since 0.1.0
 */
import * as Span from "@skald/mcp/internal/span"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type * as Tracer from "effect/Tracer"

/** The variable that turns content recording on. */
export const RECORD_CONTENT = "SKALD_OTEL_RECORD_CONTENT"

/** A recorded content attribute is cut to this many characters (with a note). */
export const CONTENT_CAP = 4096

/** Whether `SKALD_OTEL_RECORD_CONTENT` asks for content (false when unset; a value that is not a boolean warns). */
export const recordContent: Effect.Effect<boolean> = Config.boolean(RECORD_CONTENT).pipe(
  Config.withDefault(false),
  Effect.catchAll(() =>
    Effect.as(
      Effect.logWarning(`${RECORD_CONTENT} is not true or false: tool arguments and results are not recorded`),
      false
    )
  )
)

/** `gen_ai.client.operation.duration`: seconds of a model request, until its last part (the conventions' buckets). */
export const operationDuration = Metric.histogram(
  "gen_ai.client.operation.duration",
  MetricBoundaries.fromIterable([
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92
  ]),
  "GenAI operation duration (seconds)"
)

/** `gen_ai.client.token.usage`: tokens of a model request, by `gen_ai.token.type` (`input` / `output`). */
export const tokenUsage = Metric.histogram(
  "gen_ai.client.token.usage",
  MetricBoundaries.fromIterable([
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864
  ]),
  "Number of input and output tokens used"
)

/** `skald.agent.active_turns`: the agent turns running (an up-down counter; no convention names one). */
export const activeTurns = Metric.counter("skald.agent.active_turns", {
  description: "Agent turns running in this process",
  incremental: false
})

/** The conventions' `error.type` of a failure: the error's tag, `cancelled` for an interruption. */
export const errorType = (cause: Cause.Cause<unknown>): string => {
  if (Cause.isInterruptedOnly(cause)) return "cancelled"
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure) && Predicate.isRecord(failure.value) && typeof failure.value._tag === "string") {
    return failure.value._tag
  }
  return "_OTHER"
}

/** `body` under a span named `name` (its parent the current span), or as it is under the built-in tracer. */
export const traced = <A, E, R>(
  name: string,
  attributes: () => Record<string, unknown>,
  body: (span: Tracer.Span | undefined) => Effect.Effect<A, E, R>,
  kind: Tracer.SpanKind = "internal"
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) =>
    Span.isTraced(fiber)
      ? Effect.useSpan(
        name,
        { kind, captureStackTrace: false, attributes: attributes() },
        (span) =>
          Effect.onExit(Effect.withParentSpan(body(span), span), (exit) => {
            if (Exit.isFailure(exit)) span.attribute("error.type", errorType(exit.cause))
            return Effect.void
          })
      )
      : body(undefined)
  )

/**
 * An agent's turn (a root agent's, or a sub-agent's under its `dispatch_agent` tool span):
 * `invoke_agent <agent>` with the conversation (the chat session) and the agent's name. A root
 * turn is counted in `skald.agent.active_turns` while it runs.
 */
export const turn = <A, E, R>(
  sessionId: string,
  agent: string,
  root: boolean,
  body: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  traced(
    `invoke_agent ${agent}`,
    () => ({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": agent,
      "gen_ai.conversation.id": sessionId,
      "chat.session": sessionId
    }),
    (span) =>
      span === undefined || !root
        ? body
        : Effect.acquireUseRelease(
          Metric.increment(activeTurns),
          () => body,
          () => Metric.incrementBy(activeTurns, -1)
        )
  )

/**
 * Tells the current turn's span (inside `turn`'s body) the `error.type` of a turn that failed:
 * the loop reports a failure as its `TurnFailed` event, so the span's effect itself succeeds.
 */
export const turnFailed = (type: string): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) =>
    Span.isTraced(fiber)
      ? Effect.ignore(Effect.map(Effect.currentSpan, (span) => span.attribute("error.type", type)))
      : Effect.void
  )

/**
 * The round spans of one turn's loop, without restructuring it: `next(n)` ends the previous
 * round's span and opens `agent round` (its parent the turn's span); `under` makes what a round
 * does (the model request, the tool calls) its children; `close` ends the last one with the
 * rounds' outcome. All of it is nothing under the built-in tracer.
 */
export const rounds = () => {
  let current: Tracer.Span | undefined = undefined
  const end = (exit: Exit.Exit<unknown, unknown>) =>
    current === undefined ? Effect.void : Effect.map(Clock.currentTimeNanos, (now) => {
      if (Exit.isFailure(exit)) current?.attribute("error.type", errorType(exit.cause))
      current?.end(now, exit)
      current = undefined
    })
  const next = (round: number): Effect.Effect<void> =>
    Effect.withFiberRuntime((fiber) =>
      Span.isTraced(fiber)
        ? Effect.zipRight(
          end(Exit.void),
          Effect.map(
            Effect.makeSpan("agent round", {
              captureStackTrace: false,
              attributes: { "skald.agent.round": round }
            }),
            (span) => {
              current = span
            }
          )
        )
        : Effect.void
    )
  const under = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => current === undefined ? effect : Effect.withParentSpan(effect, current))
  /** Ends the last round's span when `effect` (the rounds) ends. */
  const close = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.onExit(effect, (exit) => end(exit))
  return { next, under, close } as const
}

/** What a tool execution's span is told of its outcome. */
export interface ToolOutcome {
  readonly status: "done" | "error" | "cancelled" | "denied"
  readonly result: string
}

/** Content as recorded: redacted, cut to `CONTENT_CAP` characters. */
export const content = (redact: (text: string) => string, text: string): string => {
  const clean = redact(text)
  return clean.length <= CONTENT_CAP ? clean : `${clean.slice(0, CONTENT_CAP)}… (cut at ${CONTENT_CAP} characters)`
}

/**
 * A tool execution: `execute_tool <name>` with the tool's name and call id, `skald.tool.status`
 * and, for an error result, `error.type` = `tool_error`. With `redact` (content recording on),
 * the arguments and the result as the model reads them, redacted and cut.
 */
export const tool = <A extends ToolOutcome, E, R>(
  call: { readonly callId: string; readonly name: string; readonly arguments: unknown },
  redact: Effect.Effect<((text: string) => string) | undefined>,
  body: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  traced(
    `execute_tool ${call.name}`,
    () => ({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": call.name,
      "gen_ai.tool.call.id": call.callId
    }),
    (span) =>
      span === undefined ? body : Effect.flatMap(redact, (redactWith) => {
        if (redactWith !== undefined) {
          span.attribute("gen_ai.tool.call.arguments", content(redactWith, JSON.stringify(call.arguments ?? {})))
        }
        return Effect.tap(body, (outcome) => {
          span.attribute("skald.tool.status", outcome.status)
          if (outcome.status === "error") span.attribute("error.type", "tool_error")
          if (redactWith !== undefined) span.attribute("gen_ai.tool.call.result", content(redactWith, outcome.result))
        })
      })
  )

/** The model a provider calls, for its request spans and metrics. */
export interface ModelInfo {
  readonly provider: "openai" | "anthropic"
  readonly model: string
}

/** A model request's span attributes. */
export const chatAttributes = (info: ModelInfo): Record<string, string> => ({
  "gen_ai.operation.name": "chat",
  "gen_ai.provider.name": info.provider,
  "gen_ai.request.model": info.model
})

/**
 * What a model request's parts tell its span and metrics: the response's model and id, the
 * usage and the finish reason (`observe` each part), then `end` with the request's outcome
 * records `error.type`, the duration and the tokens.
 */
export const chatObserver = (info: ModelInfo, span: Tracer.Span, started: bigint) => {
  let responseModel: string | undefined = undefined
  let input: number | undefined = undefined
  let output: number | undefined = undefined
  const observe = (part: { readonly type: string }) => {
    const p = part as {
      readonly type: string
      readonly id?: unknown
      readonly modelId?: unknown
      readonly reason?: unknown
      readonly usage?: { readonly inputTokens?: number | undefined; readonly outputTokens?: number | undefined }
    }
    if (p.type === "response-metadata") {
      if (typeof p.modelId === "string") {
        responseModel = p.modelId
        span.attribute("gen_ai.response.model", p.modelId)
      }
      if (typeof p.id === "string") span.attribute("gen_ai.response.id", p.id)
    } else if (p.type === "finish") {
      // Effect's OpenTelemetry spans take no array attribute (one would be its inspected text):
      // the list is its JSON, e.g. `["tool-calls"]` (@effect/ai's finish reasons).
      if (typeof p.reason === "string") span.attribute("gen_ai.response.finish_reasons", JSON.stringify([p.reason]))
      input = p.usage?.inputTokens ?? input
      output = p.usage?.outputTokens ?? output
      if (input !== undefined) span.attribute("gen_ai.usage.input_tokens", input)
      if (output !== undefined) span.attribute("gen_ai.usage.output_tokens", output)
    }
  }
  const end = (exit: Exit.Exit<unknown, unknown>) =>
    Effect.flatMap(Clock.currentTimeNanos, (now) => {
      const tags: Record<string, string> = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": info.provider,
        "gen_ai.request.model": info.model,
        ...(responseModel === undefined ? {} : { "gen_ai.response.model": responseModel })
      }
      if (Exit.isFailure(exit)) {
        const type = errorType(exit.cause)
        span.attribute("error.type", type)
        tags["error.type"] = type
      }
      const tagged = <T extends Metric.Metric<any, any, any>>(metric: T, extra: Record<string, string> = {}) =>
        Metric.taggedWithLabels(metric, Object.entries({ ...tags, ...extra }).map(([k, v]) => MetricLabel.make(k, v)))
      const updates: Array<Effect.Effect<void>> = [
        Metric.update(tagged(operationDuration), Number(now - started) / 1e9)
      ]
      if (input !== undefined) {
        updates.push(Metric.update(tagged(tokenUsage, { "gen_ai.token.type": "input" }), input))
      }
      if (output !== undefined) {
        updates.push(Metric.update(tagged(tokenUsage, { "gen_ai.token.type": "output" }), output))
      }
      return Effect.all(updates, { discard: true })
    })
  return { observe, end } as const
}
