/**
 * The Anthropic provider: `@effect/ai`'s `LanguageModel` over the Messages API, through
 * `@effect/ai-anthropic` (`AnthropicClient` + `AnthropicLanguageModel`), with what that library
 * leaves to us:
 *
 * - **Retries.** A response of 408, 429 or 5xx (529 "overloaded" included) and a connection that
 *   fails before any response (refused, reset) are tried again, `maxRetries` tries in all (default
 *   3), after `Retry-After` (seconds or an HTTP date) when the server sends one, else a capped
 *   exponential backoff (`retryBaseDelay` doubling up to `retryMaxDelay`). A `Retry-After` longer
 *   than `retryMaxDelay` is not waited for: the call fails at once, saying how long the server
 *   asked to wait. Only the request's head is retried: once a body streams, a failure is final.
 *   The providers' one policy: internal/retryPolicy.ts.
 * - **Errors.** Every failure is an `AiError` (the `LanguageModel` contract) carrying Anthropic's own
 *   words: a non-2xx answer (`{"type":"error","error":{"type":…,"message":…}}`) is an
 *   `HttpResponseError` whose `description` is `<type>: <message>`; a mid-stream `error` event ends
 *   the stream with an `UnknownError` saying the same. The API key is sent as `x-api-key` and is
 *   redacted from every error (the header is in the redacted names).
 * - **Interruption.** Interrupting the caller (a stopped turn) aborts the HTTP request: the
 *   HttpClient's own abort signal closes the socket.
 *
 * Tools go out as `{name, description, input_schema}` with `input_schema = Tool.getJsonSchema(tool)`
 * (JsonSchemaTool.ts: the MCP server's schema, unchanged). Tool names must match
 * `^[a-zA-Z0-9_-]{1,64}$` (ToolNames.ts maps the names that don't).
 *
 * The turn loop reads the answer raw (`StreamParts.of`, StreamParts.ts): the client's stream events
 * folded by `internal/anthropicWire.ts` into parts, the request built there too (the same body as
 * `@effect/ai-anthropic`'s for what the loop sends), over the same client: retries, errors and
 * interruption as above, without `@effect/ai`'s per-request response schema.
 *
 * @since 0.1.0
 */
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Response from "@effect/ai/Response"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { GenerationConfig } from "./GenerationConfig.js"
import * as Wire from "./internal/anthropicWire.js"
import { retryAfterMillis } from "./internal/retryAfter.js"
import * as RetryPolicy from "./internal/retryPolicy.js"
import * as StreamParts from "./StreamParts.js"

/** How to reach the model (the same shape as the OpenAI-compatible provider's). */
export interface Options {
  /**
   * The API's base URL, e.g. `https://api.anthropic.com` (requests go to `{baseUrl}/v1/messages`;
   * a trailing `/v1` is accepted and dropped, so `https://api.anthropic.com/v1` works too).
   */
  readonly baseUrl: string
  readonly model: string
  /** Sent as `x-api-key`; none for a local server that needs none. */
  readonly apiKey?: Redacted.Redacted | undefined
  /** Tries in all for a retryable failure (default 3; 1 = no retry). */
  readonly maxRetries?: number | undefined
  /** The first backoff delay (default 500 ms), doubled each try. */
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  /** The longest delay (default 20 s), also the longest `Retry-After` waited for. */
  readonly retryMaxDelay?: Duration.DurationInput | undefined
  /** Extra request headers. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** `max_tokens` of each request (default 4096: the Messages API requires one). */
  readonly maxTokens?: number | undefined
}

/** The defaults of `Options`. */
export const defaults = {
  ...RetryPolicy.defaults,
  maxTokens: 4096
} as const

/** `{baseUrl}` without a trailing `/` or `/v1` (the client appends `/v1/messages`). */
export const apiUrl = (baseUrl: string): string => baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")

/**
 * The delay a `Retry-After` value asks for (delta-seconds or an HTTP date, against `now` in ms);
 * undefined when absent or unreadable.
 */
export const retryAfter = (value: string | undefined, now: number): Duration.Duration | undefined => {
  const ms = retryAfterMillis({ "retry-after": value }, now)
  return ms === undefined ? undefined : Duration.millis(ms)
}

/** Anthropic's error body: `{"type":"error","error":{"type":…,"message":…}}`. */
const ErrorBody = Schema.Struct({
  error: Schema.Struct({ type: Schema.optional(Schema.String), message: Schema.String })
})
const decodeErrorBody = Schema.decodeUnknownOption(Schema.parseJson(ErrorBody))

/** What an Anthropic error body says: `<type>: <message>`, or the text itself (bounded). */
export const providerMessage = (body: string): string => {
  const parsed = decodeErrorBody(body)
  if (Option.isSome(parsed)) {
    const { message, type } = parsed.value.error
    return type === undefined ? message : `${type}: ${message}`
  }
  const text = body.trim()
  return text.length === 0 ? "(empty body)" : text.length > 2000 ? `${text.slice(0, 2000)}…` : text
}

const describe = (
  response: HttpClientResponse.HttpClientResponse,
  said: string,
  after: Duration.Duration | undefined
) =>
  `Anthropic answered ${response.status}: ${said}${
    after === undefined ? "" : ` (the server asks to retry after ${Duration.format(after)})`
  }`

/** A failure the retry policy looks at: the response's status and `Retry-After`, when there was one. */
const retryInfo = (error: HttpClientError.HttpClientError, now: number) =>
  error._tag === "ResponseError"
    ? {
      retryable: RetryPolicy.isRetryableStatus(error.response.status),
      after: retryAfter(error.response.headers["retry-after"], now)
    }
    : { retryable: error.reason === "Transport", after: undefined }

/**
 * The client's HttpClient with our policy: a non-2xx answer becomes a `ResponseError` whose
 * description is Anthropic's message; 429/5xx/transport failures are retried (see the module doc).
 */
export const withRetries = (
  options: Pick<Options, "maxRetries" | "retryBaseDelay" | "retryMaxDelay">
) =>
(client: HttpClient.HttpClient): HttpClient.HttpClient => {
  const policy = RetryPolicy.schedule(
    options,
    (error: HttpClientError.HttpClientError, now) => {
      const info = retryInfo(error, now)
      return {
        retryable: info.retryable,
        retryAfterMillis: info.after === undefined ? undefined : Duration.toMillis(info.after)
      }
    },
    { module: "Anthropic", describe: (error) => error.message }
  )
  const failNonOk = (
    rawRequest: HttpClientRequest.HttpClientRequest,
    response: HttpClientResponse.HttpClientResponse
  ) =>
    response.status >= 200 && response.status < 300
      ? Effect.succeed(response)
      : Effect.flatMap(
        Effect.zip(Effect.orElseSucceed(response.text, () => ""), Clock.currentTimeMillis),
        ([body, now]) =>
          Effect.fail(
            new HttpClientError.ResponseError({
              request: scrub(rawRequest),
              response,
              reason: "StatusCode",
              description: describe(response, providerMessage(body), retryAfter(response.headers["retry-after"], now))
            })
          )
      )
  return HttpClient.transform(client, (effect, request) =>
    effect.pipe(
      Effect.mapError(scrubError),
      Effect.flatMap((response) => failNonOk(request, response)),
      Effect.retry(policy)
    ))
}

/** The header carrying the API key. */
const API_KEY_HEADER = "x-api-key"

/**
 * The request with its API key replaced by `<redacted>`, for errors: `AiError`'s constructors copy
 * the request's headers into the error, and their redaction depends on the fiber that builds it
 * (it let the key through).
 */
const scrub = (request: HttpClientRequest.HttpClientRequest) =>
  API_KEY_HEADER in request.headers ? HttpClientRequest.setHeader(request, API_KEY_HEADER, "<redacted>") : request

const scrubError = (error: HttpClientError.HttpClientError): HttpClientError.HttpClientError =>
  error._tag === "RequestError"
    ? new HttpClientError.RequestError({
      request: scrub(error.request),
      reason: error.reason,
      cause: error.cause,
      ...(error.description === undefined ? {} : { description: error.description })
    })
    : new HttpClientError.ResponseError({
      request: scrub(error.request),
      response: error.response,
      reason: error.reason,
      cause: error.cause,
      ...(error.description === undefined ? {} : { description: error.description })
    })

/** A mid-stream `error` part (Anthropic's `event: error`) as a failure carrying its message. */
const streamError = (error: unknown): AiError.AiError => {
  const e = error as { type?: unknown; message?: unknown } | undefined
  const said = typeof e?.message === "string"
    ? typeof e.type === "string" ? `${e.type}: ${e.message}` : e.message
    : JSON.stringify(error)
  return new AiError.UnknownError({
    module: "Anthropic",
    method: "streamText",
    description: `Anthropic ended the stream with an error: ${said}`
  })
}

/**
 * The `LanguageModel` service for `options` (needs an `HttpClient`; the scope holds the client's
 * redacted-header setting).
 */
export const make = Effect.fn("Anthropic.make")(function*(options: Options) {
  const client = yield* AnthropicClient.make({
    apiUrl: apiUrl(options.baseUrl),
    apiKey: options.apiKey as Redacted.Redacted<string> | undefined,
    transformClient: (http) => {
      const headers = options.headers
      const withHeaders = headers === undefined
        ? http
        : HttpClient.mapRequest(http, HttpClientRequest.setHeaders(headers))
      return withRetries(options)(withHeaders)
    }
  })
  const model = yield* AnthropicLanguageModel.make({
    model: options.model,
    config: { max_tokens: options.maxTokens ?? defaults.maxTokens }
  }).pipe(Effect.provideService(AnthropicClient.AnthropicClient, client))
  // A request's own generation settings (GenerationConfig.ts) override the layer's.
  const overrides = Effect.map(GenerationConfig, (config) => ({
    ...(config.maxTokens === undefined ? {} : { max_tokens: config.maxTokens }),
    ...(config.temperature === undefined ? {} : { temperature: config.temperature }),
    ...(config.stopSequences === undefined ? {} : { stop_sequences: [...config.stopSequences] })
  }))
  const service = LanguageModel.LanguageModel.of({
    ...model,
    generateText: ((generateOptions: Parameters<LanguageModel.Service["generateText"]>[0]) =>
      Effect.flatMap(overrides, (config) =>
        AnthropicLanguageModel.withConfigOverride(
          model.generateText(generateOptions),
          config
        ))) as LanguageModel.Service["generateText"],
    streamText: ((streamOptions: Parameters<LanguageModel.Service["streamText"]>[0]) =>
      model.streamText(streamOptions).pipe(
        Stream.mapEffect((part) =>
          part.type === "error" ? Effect.fail(streamError(part.error)) : Effect.succeed(part)
        )
      )) as LanguageModel.Service["streamText"]
  })
  // The turn loop's raw parts (StreamParts.ts): the client's events folded here, over the same
  // client (its retries and errors), without @effect/ai's per-request schema.
  const streamParts = (providerOptions: LanguageModel.ProviderOptions) => {
    const prepared = Wire.messages(providerOptions.prompt)
    if (prepared instanceof Wire.UnsupportedPart) {
      return Stream.fail(
        new AiError.MalformedInput({ module: "Anthropic", method: "streamParts", description: prepared.description })
      )
    }
    providerOptions.span.attribute("gen_ai.request.model", options.model)
    const payload = {
      model: options.model,
      max_tokens: options.maxTokens ?? defaults.maxTokens,
      ...(prepared.system.length === 0 ? {} : { system: prepared.system }),
      messages: prepared.messages,
      ...Wire.tools(providerOptions)
    }
    return Stream.suspend(() => {
      const state = new Wire.StreamAccumulator()
      return client.createMessageStream({
        // The wire module's shapes are the subset of the client's encoded request that the loop sends.
        payload: payload as unknown as Parameters<typeof client.createMessageStream>[0]["payload"]
      }).pipe(
        Stream.mapChunksEffect((events) => {
          const out: Array<Response.StreamPartEncoded> = []
          for (const event of events) state.feed(event, out)
          const failure = state.failure
          if (failure === undefined) return Effect.succeed(Chunk.unsafeFromArray(out))
          return Effect.fail(
            failure._tag === "ProviderError"
              ? streamError(failure.error)
              : new AiError.MalformedOutput({
                module: "Anthropic",
                method: "streamParts",
                description: `The model called ${failure.name} with arguments that are not JSON: ${failure.args}`
              })
          )
        })
      )
    })
  }
  return StreamParts.withStreamParts(service, streamParts, { provider: "anthropic", model: options.model })
})

/** `LanguageModel.LanguageModel` from Anthropic, needing an `HttpClient`. */
export const layer = (options: Options): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Layer.scoped(LanguageModel.LanguageModel, make(options))
