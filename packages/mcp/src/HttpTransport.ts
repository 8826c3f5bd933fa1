/**
 * The streamable HTTP transport (MCP 2025-11-25), with the legacy HTTP+SSE fallback. Every
 * message is a POST; answers come back as JSON, as an SSE stream, or on the GET stream. Like the
 * stdio transport it only moves messages: the engine above it is the same.
 *
 * @since 0.1.0
 */
import * as Sse from "@effect/experimental/Sse"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { McpError } from "@skald/domain"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as JsonRpc from "./JsonRpc.js"
import * as McpClient from "./McpClient.js"
import * as McpLog from "./McpLog.js"
import { DEFAULT_MAX_MESSAGE_BYTES } from "./Protocol.js"
import { Transport, type Service } from "./Transport.js"

/** Where the server is and how to talk to it. */
export interface Options {
  /** The server name, for logs and errors. */
  readonly server: string
  readonly url: string
  /** Sent as `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string | Redacted.Redacted<string> | undefined
  /** Extra headers on every request. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** The largest JSON body or SSE event accepted (default 64 MiB). */
  readonly maxMessageBytes?: number | undefined
  /** How long closing may wait for the session's DELETE (default 2 s). */
  readonly closeTimeout?: Duration.DurationInput | undefined
  /** The reconnection delay of a dropped stream when the server gave no `retry:` (default 1 s). */
  readonly reconnectDelay?: Duration.DurationInput | undefined
}

type Json = { readonly [key: string]: unknown }
const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const isRequest = (m: JsonRpc.Message): m is JsonRpc.Request => "method" in m && "id" in m
const isNotification = (m: JsonRpc.Message): m is JsonRpc.Notification => "method" in m && !("id" in m)

/** Connects to the server; the session lives as long as the scope. */
export const make = (options: Options): Effect.Effect<Service, never, HttpClient.HttpClient | Scope.Scope> =>
  Effect.gen(function*() {
    const server = options.server
    const url = options.url
    const maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
    const reconnectDelay = Duration.decode(options.reconnectDelay ?? "1 second")
    const client = yield* HttpClient.HttpClient
    const sink = yield* McpLog.McpLogSink
    const log = (tag: McpLog.Tag, text: string) => sink.emit({ server, tag, text })
    const incoming = yield* Mailbox.make<JsonRpc.Incoming, McpError.McpConnectionError>()
    const fibers = yield* FiberSet.make<unknown, never>()
    const runtime = yield* Effect.runtime<never>()
    const apiKey = options.apiKey === undefined
      ? undefined
      : Redacted.isRedacted(options.apiKey)
      ? options.apiKey
      : Redacted.make(options.apiKey)

    // --- session state ------------------------------------------------------------------
    let sessionId: string | undefined
    let protocolVersion: string | undefined
    let initialize: JsonRpc.Request | undefined
    /** Legacy HTTP+SSE: the endpoint the server named in its `endpoint` event. */
    let legacyEndpoint: string | undefined
    let closed = false
    /** Requests in flight, by id: their POST fibers (aborted on cancellation). */
    const inflight = new Map<JsonRpc.RequestId, Fiber.RuntimeFiber<unknown, never>>()
    /** Notification and answer POSTs under way: closing waits for them (bounded). */
    const notifying = new Set<Fiber.RuntimeFiber<unknown, never>>()
    /** Later messages wait until `notifications/initialized` was accepted (ordering). */
    let gate: Deferred.Deferred<void> | undefined
    let reinitCount = 0

    const headers = (forInitialize: boolean): Record<string, string> => ({
      accept: "application/json, text/event-stream",
      ...options.headers,
      ...(apiKey !== undefined ? { authorization: `Bearer ${Redacted.value(apiKey)}` } : {}),
      ...(sessionId !== undefined ? { "mcp-session-id": sessionId } : {}),
      ...(!forInitialize && protocolVersion !== undefined ? { "mcp-protocol-version": protocolVersion } : {})
    })

    const fail = (id: JsonRpc.RequestId | undefined, error: McpError.McpError) =>
      id === undefined
        ? log("warning", error.message)
        : Effect.sync(() => void incoming.unsafeOffer({ _tag: "Undelivered", id, error }))

    const httpError = (reason: string, status?: number) =>
      new McpError.McpHttpError({ server, url, reason, ...(status !== undefined ? { status } : {}) })

    // Tasks live in the session that created them: after a new session, the old ones are gone.
    const taskSessions = new Map<string, string | undefined>()
    const noteTask = (result: unknown) => {
      if (!isObject(result)) return
      const task = isObject(result.task) ? result.task : result
      if (typeof task.taskId === "string" && typeof task.status === "string") taskSessions.set(task.taskId, sessionId)
    }
    const staleTask = (message: JsonRpc.Message): string | undefined => {
      if (!isRequest(message) || !message.method.startsWith("tasks/") || !isObject(message.params)) return undefined
      const taskId = message.params.taskId
      if (typeof taskId !== "string" || !taskSessions.has(taskId)) return undefined
      return taskSessions.get(taskId) !== sessionId ? taskId : undefined
    }

    /** Hands one parsed JSON value (a message or a batch) to the engine. */
    const deliver = (value: unknown, seen?: (id: JsonRpc.RequestId) => void) => {
      for (const item of Array.isArray(value) ? value : [value]) {
        const message = JsonRpc.classify(item)
        if (message === undefined) {
          Runtime.runFork(runtime)(log("warning", "ignored a value that is not a JSON-RPC 2.0 message"))
          continue
        }
        if (message._tag === "Response") {
          const id = message.message.id
          if (id !== null) seen?.(id)
          if (initialize !== undefined && id === initialize.id && "result" in message.message) {
            const result = message.message.result
            if (isObject(result) && typeof result.protocolVersion === "string") protocolVersion = result.protocolVersion
          } else if ("result" in message.message && isObject(message.message.result)) {
            const result = message.message.result
            if ("task" in result || "taskId" in result) noteTask(result)
          }
        }
        incoming.unsafeOffer(message)
      }
    }

    const parseJson = (text: string): unknown | undefined => {
      try {
        return JSON.parse(text)
      } catch {
        return undefined
      }
    }

    /** Reads an SSE body; calls `onEvent` with each event. Ends with the last event id and retry hint. */
    const readSse = (
      response: HttpClientResponse.HttpClientResponse,
      onEvent: (event: Sse.Event) => void
    ) =>
      Effect.gen(function*() {
        let lastEventId: string | undefined
        let retry: Duration.Duration | undefined
        let tooLarge = false
        // A guard against unbounded buffering: bytes that arrived since the last complete event.
        let bytesSinceEvent = 0
        const parser = Sse.makeParser((event) => {
          bytesSinceEvent = 0
          if (event._tag === "Retry") {
            retry = event.duration
            if (event.lastEventId !== undefined) lastEventId = event.lastEventId
            return
          }
          if (event.id !== undefined) lastEventId = event.id
          // The parser bounds events in characters; the limit is in bytes.
          if (event.data.length * 3 > maxBytes && Buffer.byteLength(event.data, "utf8") > maxBytes) {
            tooLarge = true
            return
          }
          if (!tooLarge) onEvent(event)
        }, { maxEventSize: maxBytes })
        const decoder = new TextDecoder()
        yield* response.stream.pipe(
          Stream.runForEach((bytes) =>
            Effect.suspend(() => {
              bytesSinceEvent += bytes.length
              if (
                bytesSinceEvent > maxBytes || parser.feed(decoder.decode(bytes, { stream: true })) !== undefined ||
                tooLarge
              ) {
                tooLarge = true
                return Effect.fail("too large")
              }
              return Effect.void
            })
          ),
          Effect.catchAll(() => Effect.void)
        )
        return { lastEventId, retry, tooLarge }
      })

    /** Reads a body up to `maxBytes`; `undefined` past it (reading stops there). */
    const readCapped = (response: HttpClientResponse.HttpClientResponse) => {
      // A declared length within the limit is read whole (the common case, and the cheap one).
      const declared = Number(response.headers["content-length"])
      if (Number.isFinite(declared) && declared <= maxBytes) {
        return Effect.map(response.arrayBuffer, (bytes) =>
          bytes.byteLength > maxBytes ? undefined : Buffer.from(bytes).toString("utf8")).pipe(
          Effect.orElseSucceed(() => "")
        )
      }
      return Effect.gen(function*() {
        const chunks: Array<Uint8Array> = []
        let size = 0
        let over = false
        yield* response.stream.pipe(
          Stream.runForEach((bytes) =>
            Effect.suspend(() => {
              size += bytes.length
              if (size > maxBytes) {
                over = true
                return Effect.fail("too large")
              }
              chunks.push(bytes)
              return Effect.void
            })
          ),
          Effect.catchAll(() => Effect.void)
        )
        return over ? undefined : Buffer.concat(chunks).toString("utf8")
      })
    }

    const onMessageEvent = (seen?: (id: JsonRpc.RequestId) => void) => (event: Sse.Event) => {
      if (event.event !== "message" && event.event !== "") return
      if (event.data.length === 0) return // priming events carry no data
      const value = parseJson(event.data)
      if (value === undefined) {
        Runtime.runFork(runtime)(log("warning", "ignored an SSE event whose data is not JSON"))
        return
      }
      deliver(value, seen)
    }

    const execute = (request: HttpClientRequest.HttpClientRequest) =>
      client.execute(request).pipe(
        Effect.mapError((error) =>
          httpError(
            error._tag === "RequestError" ? `could not reach the server: ${error.cause ?? error.reason}` : error.message
          )
        )
      )

    // --- resumption: a dropped stream is picked up with a GET carrying Last-Event-ID ---------
    const resume = (
      lastEventId: string,
      retry: Duration.Duration | undefined,
      done: () => boolean,
      seen: (id: JsonRpc.RequestId) => void
    ): Effect.Effect<void, McpError.McpHttpError> =>
      Effect.gen(function*() {
        let last = lastEventId
        let wait = retry ?? reconnectDelay
        for (let attempt = 0; attempt < 5 && !done() && !closed; attempt++) {
          yield* Effect.sleep(wait)
          const response = yield* execute(
            HttpClientRequest.get(url).pipe(
              HttpClientRequest.setHeaders({ ...headers(false), accept: "text/event-stream", "last-event-id": last })
            )
          )
          if (response.status !== 200) {
            return yield* httpError("the server refused to resume a dropped stream", response.status)
          }
          const outcome = yield* readSse(response, onMessageEvent(seen))
          if (outcome.lastEventId !== undefined) last = outcome.lastEventId
          if (outcome.retry !== undefined) wait = outcome.retry
        }
        if (!done()) return yield* httpError("a dropped stream could not be resumed")
      }).pipe(Effect.scoped)

    // --- one POST --------------------------------------------------------------------------
    const postTo = (target: string, message: JsonRpc.Message) =>
      HttpClientRequest.post(target).pipe(
        HttpClientRequest.setHeaders(headers(isRequest(message) && message.method === "initialize")),
        HttpClientRequest.bodyText(JSON.stringify(message), "application/json")
      )

    const post = (message: JsonRpc.Message, retried = false): Effect.Effect<void, McpError.McpHttpError> =>
      Effect.gen(function*() {
        const id = isRequest(message) ? message.id : undefined
        const stale = staleTask(message)
        if (stale !== undefined) {
          return yield* fail(
            id,
            httpError(`task ${stale} belonged to a session that expired; the server has forgotten it — call the tool again`)
          )
        }
        const isInit = isRequest(message) && message.method === "initialize"
        const usedSession = sessionId
        const response = yield* execute(postTo(legacyEndpoint ?? url, message))
        const session = response.headers["mcp-session-id"]
        if (isInit && session !== undefined) sessionId = session

        if (response.status === 404 && usedSession !== undefined && !isInit && !retried) {
          // The session expired: the spec says start a new one; we retry the message once.
          yield* reinitialize(usedSession)
          return yield* post(message, true)
        }
        if (isInit && legacyEndpoint === undefined && (response.status === 400 || response.status === 404 ||
          response.status === 405))
        {
          yield* log("lifecycle", `initialize got HTTP ${response.status}: trying the legacy HTTP+SSE transport`)
          yield* openLegacy()
          return yield* post(message, true)
        }
        if (response.status === 202 || response.status === 204) return
        if (response.status >= 400) {
          const body = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
          const detail = body.length > 0 && body.length < 300 ? `: ${body}` : ""
          return yield* fail(id, httpError(`${isRequest(message) ? message.method : "a message"} failed${detail}`, response.status))
        }
        if (legacyEndpoint !== undefined) return // legacy: answers come on the SSE stream
        const type = (response.headers["content-type"] ?? "").toLowerCase()
        if (type.startsWith("text/event-stream")) {
          let answered = id === undefined
          const seen = (got: JsonRpc.RequestId) => {
            if (got === id) answered = true
          }
          const outcome = yield* readSse(response, onMessageEvent(seen))
          if (outcome.tooLarge) {
            return yield* Effect.sync(() =>
              incoming.unsafeDone(Exit.fail(new McpError.McpMessageTooLarge({ server, limitBytes: maxBytes })))
            )
          }
          if (!answered && id !== undefined) {
            if (outcome.lastEventId === undefined) {
              return yield* fail(id, httpError("the server closed the stream before it answered"))
            }
            yield* resume(outcome.lastEventId, outcome.retry, () => answered, seen).pipe(
              Effect.catchAll((error) => fail(id, error))
            )
          }
          return
        }
        if (type.startsWith("application/json")) {
          const text = yield* readCapped(response)
          if (text === undefined) {
            return yield* Effect.sync(() =>
              incoming.unsafeDone(Exit.fail(new McpError.McpMessageTooLarge({ server, limitBytes: maxBytes })))
            )
          }
          if (text.trim().length === 0) {
            return yield* fail(id, httpError("the server answered with an empty body", response.status))
          }
          const value = parseJson(text)
          if (value === undefined) return yield* fail(id, httpError("the server answered with a body that is not JSON"))
          return deliver(value)
        }
        if (id !== undefined) {
          return yield* fail(id, httpError(`the server answered with content type '${type || "none"}', not JSON or SSE`))
        }
      }).pipe(Effect.scoped)

    // --- session expiry: a new session, once, for everyone who hit the old one ---------------
    const reinitLock = yield* Effect.makeSemaphore(1)
    const reinitialize = (expired: string) =>
      reinitLock.withPermits(1)(Effect.gen(function*() {
        if (sessionId !== expired || initialize === undefined) return
        sessionId = undefined
        yield* log("lifecycle", "the session expired (HTTP 404): starting a new one")
        const again = JsonRpc.request(`skald-reinitialize-${++reinitCount}`, "initialize", initialize.params)
        const response = yield* execute(postTo(url, again))
        const session = response.headers["mcp-session-id"]
        if (response.status >= 400) return yield* httpError("could not start a new session", response.status)
        if (session !== undefined) sessionId = session
        // Consume the answer ourselves: the engine already initialized.
        const type = (response.headers["content-type"] ?? "").toLowerCase()
        if (type.startsWith("text/event-stream")) yield* readSse(response, () => {})
        else yield* response.text.pipe(Effect.ignore)
        yield* Effect.scoped(execute(postTo(url, JsonRpc.notification("notifications/initialized"))))
        // The new session gets its own GET stream at once (the old one belonged to the old session).
        yield* startListening
      }).pipe(Effect.scoped))

    // --- the GET stream: server-initiated messages, resumed when it drops ---------------------
    const listen = Effect.gen(function*() {
      let lastEventId: string | undefined
      let wait = reconnectDelay
      while (!closed) {
        const response = yield* execute(
          HttpClientRequest.get(url).pipe(
            HttpClientRequest.setHeaders({
              ...headers(false),
              accept: "text/event-stream",
              ...(lastEventId !== undefined ? { "last-event-id": lastEventId } : {})
            })
          )
        )
        if (response.status === 405) return yield* log("lifecycle", "the server offers no GET stream")
        if (response.status !== 200) {
          return yield* log("warning", `the GET stream was refused (HTTP ${response.status}); server pushes are off`)
        }
        const outcome = yield* readSse(response, onMessageEvent())
        if (outcome.lastEventId !== undefined) lastEventId = outcome.lastEventId
        if (outcome.retry !== undefined) wait = outcome.retry
        if (closed) return
        yield* Effect.sleep(wait)
      }
    }).pipe(
      Effect.scoped,
      Effect.catchAll((error) => log("warning", `the GET stream failed: ${error.message}`))
    )

    let listening: Fiber.RuntimeFiber<void, never> | undefined
    const startListening = Effect.gen(function*() {
      if (listening !== undefined) yield* Fiber.interrupt(listening)
      listening = yield* FiberSet.run(fibers, listen)
    })

    // --- legacy HTTP+SSE: GET the stream, wait for its `endpoint`, POST there ------------------
    const openLegacy = () =>
      Effect.gen(function*() {
        const endpoint = yield* Deferred.make<string>()
        const stream = Effect.gen(function*() {
          const response = yield* execute(
            HttpClientRequest.get(url).pipe(HttpClientRequest.setHeaders({ ...headers(false), accept: "text/event-stream" }))
          )
          if (response.status !== 200) {
            return yield* httpError("neither streamable HTTP nor the legacy SSE transport is served here", response.status)
          }
          yield* readSse(response, (event) => {
            if (event.event === "endpoint") Deferred.unsafeDone(endpoint, Exit.succeed(new URL(event.data, url).href))
            else onMessageEvent()(event)
          })
          if (!closed) {
            incoming.unsafeDone(Exit.fail(httpError("the server closed its legacy SSE stream")))
          }
        }).pipe(Effect.scoped)
        yield* FiberSet.run(fibers, stream.pipe(Effect.catchAll((error) =>
          Effect.sync(() => {
            Deferred.unsafeDone(endpoint, Exit.die(error))
            incoming.unsafeDone(Exit.fail(error))
          })
        )))
        legacyEndpoint = yield* Deferred.await(endpoint).pipe(
          Effect.catchAllDefect(() => Effect.fail(httpError("the legacy SSE stream ended before it named an endpoint")))
        )
        yield* log("lifecycle", `legacy HTTP+SSE transport: posting to ${legacyEndpoint}`)
      })

    // --- send ------------------------------------------------------------------------------
    const send = (message: JsonRpc.Message) => {
      if (closed) return
      if (isRequest(message) && message.method === "initialize") initialize = message
      if (isNotification(message) && message.method === "notifications/cancelled") {
        // Abort the cancelled request's own exchange, then tell the server.
        const params = isObject(message.params) ? message.params : {}
        const id = params.requestId
        const fiber = typeof id === "string" || typeof id === "number" ? inflight.get(id) : undefined
        if (fiber !== undefined) Runtime.runFork(runtime)(Fiber.interruptFork(fiber))
      }
      const waitFor = gate
      const opensGate = isNotification(message) && message.method === "notifications/initialized"
      const opened = opensGate ? Deferred.unsafeMake<void>(FiberId.none) : undefined
      if (opened !== undefined) gate = opened
      const work = Effect.gen(function*() {
        if (waitFor !== undefined) yield* Deferred.await(waitFor)
        yield* post(message).pipe(Effect.catchAll((error) => fail(isRequest(message) ? message.id : undefined, error)))
        if (opened !== undefined) {
          Deferred.unsafeDone(opened, Exit.void)
          if (legacyEndpoint === undefined) yield* startListening
        }
      }).pipe(
        Effect.ensuring(Effect.sync(() => {
          if (isRequest(message)) inflight.delete(message.id)
        }))
      )
      const running = Runtime.runFork(runtime)(work)
      FiberSet.unsafeAdd(fibers, running)
      if (isRequest(message)) inflight.set(message.id, running)
      else {
        // Notifications (a last notifications/cancelled) still go out when the scope closes.
        notifying.add(running)
        running.addObserver(() => notifying.delete(running))
      }
    }

    // Closing: stop every exchange, then end the session with a DELETE (bounded).
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        closed = true
        // Let what was already sent — a cancellation, an answer — reach the server, then stop the rest.
        yield* Fiber.awaitAll([...notifying]).pipe(
          Effect.interruptible,
          Effect.timeout(options.closeTimeout ?? "2 seconds"),
          Effect.ignore
        )
        yield* FiberSet.clear(fibers)
        if (sessionId !== undefined && legacyEndpoint === undefined) {
          // Finalizers run uninterruptibly: the DELETE must be interruptible for its bound to hold.
          yield* execute(HttpClientRequest.del(url).pipe(HttpClientRequest.setHeaders(headers(false)))).pipe(
            Effect.scoped,
            Effect.interruptible,
            Effect.timeout(options.closeTimeout ?? "2 seconds"),
            Effect.ignore
          )
        }
      })
    )

    return { server, kind: "http", send, incoming } satisfies Service
  })

/** The HTTP transport as a scoped layer. */
export const layer = (options: Options): Layer.Layer<Transport, never, HttpClient.HttpClient> =>
  Layer.scoped(Transport, make(options))

/** Connects a client to an HTTP server, both living as long as the scope. */
export const client = (
  options: Options,
  clientOptions?: McpClient.Options
): Effect.Effect<McpClient.Service, McpError.McpError, HttpClient.HttpClient | Scope.Scope> =>
  McpClient.make(clientOptions).pipe(Effect.provideServiceEffect(Transport, make(options)))

/** A client of an HTTP server as one scoped layer. */
export const layerClient = (
  options: Options,
  clientOptions?: McpClient.Options
): Layer.Layer<McpClient.McpClient, McpError.McpError, HttpClient.HttpClient> =>
  Layer.scoped(McpClient.McpClient, client(options, clientOptions))
