/**
 * The streamable HTTP transport (MCP 2025-11-25), with the legacy HTTP+SSE fallback. Every
 * message is a POST; answers come back as JSON, as an SSE stream, or on the GET stream. Like the
 * stdio transport it only moves messages: the engine above it is the same.
 *
 * The HTTP is its own (`node:http` / `node:https`, one keep-alive agent per transport, closed with
 * the scope): a request answered with JSON — nearly every call — is posted and read with plain
 * callbacks, no fiber per message; everything else (SSE answers, errors, session expiry, the
 * legacy fallback, the GET stream, resumption, DELETE) runs as Effects whose interruption aborts
 * their exchange. See docs/transports.md and docs/performance.md.
 *
 * @since 0.1.0
 */
import * as Sse from "@effect/experimental/Sse"
import * as McpError from "@skald/domain/McpError"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as DirectDelivery from "./internal/directDelivery.js"
import * as HeapTrim from "./internal/heapTrim.js"
import * as HttpExchange from "./internal/httpExchange.js"
import * as Span from "./internal/span.js"
import * as JsonRpc from "./JsonRpc.js"
import * as McpClient from "./McpClient.js"
import * as McpLog from "./McpLog.js"
import type * as OAuth from "./OAuth.js"
import { DEFAULT_MAX_MESSAGE_BYTES, features } from "./Protocol.js"
import { type Service, Transport } from "./Transport.js"

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
  /** OAuth (see OAuth.ts): asked for the token, and handed every 401/403 challenge. */
  readonly auth?: OAuth.Session | undefined
}

const isRequest = (m: JsonRpc.Message): m is JsonRpc.Request => "method" in m && "id" in m
const isNotification = (m: JsonRpc.Message): m is JsonRpc.Notification => "method" in m && !("id" in m)

const contentType = (response: HttpExchange.Response): string =>
  (HttpExchange.header(response, "content-type") ?? "").toLowerCase()

/** How long opening the GET stream may hold back the next messages (see `startListening`). */
const LISTEN_ANSWER_TIMEOUT = Duration.seconds(1)

/** A request in flight: how to abort its exchange. */
interface Inflight {
  abort: () => void
}

/**
 * Connects to the server; the session lives as long as the scope (closing it aborts every
 * exchange, sends the session's DELETE and closes the connections). Needs no `HttpClient`.
 */
export const make = (options: Options): Effect.Effect<Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    // Large answers' read buffers stay mapped between answers (internal/heapTrim.ts).
    HeapTrim.once()
    const server = options.server
    const url = options.url
    const maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
    const reconnectDelay = Duration.decode(options.reconnectDelay ?? "1 second")
    const closeTimeout = options.closeTimeout ?? "2 seconds"
    const sink = yield* McpLog.McpLogSink
    const log = (tag: McpLog.Tag, text: string) => sink.emit({ server, tag, text })
    const incoming = yield* Mailbox.make<JsonRpc.Incoming, McpError.McpConnectionError>()
    const fibers = yield* FiberSet.make<unknown, never>()
    const runtime = yield* Effect.runtime<never>()
    const runFork = Runtime.runFork(runtime)
    // Registered before the closing finalizer below, so closed after it (after the DELETE).
    const pool = yield* Effect.acquireRelease(
      Effect.sync(HttpExchange.makePool),
      (pool) => Effect.sync(() => HttpExchange.destroyPool(pool))
    )
    const staticKey = options.apiKey === undefined
      ? undefined
      : Redacted.isRedacted(options.apiKey)
      ? options.apiKey
      : Redacted.make(options.apiKey)
    const oauth = yield* oauthState(options, staticKey, log)
    const extraHeaders: Record<string, string> = {}
    for (const [name, value] of Object.entries(options.headers ?? {})) extraHeaders[name.toLowerCase()] = value
    const mainTarget = HttpExchange.target(url)

    // --- session state ------------------------------------------------------------------
    let sessionId: string | undefined
    /** The negotiated version, sent as `MCP-Protocol-Version` (only by revisions that have the header). */
    let protocolVersion: string | undefined
    let initialize: JsonRpc.Request | undefined
    /** Legacy HTTP+SSE: the endpoint the server named in its `endpoint` event. */
    let legacyEndpoint: string | undefined
    let legacyTarget: HttpExchange.Target | Error | undefined
    let closed = false
    /** Requests in flight, by id: how to abort their exchange (on cancellation and on closing). */
    const inflight = new Map<JsonRpc.RequestId, Inflight>()
    /** Notification and answer POSTs under way: closing waits for them (bounded). */
    const notifying = new Set<Fiber.RuntimeFiber<unknown, never>>()
    /** Later messages wait until `notifications/initialized` was accepted (ordering). */
    let gate: Deferred.Deferred<void> | undefined
    let gateOpen = true
    /** A new session is being started: messages wait for it instead of going out without a session. */
    let reinitializing = false
    let reinitCount = 0

    const headers = (forInitialize: boolean): Record<string, string> => ({
      accept: "application/json, text/event-stream",
      ...extraHeaders,
      ...(oauth.bearer !== undefined ? { authorization: `Bearer ${Redacted.value(oauth.bearer)}` } : {}),
      ...(sessionId !== undefined ? { "mcp-session-id": sessionId } : {}),
      ...(!forInitialize && protocolVersion !== undefined ? { "mcp-protocol-version": protocolVersion } : {})
    })
    /** The headers of a POST; those after initialize are built once per session. */
    let postHeadersCache:
      | {
        session?: string | undefined
        version?: string | undefined
        bearer?: Redacted.Redacted<string> | undefined
        headers: HttpExchange.Headers
      }
      | undefined
    const postHeaders = (forInitialize: boolean): HttpExchange.Headers => {
      if (forInitialize) return { ...headers(true), "content-type": "application/json" }
      const cached = postHeadersCache
      if (
        cached !== undefined && cached.session === sessionId && cached.version === protocolVersion &&
        cached.bearer === oauth.bearer
      ) {
        return cached.headers
      }
      const fresh = { ...headers(false), "content-type": "application/json" }
      postHeadersCache = { session: sessionId, version: protocolVersion, bearer: oauth.bearer, headers: fresh }
      return fresh
    }
    const postTarget = () => legacyTarget ?? mainTarget

    // What arrives reaches the engine in batches, one per event-loop turn: under load many answers
    // arrive in one turn, and the engine's reader then wakes once for all of them. An answer to the
    // only request in flight is offered to the engine directly instead (internal/directDelivery.ts,
    // `receiver`): a caller that waits alone goes on at once, not after the turn.
    let receiver: DirectDelivery.Receiver | undefined
    let batch: Array<JsonRpc.Incoming> = []
    let flushing = false
    const flush = () => {
      flushing = false
      if (batch.length === 0) return
      const out = batch
      batch = []
      incoming.unsafeOfferAll(out)
    }
    const offer = (message: JsonRpc.Incoming) => {
      receiver?.queued()
      batch.push(message)
      if (!flushing) {
        flushing = true
        setImmediate(flush)
      }
    }
    /** Ends the connection, after what already arrived. */
    const end = (error: McpError.McpConnectionError) => {
      flush()
      incoming.unsafeDone(Exit.fail(error))
    }
    const undelivered = (id: JsonRpc.RequestId, error: McpError.McpError) => offer({ _tag: "Undelivered", id, error })
    const fail = (id: JsonRpc.RequestId | undefined, error: McpError.McpError) =>
      id === undefined ? log("warning", error.message) : Effect.sync(() => undelivered(id, error))
    const tooLarge = () => end(new McpError.McpMessageTooLarge({ server, limitBytes: maxBytes }))

    const httpError = (reason: string, status?: number, oauth?: McpError.OAuthFailure) =>
      new McpError.McpHttpError({
        server,
        url,
        reason,
        ...(status !== undefined ? { status } : {}),
        ...(oauth !== undefined ? { oauth } : {})
      })
    const unreachable = (error: Error) => httpError(`could not reach the server: ${String(error)}`)
    const exchange = (to: HttpExchange.Target | Error, method: string, headers: HttpExchange.Headers, body?: string) =>
      HttpExchange.exchange(pool, to, method, headers, body).pipe(Effect.mapError(unreachable))

    // Tasks live in the session that created them: after a new session, the old ones are gone.
    const taskSessions = new Map<string, string | undefined>()
    const noteTask = (result: unknown) => {
      if (!Predicate.isRecord(result)) return
      const task = Predicate.isRecord(result.task) ? result.task : result
      if (typeof task.taskId === "string" && typeof task.status === "string") taskSessions.set(task.taskId, sessionId)
    }
    const staleTask = (message: JsonRpc.Message): string | undefined => {
      if (
        !isRequest(message) || !message.method.startsWith("tasks/") || !Predicate.isRecord(message.params)
      ) return undefined
      const taskId = message.params.taskId
      if (typeof taskId !== "string" || !taskSessions.has(taskId)) return undefined
      return taskSessions.get(taskId) !== sessionId ? taskId : undefined
    }

    /** Hands one parsed JSON value (a message or a batch) to the engine. */
    const deliver = (value: unknown, seen?: (id: JsonRpc.RequestId) => void) => {
      for (const item of Array.isArray(value) ? value : [value]) {
        const message = JsonRpc.classify(item)
        if (message === undefined) {
          runFork(log("warning", "ignored a value that is not a JSON-RPC 2.0 message"))
          continue
        }
        if (message._tag === "Response") {
          const id = message.message.id
          if (id !== null) seen?.(id)
          if (initialize !== undefined && id === initialize.id && "result" in message.message) {
            const result = message.message.result
            // The header exists since 2025-06-18; an older server gets none (it would not expect it).
            if (Predicate.isRecord(result) && typeof result.protocolVersion === "string") {
              protocolVersion = features(result.protocolVersion).versionHeader ? result.protocolVersion : undefined
            }
          } else if ("result" in message.message && Predicate.isRecord(message.message.result)) {
            const result = message.message.result
            if ("task" in result || "taskId" in result) noteTask(result)
          }
          // Alone: its own entry is gone (a JSON answer's exchange ends before it is delivered).
          if (inflight.size === 0 && receiver !== undefined && receiver.response(message.message)) continue
        }
        offer(message)
      }
    }

    const parseJson = (text: string): unknown | undefined => {
      try {
        return JSON.parse(text)
      } catch {
        return undefined
      }
    }

    /** A JSON answer's body (`undefined`: over the limit): delivered, or what was wrong with it. */
    const onJsonBody = (status: number, body: Buffer | undefined): McpError.McpHttpError | undefined => {
      if (body === undefined) {
        tooLarge()
        return undefined
      }
      const text = body.toString("utf8")
      const value = parseJson(text)
      if (value === undefined) {
        return text.trim().length === 0
          ? httpError("the server answered with an empty body", status)
          : httpError("the server answered with a body that is not JSON")
      }
      deliver(value)
      return undefined
    }

    /** Reads an SSE body; calls `onEvent` with each event. Ends with the last event id and retry hint. */
    const readSse = (response: HttpExchange.Response, onEvent: (event: Sse.Event) => void) =>
      Effect.suspend(() => {
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
        return HttpExchange.readEach(response, (bytes) => {
          bytesSinceEvent += bytes.length
          if (
            bytesSinceEvent > maxBytes || parser.feed(decoder.decode(bytes, { stream: true })) !== undefined || tooLarge
          ) {
            tooLarge = true
            return false
          }
          return true
        }).pipe(Effect.map(() => ({ lastEventId, retry, tooLarge })))
      })

    const onMessageEvent = (seen?: (id: JsonRpc.RequestId) => void) => (event: Sse.Event) => {
      if (event.event !== "message" && event.event !== "") return
      if (event.data.length === 0) return // priming events carry no data
      const value = parseJson(event.data)
      if (value === undefined) {
        runFork(log("warning", "ignored an SSE event whose data is not JSON"))
        return
      }
      deliver(value, seen)
    }

    const sseHeaders = (lastEventId: string | undefined): HttpExchange.Headers => ({
      ...headers(false),
      accept: "text/event-stream",
      ...(lastEventId !== undefined ? { "last-event-id": lastEventId } : {})
    })

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
          const outcome = yield* Effect.scoped(Effect.gen(function*() {
            const response = yield* exchange(mainTarget, "GET", sseHeaders(last))
            if (response.statusCode !== 200) {
              return yield* httpError("the server refused to resume a dropped stream", response.statusCode)
            }
            return yield* readSse(response, onMessageEvent(seen))
          }))
          if (outcome.lastEventId !== undefined) last = outcome.lastEventId
          if (outcome.retry !== undefined) wait = outcome.retry
        }
        if (!done()) return yield* httpError("a dropped stream could not be resumed")
      })

    // --- one POST, in Effect (everything but a request answered with JSON) -------------------
    const post = (
      message: JsonRpc.Message,
      retried = false,
      authAttempts = 0
    ): Effect.Effect<void, McpError.McpHttpError> =>
      Effect.gen(function*() {
        const id = isRequest(message) ? message.id : undefined
        const stale = staleTask(message)
        if (stale !== undefined) {
          return yield* fail(
            id,
            httpError(
              `task ${stale} belonged to a session that expired; the server has forgotten it — call the tool again`
            )
          )
        }
        const isInit = isRequest(message) && message.method === "initialize"
        const usedSession = sessionId
        yield* oauth.refreshIfDue
        const response = yield* exchange(
          postTarget(),
          "POST",
          Span.withTraceparent(postHeaders(isInit), message),
          JSON.stringify(message)
        )
        return yield* respond(message, response, usedSession, retried, authAttempts)
      }).pipe(Effect.scoped)

    /** Handles the answer to a POST of `message` (its body is read here, or released by the caller). */
    const respond = (
      message: JsonRpc.Message,
      response: HttpExchange.Response,
      usedSession: string | undefined,
      retried: boolean,
      authAttempts = 0
    ): Effect.Effect<void, McpError.McpHttpError> =>
      Effect.gen(function*() {
        const id = isRequest(message) ? message.id : undefined
        const isInit = isRequest(message) && message.method === "initialize"
        const status = response.statusCode ?? 0
        const session = HttpExchange.header(response, "mcp-session-id")
        if (isInit && session !== undefined) sessionId = session

        if (oauth.handles(status, authAttempts)) {
          // Unauthorized, or a scope to step up to: authorize (bounded), then send the message again.
          const challenge = HttpExchange.header(response, "www-authenticate")
          HttpExchange.release(response)
          const refused = yield* oauth.answer(status, challenge)
          if (refused !== undefined) return yield* fail(id, httpError(refused.reason, status, refused.oauth))
          return yield* post(message, retried, authAttempts + 1)
        }

        if (status === 404 && usedSession !== undefined && !isInit && !retried) {
          // The session expired: the spec says start a new one; we retry the message once.
          HttpExchange.release(response)
          yield* reinitialize(usedSession)
          return yield* post(message, true)
        }
        if (isInit && legacyEndpoint === undefined && (status === 400 || status === 404 || status === 405)) {
          HttpExchange.release(response)
          yield* log("lifecycle", `initialize got HTTP ${status}: trying the legacy HTTP+SSE transport`)
          yield* openLegacy()
          return yield* post(message, true)
        }
        if (status === 202 || status === 204) return
        if (status >= 400) {
          const body = (yield* HttpExchange.readCapped(response, 64 * 1024))?.toString("utf8") ?? ""
          const detail = body.length > 0 && body.length < 300 ? `: ${body}` : ""
          return yield* fail(
            id,
            httpError(`${isRequest(message) ? message.method : "a message"} failed${detail}`, status)
          )
        }
        if (legacyEndpoint !== undefined) return // legacy: answers come on the SSE stream
        const type = contentType(response)
        if (type.startsWith("text/event-stream")) {
          let answered = id === undefined
          const seen = (got: JsonRpc.RequestId) => {
            if (got === id) answered = true
          }
          const outcome = yield* readSse(response, onMessageEvent(seen))
          if (outcome.tooLarge) return tooLarge()
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
          const error = onJsonBody(status, yield* HttpExchange.readCapped(response, maxBytes))
          if (error !== undefined) return yield* fail(id, error)
          return
        }
        if (id !== undefined) {
          return yield* fail(
            id,
            httpError(`the server answered with content type '${type || "none"}', not JSON or SSE`)
          )
        }
      })

    // --- one request, with callbacks: the hot path -----------------------------------------
    /**
     * Posts a request once the session is settled. A JSON answer is read and delivered right in
     * the response callbacks; anything else is handed to `respond`, in a fiber of its own.
     */
    const postFast = (message: JsonRpc.Request, to: HttpExchange.Target) => {
      const id = message.id
      const usedSession = sessionId
      let aborted = false
      let handler: Fiber.RuntimeFiber<void, never> | undefined
      const entry: Inflight = { abort: () => {} }
      const done = () => {
        if (inflight.get(id) === entry) inflight.delete(id)
      }
      const exchange = HttpExchange.start(
        pool,
        to,
        "POST",
        Span.withTraceparent(postHeaders(false), message),
        JSON.stringify(message),
        (response) => {
          if (closed) return void response.destroy()
          const status = response.statusCode ?? 0
          if (
            status >= 200 && status < 300 && status !== 202 && status !== 204 && legacyEndpoint === undefined &&
            contentType(response).startsWith("application/json")
          ) {
            return HttpExchange.collect(response, maxBytes, (body) => {
              done()
              if (aborted || closed) return
              const error = onJsonBody(status, body)
              if (error !== undefined) undelivered(id, error)
            })
          }
          if (status === 202 || status === 204) {
            HttpExchange.release(response)
            return done()
          }
          handler = runFork(
            respond(message, response, usedSession, false).pipe(
              Effect.catchAll((error) => fail(id, error)),
              Effect.ensuring(Effect.sync(() => {
                HttpExchange.release(response)
                done()
              }))
            )
          )
          FiberSet.unsafeAdd(fibers, handler)
        },
        (error) => {
          done()
          if (!closed) undelivered(id, unreachable(error))
        }
      )
      entry.abort = () => {
        aborted = true
        exchange.abort()
        handler?.unsafeInterruptAsFork(FiberId.none)
        done()
      }
      inflight.set(id, entry)
    }

    // --- session expiry: a new session, once, for everyone who hit the old one ---------------
    const reinitLock = yield* Effect.makeSemaphore(1)
    const reinitialize = (expired: string) =>
      reinitLock.withPermits(1)(
        Effect.gen(function*() {
          if (sessionId !== expired || initialize === undefined) return
          reinitializing = true
          sessionId = undefined
          yield* log("lifecycle", "the session expired (HTTP 404): starting a new one")
          const again = JsonRpc.request(`skald-reinitialize-${++reinitCount}`, "initialize", initialize.params)
          const response = yield* exchange(mainTarget, "POST", postHeaders(true), JSON.stringify(again))
          const session = HttpExchange.header(response, "mcp-session-id")
          const status = response.statusCode ?? 0
          if (status >= 400) return yield* httpError("could not start a new session", status)
          if (session !== undefined) sessionId = session
          // Consume the answer ourselves: the engine already initialized.
          if (contentType(response).startsWith("text/event-stream")) yield* readSse(response, () => {})
          else yield* HttpExchange.readCapped(response, maxBytes)
          yield* Effect.scoped(
            exchange(
              mainTarget,
              "POST",
              postHeaders(false),
              JSON.stringify(JsonRpc.notification("notifications/initialized"))
            )
          )
          // The new session gets its own GET stream at once (the old one belonged to the old session).
          yield* startListening
        }).pipe(
          Effect.scoped,
          Effect.ensuring(Effect.sync(() => {
            reinitializing = false
          }))
        )
      )

    // --- the GET stream: server-initiated messages, resumed when it drops ---------------------
    /** The GET stream's loop; `answered` is completed once the server answered (or refused) it. */
    const listen = (answered: Deferred.Deferred<void>) =>
      Effect.gen(function*() {
        let lastEventId: string | undefined
        let wait = reconnectDelay
        while (!closed) {
          const outcome = yield* Effect.scoped(Effect.gen(function*() {
            const response = yield* exchange(mainTarget, "GET", sseHeaders(lastEventId))
            Deferred.unsafeDone(answered, Exit.void)
            if (response.statusCode === 405) {
              yield* log("lifecycle", "the server offers no GET stream")
              return undefined
            }
            if (response.statusCode !== 200) {
              yield* log("warning", `the GET stream was refused (HTTP ${response.statusCode}); server pushes are off`)
              return undefined
            }
            return yield* readSse(response, onMessageEvent())
          }))
          if (outcome === undefined) return
          if (outcome.lastEventId !== undefined) lastEventId = outcome.lastEventId
          if (outcome.retry !== undefined) wait = outcome.retry
          if (closed) return
          yield* Effect.sleep(wait)
        }
      }).pipe(
        Effect.catchAll((error) => log("warning", `the GET stream failed: ${error.message}`)),
        Effect.ensuring(Effect.sync(() => Deferred.unsafeDone(answered, Exit.void)))
      )

    let listening: Fiber.RuntimeFiber<void, never> | undefined
    /**
     * Opens the GET stream (a new one replaces the last), and returns once the server answered it
     * — bounded by `LISTEN_ANSWER_TIMEOUT` — so a push the server sends while handling the next
     * request finds the stream there.
     */
    const startListening = Effect.gen(function*() {
      if (listening !== undefined) yield* Fiber.interrupt(listening)
      const answered = yield* Deferred.make<void>()
      listening = yield* FiberSet.run(fibers, listen(answered))
      yield* Deferred.await(answered).pipe(Effect.timeout(LISTEN_ANSWER_TIMEOUT), Effect.ignore)
    })

    // --- legacy HTTP+SSE: GET the stream, wait for its `endpoint`, POST there ------------------
    const openLegacy = () =>
      Effect.gen(function*() {
        const endpoint = yield* Deferred.make<string>()
        const stream = Effect.gen(function*() {
          const response = yield* exchange(mainTarget, "GET", { ...headers(false), accept: "text/event-stream" })
          if (response.statusCode !== 200) {
            return yield* httpError(
              "neither streamable HTTP nor the legacy SSE transport is served here",
              response.statusCode
            )
          }
          yield* readSse(response, (event) => {
            if (event.event === "endpoint") Deferred.unsafeDone(endpoint, Exit.succeed(new URL(event.data, url).href))
            else onMessageEvent()(event)
          })
          if (!closed) end(httpError("the server closed its legacy SSE stream"))
        }).pipe(Effect.scoped)
        yield* FiberSet.run(
          fibers,
          stream.pipe(Effect.catchAll((error) =>
            Effect.sync(() => {
              Deferred.unsafeDone(endpoint, Exit.die(error))
              end(error)
            })
          ))
        )
        const named = yield* Deferred.await(endpoint).pipe(
          Effect.catchAllDefect(() => Effect.fail(httpError("the legacy SSE stream ended before it named an endpoint")))
        )
        legacyEndpoint = named
        legacyTarget = HttpExchange.target(named)
        yield* log("lifecycle", `legacy HTTP+SSE transport: posting to ${legacyEndpoint}`)
      })

    // --- send ------------------------------------------------------------------------------
    const send = (message: JsonRpc.Message) => {
      if (closed) return
      if (isRequest(message)) {
        if (message.method === "initialize") initialize = message
        else if (gateOpen && !reinitializing && staleTask(message) === undefined && !oauth.due()) {
          const to = postTarget()
          if (!(to instanceof Error)) return postFast(message, to)
        }
      }
      if (isNotification(message) && message.method === "notifications/cancelled") {
        // Abort the cancelled request's own exchange, then tell the server.
        const params = Predicate.isRecord(message.params) ? message.params : {}
        const id = params.requestId
        if (typeof id === "string" || typeof id === "number") inflight.get(id)?.abort()
      }
      const waitFor = gate
      const opensGate = isNotification(message) && message.method === "notifications/initialized"
      const opened = opensGate ? Deferred.unsafeMake<void>(FiberId.none) : undefined
      if (opened !== undefined) {
        gate = opened
        gateOpen = false
      }
      const work = Effect.gen(function*() {
        if (waitFor !== undefined) yield* Deferred.await(waitFor)
        if (reinitializing) yield* reinitLock.withPermits(1)(Effect.void)
        yield* post(message).pipe(Effect.catchAll((error) => fail(isRequest(message) ? message.id : undefined, error)))
        if (opened !== undefined) {
          if (legacyEndpoint === undefined) yield* startListening
          Deferred.unsafeDone(opened, Exit.void)
          if (gate === opened) gateOpen = true
        }
      })
      if (isRequest(message)) {
        let running: Fiber.RuntimeFiber<void, never> | undefined
        const entry: Inflight = { abort: () => running?.unsafeInterruptAsFork(FiberId.none) }
        inflight.set(message.id, entry)
        running = runFork(work.pipe(Effect.ensuring(Effect.sync(() => {
          if (inflight.get(message.id) === entry) inflight.delete(message.id)
        }))))
        FiberSet.unsafeAdd(fibers, running)
      } else {
        // Notifications (a last notifications/cancelled) still go out when the scope closes.
        const running = runFork(work)
        FiberSet.unsafeAdd(fibers, running)
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
          Effect.timeout(closeTimeout),
          Effect.ignore
        )
        yield* FiberSet.clear(fibers)
        for (const entry of [...inflight.values()]) entry.abort()
        inflight.clear()
        if (sessionId !== undefined && legacyEndpoint === undefined) {
          // Finalizers run uninterruptibly: the DELETE must be interruptible for its bound to hold.
          yield* exchange(mainTarget, "DELETE", headers(false)).pipe(
            Effect.scoped,
            Effect.interruptible,
            Effect.timeout(closeTimeout),
            Effect.ignore
          )
        }
      })
    )

    const service = { server, kind: "http", send, incoming, sessionId: () => sessionId } satisfies Service
    return DirectDelivery.offer(service, (r) => {
      // What is batched but not yet in `incoming` goes there first, so the engine counts it.
      flush()
      receiver = r
    })
  })

/** The transport's authorization: a static key, or an OAuth session's current token. */
interface OAuthState {
  bearer: Redacted.Redacted<string> | undefined
  /** Whether a response with `status` is the session's to answer (after `attempts` tries). */
  readonly handles: (status: number, attempts: number) => boolean
  /** Answers a challenge: undefined when a new token is in place, else why not. */
  readonly answer: (
    status: number,
    challenge: string | undefined
  ) => Effect.Effect<{ readonly reason: string; readonly oauth?: McpError.OAuthFailure } | undefined>
  /** Renews the token before it expires (a no-op without OAuth). */
  readonly refreshIfDue: Effect.Effect<void>
  /** Whether the token is due for renewal (then messages take the Effect path, which renews it). */
  readonly due: () => boolean
}

const oauthState = (
  options: Options,
  staticKey: Redacted.Redacted<string> | undefined,
  log: (tag: McpLog.Tag, text: string) => Effect.Effect<void>
): Effect.Effect<OAuthState> =>
  Effect.gen(function*() {
    const session = options.auth
    const clock = yield* Effect.clock
    const state: OAuthState = {
      due: () => session !== undefined && session.due(clock.unsafeCurrentTimeMillis()),
      bearer: staticKey,
      handles: (status, attempts) =>
        session !== undefined && (status === 401 || status === 403) && attempts < session.maxAttempts,
      answer: (status, challenge) =>
        session === undefined ?
          Effect.succeed({ reason: "not authorized" }) :
          session.challenge(status, challenge).pipe(
            Effect.map((token) => {
              state.bearer = Redacted.make(token)
              return undefined
            }),
            // The reason goes into the request's error (logging it too would say it twice), marked
            // as OAuth's so that no one is told to check an api key.
            Effect.catchAll((error) =>
              Effect.succeed(
                error._tag === "OAuthRefreshFailed"
                  ? { reason: error.reason, oauth: "expired" as const }
                  : error._tag === "OAuthAuthorizationRequired"
                  ? { reason: error.message, oauth: "required" as const }
                  : error.unadvertised === true
                  ? { reason: error.message } // no OAuth metadata: the server may want an api key
                  : {
                    reason: error.reason,
                    oauth: error.clientRefused === true ? "client" as const : "failed" as const
                  }
              )
            )
          ),
      refreshIfDue: session === undefined ? Effect.void : session.token.pipe(
        Effect.map((token) => {
          if (token !== undefined && (state.bearer === undefined || Redacted.value(state.bearer) !== token)) {
            state.bearer = Redacted.make(token)
          }
        }),
        Effect.catchAll((error) => log("warning", error.message))
      )
    }
    yield* state.refreshIfDue
    return state
  })

/** The HTTP transport as a scoped layer. */
export const layer = (options: Options): Layer.Layer<Transport> => Layer.scoped(Transport, make(options))

/** Connects a client to an HTTP server, both living as long as the scope. */
export const client = (
  options: Options,
  clientOptions?: McpClient.Options
): Effect.Effect<McpClient.Service, McpError.McpError, Scope.Scope> =>
  McpClient.make(clientOptions).pipe(Effect.provideServiceEffect(Transport, make(options)))

/** A client of an HTTP server as one scoped layer. */
export const layerClient = (
  options: Options,
  clientOptions?: McpClient.Options
): Layer.Layer<McpClient.McpClient, McpError.McpError> =>
  Layer.scoped(McpClient.McpClient, client(options, clientOptions))
