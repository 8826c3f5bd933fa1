/**
 * The web UI's static files (`GET`/`HEAD /…` of `skald serve`; docs/web.md): the files Vite built
 * into `packages/web/dist` (or `SKALD_WEB_DIR`), with the media endpoint's traversal rules, and
 * `index.html` for every other page path (the app routes in the browser).
 *
 * - **Names** are checked on the raw request path, before any decoding: at most four segments of
 *   letters, digits, `.`, `-` and `_`, none starting with a dot (so no `..`, no dotfiles). A
 *   percent-escape, a backslash, an empty segment inside the path (`//x`) is a plain `404`.
 * - **Files** are served only when every folder on the way is, by `lstat`, a plain directory (not a
 *   link) and the file a regular file with one link whose real path is inside the real web folder;
 *   it is opened with `O_NOFOLLOW` and checked again on the handle (the bytes come from that handle).
 * - **Page paths** (no dot in the last segment: `/`, `/servers`, `/chat/abc`) get `index.html`;
 *   `/api/…` and `/rpc` are never answered here (their own routes win; anything left there is 404).
 * - **Headers**: a Content-Security-Policy fitting the app ({@link contentSecurityPolicy}),
 *   `no-cache` for the HTML, a year (`immutable`) for Vite's hashed `/assets/`, and no framing.
 *
 * A web folder without `index.html` answers `503` saying how to build it.
 *
 * @since 0.1.0
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as ServedFile from "../host/ServedFile.js"

/** The folder Vite builds into: `packages/web/dist` of this repository (from src/http or dist/http). */
export const defaultWebDir = (): string => fileURLToPath(new URL("../../../web/dist", import.meta.url))

/** The web folder: `SKALD_WEB_DIR` when set, else {@link defaultWebDir}. */
export const webDir: Effect.Effect<string> = Config.option(Config.nonEmptyString("SKALD_WEB_DIR")).pipe(
  Effect.map(Option.getOrElse(defaultWebDir)),
  Effect.orElseSucceed(defaultWebDir)
)

/** One path segment of a servable file. */
const segment = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/

/** The paths another route owns: never a page, never a file here. */
const reserved = /^\/(api|rpc)(\/|$)/

/** What a raw request path asks this route for. */
export type Target =
  | { readonly _tag: "File"; readonly segments: ReadonlyArray<string> }
  | { readonly _tag: "Page" }
  | { readonly _tag: "None" }

/**
 * Reads a raw request path (`/assets/index-x.js?v=1`): a file of the web folder, a page path (to
 * be answered with `index.html`) or nothing (`404`).
 */
export const targetOf = (rawUrl: string): Target => {
  const path = rawUrl.split("?")[0]!.split("#")[0]!
  if (!path.startsWith("/") || reserved.test(path)) return { _tag: "None" }
  if (path === "/") return { _tag: "Page" }
  // A trailing slash is a page path's (`/servers/`), never a file's.
  const trailing = path.endsWith("/")
  const segments = path.slice(1, trailing ? -1 : undefined).split("/")
  if (segments.length > 4 || !segments.every((s) => segment.test(s))) return { _tag: "None" }
  if (trailing || !segments[segments.length - 1]!.includes(".")) return { _tag: "Page" }
  return { _tag: "File", segments }
}

/** The content types of what Vite emits (anything else is an inert download). */
const contentTypes: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  json: "application/json",
  map: "application/json",
  webmanifest: "application/manifest+json",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  webp: "image/webp",
  ico: "image/x-icon",
  woff2: "font/woff2",
  txt: "text/plain; charset=utf-8"
}

/** The content type of a file name by its extension. */
export const contentTypeOf = (name: string): string =>
  contentTypes[Path.extname(name).slice(1).toLowerCase()] ?? "application/octet-stream"

/**
 * The app's Content-Security-Policy: its own scripts, styles, fonts and media only (no inline
 * script or style, no eval), images and media also from `data:`/`blob:` (tool results rendered
 * inline), connections to its own origin and its own WebSocket (`ws://` + the request's `Host`,
 * which the guard has checked names this server), no plugins, no framing, no `<base>`.
 */
export const contentSecurityPolicy = (host: string): string =>
  [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    "media-src 'self' data: blob:",
    "font-src 'self'",
    `connect-src 'self' ws://${host}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'"
  ].join("; ")

/** The headers of a response of this route (besides the type and the length). */
export const webHeaders = (host: string, segments: ReadonlyArray<string>): Record<string, string> => ({
  "content-security-policy": contentSecurityPolicy(host),
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  // Vite names what it puts in assets/ by a hash of the content; everything else may change.
  "cache-control": segments.length === 2 && segments[0] === "assets"
    ? "public, max-age=31536000, immutable"
    : "no-cache"
})

const fsCall = ServedFile.fsCall

/** Why a file of the web folder is not served (a warning: someone put it there). */
const refuse = ServedFile.refusal("web file")

/**
 * Opens `segments` under `dir` for reading, in the request's scope, or gives none: every folder on
 * the way a plain directory, the file a regular one with one link and its real path inside the
 * real folder, checked before the open (so a link is never opened) and again on the handle.
 */
export const openFile = Effect.fn("WebStatic.openFile")(
  function*(dir: string, segments: ReadonlyArray<string>) {
    const realDir = yield* fsCall(() => Fs.promises.realpath(dir))
    if (Option.isNone(realDir)) return Option.none()
    const name = segments.join("/")
    let at = realDir.value
    for (const folder of segments.slice(0, -1)) {
      at = Path.join(at, folder)
      const stat = yield* fsCall(() => Fs.promises.lstat(at))
      if (Option.isNone(stat)) return Option.none()
      if (!stat.value.isDirectory()) return yield* refuse(name, `${folder} is not a plain directory (a link?)`)
    }
    const file = Path.join(realDir.value, ...segments)
    return yield* ServedFile.open(file, {
      name,
      inside: (real) => real === file,
      outside: "outside the web folder",
      refuse
    })
  }
)

const notFound = HttpServerResponse.text("not found\n", { status: 404 })

/** The answer when the web folder has no `index.html`: how to build it. */
export const notBuilt = (dir: string) =>
  HttpServerResponse.text(
    `The web UI is not built: ${Path.join(dir, "index.html")} is missing.\n` +
      "Build it from the repository root with `npm run build` (or `npx vite build packages/web`), then reload.\n",
    { status: 503, headers: { "cache-control": "no-store" } }
  )

/**
 * The route: `GET`/`HEAD` of a file of the web folder or of a page path; `404` for anything else
 * (other methods included), so it can sit behind every more specific route as the last one.
 */
export const app = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (request.method !== "GET" && request.method !== "HEAD") return notFound
  const target = targetOf(request.url)
  if (target._tag === "None") return notFound
  const dir = yield* webDir
  const segments = target._tag === "File" ? target.segments : ["index.html"]
  const opened = yield* openFile(dir, segments)
  if (Option.isNone(opened)) {
    const index = Path.join(dir, "index.html")
    const built = target._tag === "File" || Option.isSome(yield* fsCall(() => Fs.promises.lstat(index)))
    return built ? notFound : notBuilt(dir)
  }
  const { handle, size } = opened.value
  const contentType = contentTypeOf(segments[segments.length - 1]!)
  const headers = webHeaders(request.headers["host"] ?? "127.0.0.1", segments)
  if (request.method === "HEAD" || size === 0) {
    return HttpServerResponse.empty({
      status: 200,
      headers: { ...headers, "content-type": contentType, "content-length": String(size) }
    })
  }
  // Streamed from the opened handle, never re-opened by path; the request's scope closes it.
  return HttpServerResponse.raw(handle.createReadStream({ start: 0, end: size - 1, autoClose: false }), {
    contentType,
    contentLength: size,
    headers
  })
})
