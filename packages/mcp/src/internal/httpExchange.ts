/**
 * The HTTP under `HttpTransport`: `node:http` / `node:https` with one keep-alive agent per
 * transport, at two levels — callbacks for the transport's hot path (a POST answered with JSON,
 * no fiber per message), and Effects for everything else (a scoped exchange whose interruption
 * aborts it, capped body reads, chunk-by-chunk reads for SSE).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Url from "node:url"
import * as Finalizer from "./finalizer.js"

export type Headers = Readonly<Record<string, string>>
export type Response = Http.IncomingMessage

/** A URL, parsed once into request options. */
export interface Target {
  readonly hostname: string
  readonly port: number
  readonly path: string
  readonly auth: string | undefined
  readonly secure: boolean
}

/** Parses `url`; an `Error` when it is not an absolute http(s) URL. */
export const target = (url: string): Target | Error => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return new Error(`invalid URL ${JSON.stringify(url)}`)
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return new Error(`unsupported protocol ${parsed.protocol} (http: or https: only)`)
  }
  const options = Url.urlToHttpOptions(parsed)
  const secure = parsed.protocol === "https:"
  return {
    hostname: options.hostname ?? "localhost",
    port: Number(options.port ?? (secure ? 443 : 80)),
    path: options.path ?? "/",
    auth: options.auth ?? undefined,
    secure
  }
}

/**
 * Idle keep-alive connections are closed after this long (or 1 s before the server's
 * `Keep-Alive: timeout=` hint, when that is shorter), so a request is not sent on a connection
 * the server is closing at the same moment.
 */
const IDLE_TIMEOUT_MS = 4_000

/** The connections of one transport. */
export interface Pool {
  readonly http: Http.Agent
  readonly https: Https.Agent
}

export const makePool = (): Pool => ({
  http: new Http.Agent({ keepAlive: true, timeout: IDLE_TIMEOUT_MS }),
  https: new Https.Agent({ keepAlive: true, timeout: IDLE_TIMEOUT_MS })
})

/** Closes every connection, in use or idle. */
export const destroyPool = (pool: Pool): void => {
  pool.http.destroy()
  pool.https.destroy()
}

/** One request under way; `abort` ends it (the connection is destroyed, not reused). */
export interface Exchange {
  readonly abort: () => void
}

/**
 * Starts one request. Exactly one of `onResponse` (with the status line and headers; the body is
 * the callee's to read or release) and `onError` is called, and neither after `abort`.
 */
export const start = (
  pool: Pool,
  to: Target,
  method: string,
  headers: Headers,
  body: string | undefined,
  onResponse: (response: Response) => void,
  onError: (error: Error) => void
): Exchange => {
  let settled = false
  let response: Response | undefined
  // A small plain object: Node copies the options twice per request (the request, the agent).
  const options: Http.RequestOptions = to.auth === undefined
    ? {
      hostname: to.hostname,
      port: to.port,
      path: to.path,
      method,
      headers,
      agent: to.secure ? pool.https : pool.http
    }
    : {
      hostname: to.hostname,
      port: to.port,
      path: to.path,
      auth: to.auth,
      method,
      headers,
      agent: to.secure ? pool.https : pool.http
    }
  let request: Http.ClientRequest
  try {
    request = (to.secure ? Https : Http).request(options)
  } catch (error) {
    // Headers Node refuses (a bad character in a configured header) throw here: fail like the network.
    process.nextTick(() => {
      if (!settled) {
        settled = true
        onError(error instanceof Error ? error : new Error(String(error)))
      }
    })
    return {
      abort: () => {
        settled = true
      }
    }
  }
  request.on("response", (res) => {
    if (settled) return void res.destroy()
    settled = true
    response = res
    onResponse(res)
  })
  request.on("error", (error) => {
    if (settled) return
    settled = true
    onError(error)
  })
  // With the whole body given to `end` before any header went out, Node sets Content-Length.
  request.end(body)
  return {
    abort: () => {
      settled = true
      response?.destroy()
      request.destroy()
    }
  }
}

/** A response header as one string (repeated headers joined, as Node does for unknown ones). */
export const header = (response: Response, name: string): string | undefined => {
  const value = response.headers[name]
  return value === undefined ? undefined : Array.isArray(value) ? value.join(", ") : value
}

/** Lets go of a response: drains what remains of a complete body (the connection is reused), else destroys it. */
export const release = (response: Response): void => {
  if (response.readableEnded || response.destroyed) return
  if (response.complete) response.resume()
  else response.destroy()
}

/**
 * Reads a body up to `maxBytes`, with callbacks. `onBody` gets the bytes, or `undefined` once past
 * the limit (reading stops there and the connection is destroyed). A body cut short ends with
 * what arrived.
 */
export const collect = (response: Response, maxBytes: number, onBody: (body: Buffer | undefined) => void): void => {
  let first: Buffer | undefined
  let chunks: Array<Buffer> | undefined
  let size = 0
  let done = false
  const finish = () => {
    if (done) return
    done = true
    onBody(chunks !== undefined ? Buffer.concat(chunks, size) : first ?? Buffer.alloc(0))
  }
  // A response destroyed before anyone listened (its connection dropped) would never end.
  if (response.destroyed) return finish()
  response.on("data", (chunk: Buffer) => {
    if (done) return
    size += chunk.length
    if (size > maxBytes) {
      done = true
      response.destroy()
      return onBody(undefined)
    }
    if (first === undefined) first = chunk
    else if (chunks === undefined) chunks = [first, chunk]
    else chunks.push(chunk)
  })
  response.on("end", finish)
  response.on("error", finish)
  response.on("close", finish)
}

/** Starts a request; the response is released when the scope closes; interruption aborts it. */
export const exchange = (
  pool: Pool,
  to: Target | Error,
  method: string,
  headers: Headers,
  body?: string
): Effect.Effect<Response, Error, Scope.Scope> =>
  to instanceof Error ? Effect.fail(to) : Finalizer.acquireRelease(
    Effect.interruptible(Effect.async<Response, Error>((resume) => {
      const exchange = start(
        pool,
        to,
        method,
        headers,
        body,
        (response) => resume(Effect.succeed(response)),
        (error) => resume(Effect.fail(error))
      )
      return Effect.sync(exchange.abort)
    })),
    (response) => Effect.sync(() => release(response))
  )

/** `collect` as an Effect; interruption destroys the response. */
export const readCapped = (response: Response, maxBytes: number): Effect.Effect<Buffer | undefined> =>
  Effect.async<Buffer | undefined>((resume) => {
    collect(response, maxBytes, (body) => resume(Effect.succeed(body)))
    return Effect.sync(() => void response.destroy())
  })

/**
 * Hands each chunk of a body to `onChunk` until it returns false (then the response is destroyed)
 * or the body ends, however it ends. Interruption destroys the response.
 */
export const readEach = (response: Response, onChunk: (chunk: Buffer) => boolean): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    let done = false
    const finish = () => {
      if (done) return
      done = true
      resume(Effect.void)
    }
    if (response.destroyed) return void finish()
    response.on("data", (chunk: Buffer) => {
      if (done) return
      if (!onChunk(chunk)) {
        response.destroy()
        finish()
      }
    })
    response.on("end", finish)
    response.on("error", finish)
    response.on("close", finish)
    return Effect.sync(() => void response.destroy())
  })
