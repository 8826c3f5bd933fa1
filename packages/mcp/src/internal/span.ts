/**
 * Spans and metrics on the hot path, after the OpenTelemetry conventions for MCP
 * (semantic-conventions-genai, docs/gen-ai/mcp.md; docs/telemetry.md): a client span per request
 * named `{mcp.method.name} {target}`, its trace context sent in `params._meta.traceparent`, and
 * the `mcp.client.operation.duration` histogram.
 *
 * Effect's built-in tracer exports nothing, yet creating one of its spans (random trace and span
 * ids, an attribute map, an exit hook) costs more than the rest of a call, so with that tracer in
 * place neither span nor metric is made. Any installed tracer (OpenTelemetry, a test's recording
 * tracer) gets every span and the metric is recorded.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricLabel from "effect/MetricLabel"
import * as Predicate from "effect/Predicate"
import type * as Tracer from "effect/Tracer"

/** Effect's built-in tracer (the default when none is installed). */
export const builtIn: Tracer.Tracer = Effect.runSync(Effect.tracer)

/** True when the fiber runs under an installed tracer (anything but the built-in one). */
export const isTraced = (fiber: Fiber.RuntimeFiber<any, any>): boolean => fiber.currentTracer !== builtIn

/** The attribute naming the server (its registered name; no convention has one). */
export const SERVER = "skald.mcp.server"

/** `mcp.client.operation.duration`: seconds from sending a request to its answer. */
export const operationDuration = Metric.histogram(
  "mcp.client.operation.duration",
  MetricBoundaries.fromIterable([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]),
  "Duration of an MCP request as the client sees it, from sending it until its answer"
)

/** The attributes of a request's span: method, server and, for a tool call, the tool. */
export const requestAttributes = (server: string, method: string, tool?: string): Record<string, string> =>
  tool === undefined
    ? { "mcp.method.name": method, [SERVER]: server }
    : { "mcp.method.name": method, [SERVER]: server, "gen_ai.tool.name": tool, "gen_ai.operation.name": "execute_tool" }

/** Request options carrying the span of the request (set by `around`'s callers, read where it is sent). */
export interface Traced {
  readonly traceSpan?: Tracer.Span | undefined
}

/** The span a request's options carry, if any. */
export const spanOf = (options: object | undefined): Tracer.Span | undefined =>
  (options as Traced | undefined)?.traceSpan

/** The W3C `traceparent` of a span. */
export const traceparent = (span: Tracer.Span): string =>
  `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

/**
 * `params` with the span's trace context in `_meta` (the key unprefixed, SEP-414), and the span
 * told the JSON-RPC id. Params that are not an object are left as they are.
 */
export const inject = (span: Tracer.Span, id: number, params: unknown): unknown => {
  span.attribute("jsonrpc.request.id", String(id))
  if (params === undefined) return { _meta: { traceparent: traceparent(span) } }
  if (!Predicate.isRecord(params)) return params
  const meta = Predicate.isRecord(params._meta) ? params._meta : {}
  return { ...params, _meta: { ...meta, traceparent: traceparent(span) } }
}

/**
 * HTTP headers with the `traceparent` a message carries in `params._meta` (put there by `inject`)
 * added, so the HTTP request joins the trace too; the headers as they are otherwise.
 */
export const withTraceparent = <H extends Record<string, string>>(headers: H, message: unknown): H => {
  const params = Predicate.isRecord(message) ? message.params : undefined
  const meta = Predicate.isRecord(params) ? params._meta : undefined
  const value = Predicate.isRecord(meta) ? meta.traceparent : undefined
  return typeof value === "string" ? { ...headers, traceparent: value } : headers
}

/**
 * The conventions' `error.type` of an outcome: the JSON-RPC error code of a refused request, the
 * error's tag otherwise, `tool_error` for a tool result with `isError`.
 */
const errorType = (exit: Exit.Exit<unknown, unknown>): string | undefined => {
  if (Exit.isSuccess(exit)) {
    const result = Predicate.isRecord(exit.value) ? exit.value.result : undefined
    return Predicate.isRecord(result) && result.isError === true ? "tool_error" : undefined
  }
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  if (Predicate.isRecord(failure) && typeof failure.code === "number") return String(failure.code)
  if (Predicate.isRecord(failure) && typeof failure._tag === "string") return failure._tag
  return exit.cause._tag === "Interrupt" ? "cancelled" : "_OTHER"
}

/**
 * A client span around `body`, made the parent of what `body` does: `Effect.useSpan` without a
 * captured stack trace. Its outcome sets `error.type` (and `rpc.response.status_code` for a
 * JSON-RPC error), and its duration is recorded in `operationDuration` with the span's
 * attributes.
 */
export const around = <A, E, R>(
  name: string,
  attributes: Record<string, string>,
  body: (span: Tracer.Span) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.useSpan(
    name,
    { kind: "client", captureStackTrace: false, attributes },
    (span) =>
      Effect.flatMap(Clock.currentTimeNanos, (started) =>
        Effect.onExit(Effect.withParentSpan(body(span), span), (exit) =>
          Effect.flatMap(Clock.currentTimeNanos, (ended) => {
            const type = errorType(exit)
            let tags = attributes
            if (type !== undefined) {
              span.attribute("error.type", type)
              if (/^-?\d+$/.test(type)) {
                span.attribute("rpc.response.status_code", type)
              }
              tags = { ...attributes, "error.type": type }
            }
            const seconds = Number(ended - started) / 1e9
            return Metric.update(Metric.taggedWithLabels(operationDuration, toLabels(tags)), seconds)
          })))
  )

const toLabels = (tags: Record<string, string>) =>
  Object.entries(tags).map(([key, value]) => MetricLabel.make(key, value))

/**
 * `around`, skipped under the built-in tracer. One fiber step to look at the tracer; the
 * attributes are built only when a span is made.
 */
export const hot = <A, E, R>(
  name: string,
  attributes: () => Record<string, string>,
  body: (span: Tracer.Span | undefined) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) => isTraced(fiber) ? around(name, attributes(), body) : body(undefined))
