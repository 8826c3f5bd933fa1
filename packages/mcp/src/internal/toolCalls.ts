/**
 * `tools/call`: the lookup in the tool cache (at most one refresh), a plain call classified where
 * its answer is delivered, a task-augmented one where tool and server both offer it, and a call
 * of a tool the server did not list, whose "no such tool" becomes `McpUnknownTool`.
 */
import * as McpError from "@skald/domain/McpError"
import type * as McpTool from "@skald/domain/McpTool"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Predicate from "effect/Predicate"
import * as CallResult from "../CallResult.js"
import * as JsonRpc from "../JsonRpc.js"
import type { CallOutcome, RequestOptions } from "../McpClient.js"
import * as OutputSchema from "../OutputSchema.js"
import type * as Protocol from "../Protocol.js"
import type { Connection, JsonObject } from "./connection.js"
import { PendingEntry, type Requests } from "./requests.js"
import * as Span from "./span.js"
import type { ToolCache } from "./toolCache.js"

/** How a server says a tool does not exist ("Unknown tool: x", "Tool x not found", …). */
const SAYS_UNKNOWN = /\b(unknown|not found|no such|does not exist|doesn't exist|not exist)\b/i

export const make = (
  conn: Connection,
  requests: Requests,
  cache: ToolCache,
  features: Protocol.Features,
  /** Task augmentation only where the tool offers it AND the server declared it (the spec). */
  serverTaskCalls: boolean,
  callAsTask: (
    name: string,
    args: JsonObject | undefined,
    options: RequestOptions | undefined
  ) => Effect.Effect<unknown, McpError.McpError>
) => {
  const { log } = conn
  const { awaitAnswer, timeoutOf } = requests
  const { isFresh, byName } = cache
  const defaultMaxTotalMillis = conn.settings.maxTotalMillis
  const outputChecks = OutputSchema.makeCache()

  /**
   * The tool `name` from the list, after at most one refresh (none when the list was only now
   * read): `undefined` when the server does not list it. It is called all the same (servers may
   * hide tools); see `callUnlisted`.
   */
  const findTool = (name: string) =>
    Effect.gen(function*() {
      const wasListed = isFresh()
      yield* cache.currentTools
      const tool = byName(name)
      if (tool !== undefined || !wasListed) return tool
      // Not seen yet: refresh once.
      yield* cache.refreshTools
      return byName(name)
    })

  // A server without tools/list (or one that fails it) is still called directly.
  const lookUpSlowly = (name: string): Effect.Effect<McpTool.McpTool | undefined, McpError.McpError> =>
    findTool(name).pipe(Effect.catchTag("McpRequestError", () => Effect.succeed(undefined)))

  /** Tools the server did not list but answered (bounded by what the caller names: a set of strings). */
  const answeredUnlisted = new Set<string>()

  const unknownTool = (name: string) => {
    const latest = cache.latest()
    return new McpError.McpUnknownTool({
      server: conn.server,
      tool: name,
      available: latest === undefined ? [] : latest.tools.map((t) => t.name)
    })
  }

  /**
   * A call of a tool the server did not list: sent as any call; the server's own "no such tool"
   * — a JSON-RPC error -32602/-32601 that says so, any other JSON-RPC error (server-github answers
   * -32603) or an `isError` result naming the tool and saying so — becomes `McpUnknownTool` with the names it lists. Any other answer is the answer.
   */
  const callUnlisted = (
    fiber: Fiber.RuntimeFiber<any, any>,
    name: string,
    args: JsonObject | undefined,
    options: RequestOptions | undefined
  ): Effect.Effect<CallOutcome, McpError.McpError> =>
    callPlain(fiber, name, undefined, args, options).pipe(
      Effect.catchTag("McpRequestError", (error): Effect.Effect<never, McpError.McpError> =>
        Effect.fail(
          SAYS_UNKNOWN.test(error.reason) &&
            (error.code === JsonRpc.ErrorCode.InvalidParams || error.code === JsonRpc.ErrorCode.MethodNotFound ||
              error.reason.includes(name))
            ? unknownTool(name)
            : error
        )),
      Effect.flatMap((outcome): Effect.Effect<CallOutcome, McpError.McpError> => {
        if (outcome.result._tag === "Task" || !outcome.result.isError) return Effect.succeed(outcome)
        const text = outcome.result._tag === "Json" ? JSON.stringify(outcome.result.value) ?? "" : outcome.result.text
        return text.includes(name) && SAYS_UNKNOWN.test(text) ? Effect.fail(unknownTool(name)) : Effect.succeed(outcome)
      }),
      Effect.tap(() => {
        answeredUnlisted.add(name)
      })
    )

  const finishCall = (name: string, tool: McpTool.McpTool | undefined, raw: unknown): Effect.Effect<CallOutcome> => {
    const wire = Predicate.isRecord(raw) ? raw : {}
    const { result, warnings } = CallResult.extract(wire)
    let problems: Array<string> | undefined
    if (warnings.length > 0) problems = warnings.map((warning) => `tool ${name}: ${warning}`)
    if (tool?.outputSchema !== undefined && features.structuredContent && result._tag !== "Task" && !result.isError) {
      const structured = wire.structuredContent
      const problem = structured === undefined
        ? "declares an outputSchema but returned no structuredContent"
        : outputChecks(tool.outputSchema)(structured)
      if (problem !== undefined) {
        ;(problems ??= []).push(`tool ${name}: structuredContent does not match its outputSchema: ${problem}`)
      }
    }
    const outcome: CallOutcome = { result, wire }
    return problems === undefined
      ? Exit.succeed(outcome)
      : Effect.as(Effect.forEach(problems, (p) => log("warning", p), { discard: true }), outcome)
  }

  /**
   * `finishCall` run as the answer is delivered (see `deliver` in internal/requests.ts): the
   * waiting fiber resumes with the outcome (or with the warnings to log first). A defect goes to
   * the caller, as it would have in the caller's own step, never to the transport's callback or
   * the reader.
   */
  conn.finish = (name, tool, raw) => {
    try {
      return finishCall(name, tool, raw)
    } catch (defect) {
      return Exit.die(defect)
    }
  }

  /** A plain tools/call: one request, its answer classified as it is delivered (see `deliver`). */
  const callPlain = (
    fiber: Fiber.RuntimeFiber<any, any>,
    name: string,
    tool: McpTool.McpTool | undefined,
    args: JsonObject | undefined,
    options: RequestOptions | undefined
  ): Effect.Effect<CallOutcome, McpError.McpError> => {
    // The check is compiled here, by the caller, so delivery only runs it.
    if (tool?.outputSchema !== undefined && features.structuredContent) outputChecks(tool.outputSchema)
    const timeoutMillis = timeoutOf(options)
    const maxTotal = options?.maxTotalTimeout === undefined
      ? defaultMaxTotalMillis
      : Duration.toMillis(options.maxTotalTimeout)
    const entry = new PendingEntry(
      "tools/call",
      args ?? {},
      true,
      timeoutMillis,
      name,
      tool,
      undefined,
      options?.onProgress,
      Math.max(maxTotal, timeoutMillis)
    )
    if (options !== undefined) entry.span = Span.spanOf(options)
    return awaitAnswer(fiber, entry)
  }

  const callWith = (
    fiber: Fiber.RuntimeFiber<any, any>,
    name: string,
    tool: McpTool.McpTool | undefined,
    args: JsonObject | undefined,
    options: RequestOptions | undefined
  ): Effect.Effect<CallOutcome, McpError.McpError> => {
    if (tool !== undefined && tool.taskSupport !== "forbidden") {
      if (serverTaskCalls) return Effect.flatMap(callAsTask(name, args, options), (raw) => finishCall(name, tool, raw))
      if (tool.taskSupport === "required") {
        return Effect.fail(new McpError.McpTaskUnsupported({ server: conn.server, tool: name }))
      }
    }
    return callPlain(fiber, name, tool, args, options)
  }

  const callToolIn = (
    fiber: Fiber.RuntimeFiber<any, any>,
    name: string,
    args: JsonObject | undefined,
    options: RequestOptions | undefined
  ): Effect.Effect<CallOutcome, McpError.McpError> => {
    const known = isFresh() ? byName(name) : undefined
    if (known !== undefined) return callWith(fiber, name, known, args, options)
    // A hidden tool that answered before is called again without a refresh.
    if (answeredUnlisted.has(name) && isFresh() && cache.latest() !== undefined) {
      return callUnlisted(fiber, name, args, options)
    }
    return Effect.flatMap(lookUpSlowly(name), (tool) =>
      Effect.withFiberRuntime((fiber) => {
        // Listed, or no list to judge by (the server failed tools/list): called as usual.
        if (tool !== undefined || cache.latest() === undefined) {
          return callWith(fiber, name, tool, args, options)
        }
        return callUnlisted(fiber, name, args, options)
      }))
  }

  // The hot path of the library. A known tool without task support is one fiber step here (it
  // looks at the tracer), the request (`awaitAnswer`, one `Effect.async`), and one resumption
  // with the outcome already classified on delivery — a few runtime steps in all, against
  // sixteen in the first version (docs/performance.md). A span (no captured stack trace, not
  // made the context's parent span) is made only under an installed tracer — see
  // internal/span.ts.
  const callTool = (name: string, args?: JsonObject, options?: RequestOptions) =>
    Effect.withFiberRuntime<CallOutcome, McpError.McpError>((fiber) => {
      if (!Span.isTraced(fiber)) return callToolIn(fiber, name, args, options)
      return Span.around(
        `tools/call ${name}`,
        Span.requestAttributes(conn.server, "tools/call", name),
        (span) =>
          Effect.withFiberRuntime((inner) =>
            callToolIn(inner, name, args, {
              ...options,
              traceSpan: span
            })
          )
      )
    })

  return { callTool }
}
