/**
 * The host's HTTP server (`skald serve`): `GET`/`HEAD /api/mcp-media/{file}` serves the media
 * files the manager saved from tool results (docs/media.md has each guarantee and header); every
 * other `GET`/`HEAD` is the web UI's (http/WebStatic.ts, docs/web.md).
 *
 * - **Every route** goes through {@link guard} (DESIGN §6): the `Host` header must name this
 *   server (its bind address, `localhost` or `127.0.0.1`, with the port) against DNS rebinding,
 *   and a browser `Origin` other than the host's own is refused; no CORS headers are ever sent.
 *   Routes added later (the `/rpc` WebSocket upgrade) get it by being served through {@link serve}.
 * - **Media names** are checked on the raw request path, before any decoding: exactly one segment
 *   of letters, digits, `-` and `_`, a dot, and an extension of letters and digits.
 * - **Media files** are opened with `O_NOFOLLOW`, and served only when they are a regular file
 *   with one link whose real path is directly in the (real, not symlinked) media folder; the
 *   bytes are streamed from the opened handle. So a symbolic or hard link planted in the folder
 *   (by any stdio server: they are given `SKALD_HOME`) never makes the host open another file —
 *   in particular not `skald.db`, whose POSIX locks a second open-and-close would drop.
 * - **Active content is inert**: everything except raster images, audio, video and plain text
 *   is sent with `Content-Security-Policy: default-src 'none'; sandbox` and
 *   `Content-Disposition: attachment`; every response carries `X-Content-Type-Options: nosniff`.
 * - **Limits**: header, request and keep-alive timeouts and a cap on connections, so idle or
 *   half-sent connections cannot exhaust the process's file descriptors.
 *
 * - **`/rpc`**: the RPC WebSocket (rpc/RpcServer.ts) when the serve process gives one; the upgrade
 *   goes through the same guard, so a refused one gets its status and no upgrade. `GET /rpc/auth`
 *   says whether a token is needed and whether the request's Bearer token is it (a page asks first).
 *
 * Listens on `SKALD_HOST` (127.0.0.1) and `SKALD_PORT` (8787). A non-loopback address needs the
 * access token (`SKALD_TOKEN`, docs/rpc.md): without one it is refused.
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { MediaType, RpcProtocol } from "@skald/domain"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import * as WebStatic from "../http/WebStatic.js"
import { isLoopback } from "./Loopback.js"
import { MEDIA_URL_PREFIX } from "./MediaStore.js"
import { Paths } from "./Paths.js"
import * as ServedFile from "./ServedFile.js"

/** A flat media file name: `<id>.<ext>`. */
const mediaName = /^[A-Za-z0-9_-]{1,128}\.[A-Za-z0-9]{1,16}$/

/** The media file a raw request path names, or undefined when it names none. */
export const mediaFileOf = (rawUrl: string): string | undefined => {
  const path = rawUrl.split("?")[0]!
  if (!path.startsWith(MEDIA_URL_PREFIX)) return undefined
  const name = path.slice(MEDIA_URL_PREFIX.length)
  return mediaName.test(name) ? name : undefined
}

/**
 * The content types a browser may show inline from the host's origin: raster images, audio,
 * video and plain text cannot run script. Everything else — HTML, SVG, XML, PDF, JSON, markdown,
 * unknown (`application/octet-stream`) — is sent as an inert download.
 */
export const isInlineSafe = (contentType: string): boolean =>
  (contentType.startsWith("image/") && contentType !== "image/svg+xml") ||
  contentType.startsWith("audio/") ||
  contentType.startsWith("video/") ||
  contentType === "text/plain"

/** The headers of a media response (besides `Content-Type`/`Content-Length` and nosniff). */
export const mediaHeaders = (name: string, contentType: string): Record<string, string> =>
  isInlineSafe(contentType)
    ? { "cache-control": "private, max-age=86400", "content-security-policy": "sandbox" }
    : {
      "cache-control": "private, max-age=86400",
      "content-security-policy": "default-src 'none'; sandbox",
      "content-disposition": `attachment; filename="${name}"`
    }

const notFound = HttpServerResponse.text("not found\n", { status: 404 })

/** Why a file in the media folder is not served (logged as a warning: it was put there on purpose). */
const refuse = ServedFile.refusal("media file")

const fsCall = ServedFile.fsCall

/**
 * Opens a media file for reading, in the request's scope, or gives none. The checks come before
 * the open (so a link to another file is never opened) and again on the opened handle (so a
 * file swapped in between is not served).
 */
const openMedia = Effect.fn("HttpEndpoints.openMedia")(
  function*(mediaDir: string, name: string) {
    const dir = yield* fsCall(() => Fs.promises.lstat(mediaDir))
    if (Option.isNone(dir)) return Option.none()
    if (!dir.value.isDirectory()) {
      return yield* refuse(name, `the media folder ${mediaDir} is not a plain directory (a link?)`)
    }
    const realDir = yield* fsCall(() => Fs.promises.realpath(mediaDir))
    if (Option.isNone(realDir)) return Option.none()
    const file = Path.join(mediaDir, name)
    return yield* ServedFile.open(file, {
      name,
      inside: (real) => Path.dirname(real) === realDir.value,
      outside: "outside the media folder",
      refuse
    })
  }
)

const media = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const paths = yield* Paths
  const name = mediaFileOf(request.url)
  if (name === undefined) return notFound
  const opened = yield* openMedia(paths.mediaDir, name)
  if (Option.isNone(opened)) return notFound
  const { handle, size } = opened.value
  const contentType = MediaType.contentTypeFor(Path.extname(name).slice(1))
  const headers = { ...mediaHeaders(name, contentType), "content-type": contentType, "content-length": String(size) }
  // HEAD: the same headers, no body (and nothing read).
  if (request.method === "HEAD" || size === 0) return HttpServerResponse.empty({ status: 200, headers })
  // Streamed from the opened handle, never re-opened by path; the request's scope closes it.
  return HttpServerResponse.raw(handle.createReadStream({ start: 0, end: size - 1, autoClose: false }), {
    contentType,
    contentLength: size,
    headers: mediaHeaders(name, contentType)
  })
})

/** The routes (served through {@link guard}). */
export const router = HttpRouter.empty.pipe(
  HttpRouter.get(`${MEDIA_URL_PREFIX}*`, media),
  HttpRouter.head(`${MEDIA_URL_PREFIX}*`, media),
  // Last: the web UI's files and pages for GET/HEAD (http/WebStatic.ts), 404 for the rest.
  HttpRouter.all("*", WebStatic.app)
)

/** The `Host` and `Origin` values a server listening on `host:port` accepts. */
export interface Allowed {
  readonly hosts: ReadonlySet<string>
  readonly origins: ReadonlySet<string>
}

/**
 * What {@link guard} accepts for a server bound to `bindHost` on `port`: the bind address,
 * `localhost` and `127.0.0.1` (and `[::1]` when bound there), with the port (without it too when
 * the port is 80), as `Host` values and as `http://` origins.
 */
export const allowedFor = (bindHost: string, port: number): Allowed => {
  const names = new Set(["127.0.0.1", "localhost", bindHost.toLowerCase()])
  const hosts = new Set<string>()
  const origins = new Set<string>()
  for (const name of names) {
    const form = name.includes(":") ? `[${name}]` : name
    hosts.add(`${form}:${port}`)
    origins.add(`http://${form}:${port}`)
    if (port === 80) {
      hosts.add(form)
      origins.add(`http://${form}`)
    }
  }
  return { hosts, origins }
}

const refused = (status: number, text: string) =>
  HttpServerResponse.text(`${text}\n`, { status, headers: { "x-content-type-options": "nosniff" } })

/**
 * The check every route and the WebSocket upgrade go through (DESIGN §6): a `Host` that does not
 * name this server is `421` (DNS rebinding: a page of another site resolved to 127.0.0.1), an
 * `Origin` other than the host's own is `403` (a page of another site driving the host from the
 * person's browser). Requests without an `Origin` (command-line clients) pass. Adds
 * `X-Content-Type-Options: nosniff` to every response.
 */
export const guard = (allowed: Allowed) =>
  HttpMiddleware.make((app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const host = request.headers["host"]?.toLowerCase()
      if (host === undefined || !allowed.hosts.has(host)) {
        yield* Effect.logDebug(`refused a request for Host ${JSON.stringify(host ?? null)}`)
        return refused(421, "refused: the Host header does not name this server")
      }
      const origin = request.headers["origin"]
      if (origin !== undefined && !allowed.origins.has(origin.toLowerCase())) {
        yield* Effect.logDebug(`refused a request from Origin ${JSON.stringify(origin)}`)
        return refused(403, "refused: requests from other origins are not accepted")
      }
      // A pre-response handler: the router writes its response before a middleware would see it.
      yield* HttpApp.appendPreResponseHandler((_, response) =>
        Effect.succeed(HttpServerResponse.setHeader(response, "x-content-type-options", "nosniff"))
      )
      return yield* app
    })
  )

/** Where to listen, and the server's limits (each has a default; tests use short values). */
export interface ListenOptions {
  readonly host: string
  readonly port: number
  /** Time to receive a request's headers (default 10 s); slower connections are closed. */
  readonly headersTimeout?: Duration.DurationInput | undefined
  /** Time to receive a whole request (default 30 s). */
  readonly requestTimeout?: Duration.DurationInput | undefined
  /** How long an idle keep-alive connection stays open between requests (default 60 s). */
  readonly keepAliveTimeout?: Duration.DurationInput | undefined
  /** Connections open at once (default 512); more are closed as they arrive. */
  readonly maxConnections?: number | undefined
  /** The access token; required to listen on a non-loopback address (the RPC app checks it). */
  readonly token?: Redacted.Redacted<string> | undefined
  /** The app served at `/rpc` (the RPC WebSocket), if any. */
  readonly rpc?: HttpApp.Default<never, Scope.Scope | HttpServerRequest.HttpServerRequest> | undefined
  /** The app served at `GET /rpc/auth` (whether a token is needed and accepted), if any. */
  readonly rpcAuth?: HttpApp.Default<never, HttpServerRequest.HttpServerRequest> | undefined
}

/** A bind address other than loopback without an access token. */
export class NonLoopbackBind extends Schema.TaggedError<NonLoopbackBind>("@skald/server/NonLoopbackBind")(
  "NonLoopbackBind",
  { host: Schema.String }
) {
  override get message(): string {
    return `refusing to listen on ${this.host}: a non-loopback address needs an access token (a random value ` +
      "of at least 16 letters, digits, '.', '_', '~' or '-'), or listen on a loopback address (127.0.0.1, the " +
      "default, or ::1)"
  }
}

/** `host:port`, with brackets around an IPv6 address. */
export const formatAddress = (host: string, port: number): string =>
  host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`

/** The server could not listen (the port is taken, the address is not this machine's, …). */
export class ListenFailed extends Schema.TaggedError<ListenFailed>("@skald/server/ListenFailed")(
  "ListenFailed",
  { host: Schema.String, port: Schema.Number, code: Schema.String, reason: Schema.String }
) {
  override get message(): string {
    const address = formatAddress(this.host, this.port)
    switch (this.code) {
      case "EADDRINUSE":
        return `cannot listen on ${address}: the address is already in use (by another program, or another skald host)`
      case "EADDRNOTAVAIL":
        return `cannot listen on ${address}: it is not an address of this machine`
      case "EACCES":
        return `cannot listen on ${address}: permission denied (ports below 1024 need privileges)`
      default:
        // The system's own words; an empty reason still says what failed.
        return `cannot listen on ${address}: ${
          this.reason.trim() === "" ? `the system refused (${this.code || "no code"})` : this.reason
        }`
    }
  }
}

/** True for 127.0.0.0/8, ::1 and localhost (Loopback.ts). */
export { isLoopback }

const millis = (input: Duration.DurationInput | undefined, fallback: Duration.DurationInput) =>
  Math.max(1, Math.round(Duration.toMillis(Duration.decode(input ?? fallback))))

/** How often at most a warning says connections over the cap were refused. */
const DROP_WARNING_EVERY_MS = 10_000

/**
 * A Node HTTP server with the limits of `options`; connections refused over the cap are counted
 * and reported by `warn` (at most every 10 s, by `Clock`).
 */
const createServer = (options: ListenOptions, warn: (effect: Effect.Effect<void>) => void) => () => {
  const headersTimeout = millis(options.headersTimeout, "10 seconds")
  const requestTimeout = Math.max(headersTimeout, millis(options.requestTimeout, "30 seconds"))
  const server = Http.createServer({
    headersTimeout,
    requestTimeout,
    keepAliveTimeout: millis(options.keepAliveTimeout, "60 seconds"),
    // How often Node looks for connections past those timeouts (its default, 30 s, would let a
    // slow connection live that much longer).
    connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(headersTimeout / 4)))
  })
  const cap = options.maxConnections ?? 512
  server.maxConnections = cap
  let dropped = 0
  let warnedAt: number | undefined
  server.on("drop", () => {
    dropped++
    warn(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      if (dropped === 0 || (warnedAt !== undefined && now - warnedAt < DROP_WARNING_EVERY_MS)) return
      warnedAt = now
      const n = dropped
      dropped = 0
      yield* Effect.logWarning(`the HTTP endpoint refused ${n} connection(s): ${cap} were open at once (the cap)`)
    }))
  })
  return server
}

const causeCode = (cause: unknown): { code: string; reason: string } => {
  const error = cause as { code?: unknown; message?: unknown } | undefined
  return {
    code: typeof error?.code === "string" ? error.code : "UNKNOWN",
    reason: typeof error?.message === "string" && error.message.length > 0 ? error.message : String(cause)
  }
}

/**
 * Serves `app` through {@link guard} on the `HttpServer` in context (its bound port decides the
 * accepted `Host` and `Origin` values). Every route of the host's server is served this way.
 */
export const serve = <E, R>(app: HttpApp.Default<E, R>, bindHost: string) =>
  Layer.unwrapEffect(
    HttpServer.addressWith((address) =>
      Effect.succeed(
        HttpServer.serve(app, guard(allowedFor(bindHost, address._tag === "TcpAddress" ? address.port : 0)))
      )
    )
  )

/** The server as a layer; `onListening` gets the URL it listens on (`http://127.0.0.1:8787`). */
export const layer = (
  options: ListenOptions,
  onListening: (url: string) => Effect.Effect<void>
): Layer.Layer<never, ListenFailed | NonLoopbackBind, Paths> =>
  isLoopback(options.host) || options.token !== undefined
    ? Layer.unwrapEffect(Effect.gen(function*() {
      const paths = yield* Paths
      const runFork = Runtime.runFork(yield* Effect.runtime<never>())
      const listening = HttpServer.addressWith((address) =>
        onListening(
          address._tag === "TcpAddress" ? `http://${formatAddress(address.hostname, address.port)}` : address.path
        )
      )
      const withRpc = options.rpc === undefined ? router : HttpRouter.get(router, "/rpc", options.rpc)
      const routes = options.rpcAuth === undefined
        ? withRpc
        : HttpRouter.get(withRpc, RpcProtocol.AUTH_PATH, options.rpcAuth)
      return serve(routes.pipe(Effect.provideService(Paths, paths)), options.host).pipe(
        Layer.merge(Layer.effectDiscard(listening)),
        Layer.provide(
          NodeHttpServer.layer(createServer(options, (effect) => void runFork(effect)), {
            host: options.host,
            port: options.port
          }).pipe(
            Layer.catchAll((error: HttpServerError.ServeError) =>
              Layer.fail(new ListenFailed({ host: options.host, port: options.port, ...causeCode(error.cause) }))
            )
          )
        )
      )
    }))
    : Layer.fail(new NonLoopbackBind({ host: options.host }))
