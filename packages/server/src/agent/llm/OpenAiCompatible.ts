/**
 * A `LanguageModel` for any OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM,
 * llama.cpp, LM Studio, OpenRouter): `POST {baseUrl}/chat/completions`, always streaming over SSE
 * with `stream_options.include_usage`, tools sent with their JSON Schema untouched and never
 * `strict`.
 *
 * - Tolerates the known server quirks (see `internal/openAiWire.ts`): tool-call `index` always 0
 *   or missing, a first delta without `id` (an id is synthesized), whole arguments in one delta,
 *   `choices: null` on the usage chunk, a mid-stream `{"error": …}` event.
 * - Sent with undici's `request` through the `NodeHttpClient.Dispatcher` in context (its
 *   kept-alive connections; `Model.http` shares one with Anthropic's `HttpClient`), the body read
 *   straight from undici's `Readable` (`internal/responseBody.ts`), not through
 *   `@effect/platform`'s `HttpClient`: per request that cost ~0.4 ms more to send and ~1.8 ms
 *   more CPU (docs/performance.md, *Run I*). Under an installed tracer the request has an
 *   `http.client POST` span (headers redacted) and sends its `traceparent`.
 * - Interrupting the consumer before `[DONE]` aborts the HTTP request (its finalizer is in the
 *   caller's scope); the parts end at `[DONE]`, the body's rest is read in the background
 *   (keep-alive), for at most a second.
 * - 408, 429, 5xx and connection failures before the response is streamed are retried: after the
 *   server's `Retry-After` / `retry-after-ms`, else a capped exponential backoff (3 tries in all by
 *   default; the providers' one policy, internal/retryPolicy.ts).
 * - Every failure is an `AiError` carrying the provider's own message; the API key is sent as a
 *   bearer token and redacted from errors and spans, as are the extra `headers`.
 *
 * `generateText` collects the same parts (one code path for quirks, retries and errors); the turn
 * loop pulls them raw, without `@effect/ai`'s per-request decode or a `Stream` stage per step
 * (`StreamParts.openOf`, StreamParts.ts).
 *
 * @since 0.1.0
 */
import * as AiError from "@effect/ai/AiError"
import * as IdGenerator from "@effect/ai/IdGenerator"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Response from "@effect/ai/Response"
import * as Sse from "@effect/experimental/Sse"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import type * as Undici from "@effect/platform-node/Undici"
import * as Headers from "@effect/platform/Headers"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import * as Finalizer from "@skald/mcp/internal/finalizer"
import * as Span from "@skald/mcp/internal/span"
import * as Arr from "effect/Array"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Fiber from "effect/Fiber"
import * as JSONSchema from "effect/JSONSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { GenerationConfig } from "./GenerationConfig.js"
import * as Wire from "./internal/openAiWire.js"
import { ResponseBody } from "./internal/responseBody.js"
import * as RetryPolicy from "./internal/retryPolicy.js"
import * as StreamParts from "./StreamParts.js"

/** How to reach an OpenAI-compatible chat-completions server. */
export interface Options {
  /** e.g. `http://127.0.0.1:11434/v1`: requests go to `POST {baseUrl}/chat/completions`. */
  readonly baseUrl: string
  readonly model: string
  /** Sent as `Authorization: Bearer …`; never in an error, a log or a span. */
  readonly apiKey?: Redacted.Redacted | undefined
  /** Tries in all for a 408, a 429, a 5xx or a connection failure (default 3; 1 = no retry): internal/retryPolicy.ts. */
  readonly maxRetries?: number
  /** The first backoff delay, doubled on each retry (default 500 ms). */
  readonly retryBaseDelay?: Duration.DurationInput
  /** The longest delay between tries (default 20 s); a longer `Retry-After` is not waited for. */
  readonly retryMaxDelay?: Duration.DurationInput
  /** Extra request headers (redacted from errors and spans, as they may hold credentials). */
  readonly headers?: Record<string, string>
}

const module = "OpenAiCompatible"

/** How long the body is read after `[DONE]` for its end (a server that then hangs is cut off). */
const drainAfterMillis = 1000

/** One failed try: the error to report, and whether (and after how long) to try again. */
class AttemptFailed extends Data.TaggedError("AttemptFailed")<{
  readonly error: (suffix: string) => AiError.AiError
  readonly retryable: boolean
  readonly retryAfterMillis: number | undefined
}> {}

const causeMessage = (cause: unknown): string => {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code
    const inner = cause.cause instanceof Error ? `: ${cause.cause.message}` : ""
    return `${cause.message}${inner}${typeof code === "string" ? ` (${code})` : ""}`
  }
  return String(cause)
}

const stringHeaders = (headers: Record<string, string | Redacted.Redacted>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name in headers) {
    const value = headers[name]!
    out[name] = Redacted.isRedacted(value) ? "<redacted>" : value
  }
  return out
}

/** Makes the `LanguageModel` service for `options`, over undici's dispatcher (its connection pool). */
export const make = (
  options: Options
): Effect.Effect<LanguageModel.Service, never, NodeHttpClient.Dispatcher> =>
  Effect.gen(function*() {
    const dispatcher = yield* NodeHttpClient.Dispatcher
    const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`
    const target = Either.try(() => new URL(url))
    const redactedNames = ["authorization", ...Object.keys(options.headers ?? {}).map((name) => name.toLowerCase())]
    const maxDelay = RetryPolicy.maxDelayOf(options)
    const maxDelayMillis = Duration.toMillis(maxDelay)

    // Built once: every request sends the same headers (names lower-cased).
    const baseHeaders: Record<string, string> = {
      ...Headers.fromInput(options.headers ?? {}),
      accept: "text/event-stream",
      "content-type": "application/json",
      ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${Redacted.value(options.apiKey)}` })
    }
    const redactedHeaders = stringHeaders(Headers.redact(Headers.fromInput(baseHeaders), redactedNames))
    const requestDetails: typeof AiError.HttpRequestDetails.Type = {
      method: "POST",
      url,
      urlParams: [],
      hash: Option.none(),
      headers: redactedHeaders
    }
    const schedule = RetryPolicy.schedule(options, (failure: AttemptFailed) => failure, {
      module,
      describe: (failure) => failure.error("").message
    })

    const statusFailure = (method: string, response: Undici.Dispatcher.ResponseData) =>
      Effect.gen(function*() {
        const body = yield* Effect.orElseSucceed(Effect.tryPromise(() => response.body.text()), () => "")
        const now = yield* Clock.currentTimeMillis
        const headers = Headers.fromInput(response.headers)
        const retryAfterMillis = Wire.retryAfterMillis(headers, now)
        const status = response.statusCode
        const retryable = RetryPolicy.isRetryableStatus(status)
        const message = Wire.bodyMessage(body) ?? "no message"
        const tooLong = retryable && retryAfterMillis !== undefined && retryAfterMillis > maxDelayMillis
          ? `; it asks to retry after ${Math.ceil(retryAfterMillis / 1000)} s, longer than the longest retry delay (${
            Duration.format(maxDelay)
          })`
          : ""
        return yield* new AttemptFailed({
          retryable,
          retryAfterMillis,
          error: (suffix) =>
            new AiError.HttpResponseError({
              module,
              method,
              reason: "StatusCode",
              request: requestDetails,
              response: {
                status,
                headers: stringHeaders(Headers.redact(headers, ["set-cookie", ...redactedNames]))
              },
              description: `The model server answered ${status}: ${message}${tooLong}${suffix}`,
              ...(body === "" ? {} : { body: body.length > 4000 ? `${body.slice(0, 4000)}…` : body })
            }, { disableValidation: true })
        })
      })

    const requestFailure = (method: string, cause: unknown) =>
      new AttemptFailed({
        retryable: true,
        retryAfterMillis: undefined,
        error: (suffix) =>
          new AiError.HttpRequestError({
            module,
            method,
            reason: "Transport",
            request: requestDetails,
            description: `Could not reach the model server at ${url}: ${causeMessage(cause)}${suffix}`
          }, { disableValidation: true })
      })

    /**
     * Under an installed tracer, the request's `http.client POST` client span (the HTTP
     * conventions' attributes, the headers redacted) and its `traceparent` header; nothing under
     * the built-in one (agent/Telemetry.ts: spans only when someone records them).
     */
    const httpSpan = (fiber: Fiber.RuntimeFiber<unknown, unknown>, address: URL) => {
      if (!Span.isTraced(fiber)) return undefined
      const attributes: Record<string, unknown> = {
        "http.request.method": "POST",
        "server.address": address.origin,
        "url.full": url,
        "url.path": address.pathname,
        "url.scheme": address.protocol.slice(0, -1)
      }
      if (address.port !== "") attributes["server.port"] = Number(address.port)
      for (const name in redactedHeaders) attributes[`http.request.header.${name}`] = redactedHeaders[name]
      return Effect.makeSpan("http.client POST", { kind: "client", captureStackTrace: false, attributes })
    }

    /**
     * Sends the request once (undici's `request`, on its kept-alive connections) and returns an OK
     * (2xx) response; `controller` aborts it (the server sees the connection close).
     */
    const sendOnce = (
      method: string,
      body: string,
      controller: AbortController
    ): Effect.Effect<Undici.Dispatcher.ResponseData, AttemptFailed> =>
      Either.isLeft(target)
        ? Effect.fail(fatal(
          new AiError.HttpRequestError({
            module,
            method,
            reason: "InvalidUrl",
            request: requestDetails,
            description: `The model server's URL is not valid: ${url}`
          }, { disableValidation: true })
        ))
        : Effect.withFiberRuntime((fiber) => {
          const address = target.right
          const send = (headers: Record<string, string>) =>
            Effect.async<Undici.Dispatcher.ResponseData, AttemptFailed>((resume) => {
              dispatcher.request({
                origin: address.origin,
                path: address.pathname + address.search,
                method: "POST",
                headers,
                body,
                signal: controller.signal,
                // No deadline of undici's own: the caller's (a turn's stop, a timeout) interrupts.
                headersTimeout: 60 * 60 * 1000,
                bodyTimeout: 0
              }, (cause, response) => {
                resume(cause === null ? Effect.succeed(response) : Effect.fail(requestFailure(method, cause)))
              })
              return Effect.sync(() => controller.abort())
            })
          const checked = (response: Undici.Dispatcher.ResponseData) =>
            response.statusCode >= 200 && response.statusCode < 300
              ? Effect.succeed(response)
              : statusFailure(method, response)
          const span = httpSpan(fiber, address)
          if (span === undefined) return Effect.flatMap(send(baseHeaders), checked)
          return Effect.flatMap(span, (span) =>
            send({ ...baseHeaders, ...HttpTraceContext.toHeaders(span) }).pipe(
              Effect.tap((response) => span.attribute("http.response.status_code", response.statusCode)),
              Effect.onExit((exit) => Effect.map(Clock.currentTimeNanos, (now) => span.end(now, exit))),
              Effect.flatMap(checked)
            ))
        })

    /** A failure that is reported as it is, never retried. */
    const fatal = (error: AiError.AiError) =>
      new AttemptFailed({ retryable: false, retryAfterMillis: undefined, error: () => error })

    /** The request's body, as JSON text (undici writes it as it is: no `Uint8Array` copy, no body stream). */
    const prepare = (method: string, providerOptions: LanguageModel.ProviderOptions) =>
      Effect.withFiberRuntime<string, AiError.AiError>((fiber) => {
        const config = Context.get(fiber.currentContext, GenerationConfig)
        const format = providerOptions.responseFormat
        providerOptions.span.attribute("gen_ai.request.model", options.model)
        let schema: unknown = undefined
        if (format.type === "json") {
          try {
            schema = JSONSchema.make(format.schema)
          } catch (cause) {
            return Effect.fail(
              new AiError.MalformedInput({
                module,
                method,
                description: `The schema of the structured output has no JSON Schema form: ${causeMessage(cause)}`
              })
            )
          }
        }
        const body = Wire.requestJson(options.model, providerOptions, schema, config)
        return body instanceof Wire.UnsupportedPart
          ? Effect.fail(new AiError.MalformedInput({ module, method, description: body.description }))
          : Effect.succeed(body)
      })

    const streamFailure = (method: string, failure: Wire.StreamFailure): AiError.AiError =>
      failure._tag === "ProviderError"
        ? new AiError.UnknownError({
          module,
          method,
          description: `The model server reported an error in its reply: ${failure.message}`
        })
        : new AiError.MalformedOutput({
          module,
          method,
          description: failure._tag === "NotJson"
            ? `The model server sent an event that is not a JSON object: ${failure.data}`
            : `The model called ${failure.name} with arguments that are not JSON: ${failure.args}`
        })

    /**
     * One try: send the request and read its body until it gives its first parts (or ends). A
     * failure up to there may be retried (per `schedule`); once parts are out, none is: `next`
     * gives the rest, failing without a retry.
     *
     * The parts end at `[DONE]`: what follows it (the response's end, often a later packet) is
     * read in the background (`ResponseBody.drain`, bounded by `drainAfterDone`), so the caller
     * doesn't wait for it, and the connection can be kept alive. Until `[DONE]` or the body's
     * end, closing the caller's scope (interruption, a failure, a consumer that stops) aborts
     * the request; a failed try aborts it at once.
     */
    const attempt = (method: string, request: string) =>
      Effect.suspend(() => {
        const controller = new AbortController()
        const abort = () => controller.abort()
        return attemptWith(method, request, controller).pipe(
          Effect.onError(() => Effect.sync(abort))
        )
      })

    const attemptWith = (method: string, request: string, controller: AbortController) =>
      Effect.gen(function*() {
        let handedOff = false
        yield* Finalizer.add(Effect.sync(() => {
          if (!handedOff) controller.abort()
        }))
        const response = yield* sendOnce(method, request, controller)
        const state = new Wire.StreamAccumulator()
        let emitted = false
        let ended = false
        // A server that ignores `stream: true` answers one JSON object: fold it as a single event.
        const contentType = response.headers["content-type"]
        const json = typeof contentType === "string" && contentType.includes("application/json")
        let jsonText = ""
        let out: Array<Response.StreamPartEncoded> = []
        const finish = Effect.suspend(() => {
          if (json) state.feed(jsonText, out)
          const missing = state.missingIds
          // Ids are made only for calls the server sent without one (a quirk): the one in context, else @effect/ai's.
          const synthesized: Effect.Effect<ReadonlyArray<string>> = missing === 0
            ? Effect.succeed([])
            : Effect.flatMap(Effect.serviceOption(IdGenerator.IdGenerator), (found) => {
              const ids = Option.getOrElse(found, () => IdGenerator.defaultIdGenerator)
              return Effect.all(Arr.makeBy(missing, () => ids.generateId()))
            })
          return Effect.flatMap(synthesized, (ids) => {
            state.finish(out, ids)
            return state.failure === undefined
              ? Effect.succeed(out)
              : Effect.fail(fatal(streamFailure(method, state.failure)))
          })
        })
        // One synchronous stage from bytes to parts: UTF-8 decoding, @effect/experimental's SSE
        // parser and the accumulator run in one loop per pull (no queue, no fiber hop).
        let done = false
        const decoder = new TextDecoder()
        const parser = Sse.makeParser((event) => {
          if (event._tag !== "Event" || done) return
          if (event.data === "[DONE]") done = true
          else state.feed(event.data, out)
        })
        const feed = (bytes: Uint8Array): Sse.SseError | undefined => {
          const text = decoder.decode(bytes, { stream: true })
          if (!json) return parser.feed(text)
          jsonText += text
          return undefined
        }
        const broken = (cause: unknown) =>
          new AttemptFailed({
            retryable: !emitted,
            retryAfterMillis: undefined,
            error: (suffix) =>
              new AiError.HttpResponseError({
                module,
                method,
                reason: "Decode",
                request: requestDetails,
                response: { status: response.statusCode, headers: {} },
                description: `The connection to the model server broke ${
                  emitted ? "mid-stream" : "before the first byte of its reply"
                }: ${causeMessage(cause)}${suffix}`
              }, { disableValidation: true })
          })
        const body = new ResponseBody(response.body)
        const next: Effect.Effect<ReadonlyArray<Response.StreamPartEncoded> | undefined, AttemptFailed> = Effect
          .suspend(() => {
            if (ended) return Effect.succeed(undefined)
            return body.next.pipe(
              Effect.matchEffect({
                onFailure: (cause) => Effect.fail(broken(cause)),
                onSuccess: (chunks) => {
                  out = []
                  if (chunks === undefined) {
                    // no `[DONE]`: finish at the end of the body
                    ended = true
                    handedOff = true
                    return finish
                  }
                  for (const bytes of chunks) {
                    const tooLarge = feed(bytes)
                    if (tooLarge !== undefined) {
                      return Effect.fail(fatal(
                        new AiError.MalformedOutput({
                          module,
                          method,
                          description: `The model server sent an SSE event that is too large: ${tooLarge.message}`
                        })
                      ))
                    }
                    if (done) break
                  }
                  if (state.failure !== undefined) return Effect.fail(fatal(streamFailure(method, state.failure)))
                  const parts = out
                  if (parts.length > 0) emitted = true
                  if (!done) return Effect.succeed(parts)
                  ended = true
                  out = []
                  return finish.pipe(
                    Effect.map((rest) => parts.concat(rest)),
                    Effect.tap(() => {
                      // After `[DONE]`: the body read to its end (briefly: a server that then hangs is cut off).
                      handedOff = true
                      body.drain(drainAfterMillis, () => controller.abort())
                    })
                  )
                }
              })
            )
          })
        // Up to the first parts (or the end): what a retry may repeat.
        let first: ReadonlyArray<Response.StreamPartEncoded> | undefined = []
        while (first !== undefined && first.length === 0) first = yield* next
        emitted = true
        return { first, next }
      })

    /** The request opened in the caller's scope, retried as `schedule` says; then its parts, pulled. */
    const open = (
      method: string,
      providerOptions: LanguageModel.ProviderOptions
    ): Effect.Effect<StreamParts.Pull<Response.StreamPartEncoded>, AiError.AiError, Scope.Scope> =>
      Effect.gen(function*() {
        const request = yield* prepare(method, providerOptions)
        let tries = 0
        const failed = (failure: AttemptFailed) => failure.error(tries > 1 ? ` (gave up after ${tries} tries)` : "")
        const once = Effect.suspend(() => {
          tries++
          return attempt(method, request)
        })
        // The schedule (its driver, its state) is set up only once a try has failed: it is then
        // given that failure first, as `Effect.retry` would have, and drives the tries after it.
        const { first, next } = yield* once.pipe(
          Effect.catchAll((failure) => {
            let replayed = false
            const again = Effect.suspend(() => {
              if (replayed) return once
              replayed = true
              return Effect.fail(failure)
            })
            return Effect.retry(again, schedule)
          }),
          Effect.mapError(failed)
        )
        let pending: ReadonlyArray<Response.StreamPartEncoded> | undefined | null = first
        return Effect.suspend(() => {
          if (pending === null) return Effect.mapError(next, failed)
          const parts = pending
          pending = null
          return Effect.succeed(parts)
        })
      })

    const stream = (method: string, providerOptions: LanguageModel.ProviderOptions) =>
      Stream.unwrapScoped(Effect.map(open(method, providerOptions), StreamParts.toStream))

    const service = yield* LanguageModel.make({
      streamText: (providerOptions) => stream("streamText", providerOptions),
      generateText: (providerOptions) =>
        stream("generateText", providerOptions).pipe(
          Stream.runCollect,
          Effect.map((parts) => Wire.collect(parts))
        )
    })
    // The turn loop pulls these parts as they are built (StreamParts.ts), without @effect/ai's decode.
    return StreamParts.withPulls(service, (providerOptions) => open("streamText", providerOptions), {
      provider: "openai",
      model: options.model
    })
  })

/** The `LanguageModel` layer for `options`. */
export const layer = (options: Options): Layer.Layer<LanguageModel.LanguageModel, never, NodeHttpClient.Dispatcher> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))
