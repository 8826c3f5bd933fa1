/**
 * The host's HTTP server (`skald serve`): `GET /api/mcp-media/{file}` serves the media files the
 * manager saved from tool results (DESIGN §6: only flat `<id>.<ext>` names).
 *
 * The file name is checked on the raw request path, before any decoding: exactly one segment of
 * letters, digits, `-` and `_`, a dot, and an extension of letters and digits. Anything else —
 * `..`, percent-encoded characters (`%2e%2e`, `%2f`, `%5c`), absolute or nested paths — is a 404,
 * so nothing outside the media folder can be read. The Content-Type comes from the extension.
 *
 * Listens on `SKALD_HOST` (127.0.0.1) and `SKALD_PORT` (8787). A non-loopback address needs the
 * access token that a later issue brings: until then it is refused.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { MediaType } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { Paths } from "./Paths.js"
import { MEDIA_URL_PREFIX } from "./ToolResults.js"

/** A flat media file name: `<id>.<ext>`. */
const mediaName = /^[A-Za-z0-9_-]{1,128}\.[A-Za-z0-9]{1,16}$/

/** The media file a raw request path names, or undefined when it names none. */
export const mediaFileOf = (rawUrl: string): string | undefined => {
  const path = rawUrl.split("?")[0]!
  if (!path.startsWith(MEDIA_URL_PREFIX)) return undefined
  const name = path.slice(MEDIA_URL_PREFIX.length)
  return mediaName.test(name) ? name : undefined
}

const notFound = HttpServerResponse.text("not found\n", { status: 404 })

const media = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const paths = yield* Paths
  const name = mediaFileOf(request.url)
  if (name === undefined) return notFound
  const file = Path.join(paths.mediaDir, name)
  // Belt and braces: the resolved file must sit directly in the media folder.
  if (Path.dirname(Path.resolve(file)) !== Path.resolve(paths.mediaDir)) return notFound
  const bytes = yield* Effect.tryPromise(() => Fs.promises.readFile(file)).pipe(Effect.option)
  if (bytes._tag === "None") return notFound
  return HttpServerResponse.uint8Array(bytes.value, {
    contentType: MediaType.contentTypeFor(Path.extname(name).slice(1)),
    headers: { "cache-control": "private, max-age=86400", "x-content-type-options": "nosniff" }
  })
})

/** The routes. */
export const router = HttpRouter.empty.pipe(
  HttpRouter.get(`${MEDIA_URL_PREFIX}*`, media),
  HttpRouter.all("*", notFound)
)

/** Where to listen. */
export interface ListenOptions {
  readonly host: string
  readonly port: number
}

/** A bind address other than loopback, refused until access tokens exist. */
export class NonLoopbackBind extends Schema.TaggedError<NonLoopbackBind>("@skald/server/NonLoopbackBind")(
  "NonLoopbackBind",
  { host: Schema.String }
) {
  override get message(): string {
    return `refusing to listen on ${this.host}: a non-loopback address needs an access token, which this ` +
      "version does not have yet; use SKALD_HOST=127.0.0.1 (the default)"
  }
}

/** True for 127.0.0.0/8, ::1 and localhost. */
export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)

/** The server as a layer; `onListening` gets the URL it listens on. */
export const layer = (
  options: ListenOptions,
  onListening: (url: string) => Effect.Effect<void>
): Layer.Layer<never, HttpServerError.ServeError | NonLoopbackBind, Paths> =>
  isLoopback(options.host)
    ? Layer.unwrapEffect(Effect.gen(function*() {
      const paths = yield* Paths
      return HttpServer.serve(router.pipe(Effect.provideService(Paths, paths))).pipe(
        Layer.merge(Layer.effectDiscard(HttpServer.addressFormattedWith(onListening))),
        Layer.provide(NodeHttpServer.layer(() => Http.createServer(), { host: options.host, port: options.port }))
      )
    }))
    : Layer.fail(new NonLoopbackBind({ host: options.host }))
