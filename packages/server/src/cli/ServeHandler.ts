/**
 * What `skald serve` does (its options and help are in Serve.ts; this module is loaded when it
 * runs, see Lazy.ts): provides the serve process's layers, composed in ServeLayer.ts, says on
 * stderr where it listens and what the first run did, and waits until interrupted (Ctrl-C or
 * SIGTERM), which stops every server on the way out. `--verbose` shows the debug stream.
 *
 * @since 0.1.0
 */
import { RpcProtocol } from "@skald/domain"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Paths } from "../host/Paths.js"
import * as ServeLayer from "../ServeLayer.js"
import { VERSION } from "./Cli.js"
import { UsageError } from "./CliError.js"
import { stderr } from "./Io.js"
import type { ServeArgs } from "./Serve.js"
import * as Settings from "./Settings.js"

/**
 * The web UI's address. With a token: on a terminal, with the token in the fragment (`#token=…`:
 * never sent to the host, taken and removed from the address by the page); otherwise (stderr
 * going to a file or a log) without it, saying how to add it, so the token reaches no log.
 */
export const webLink = (url: string, token: Redacted.Redacted<string> | undefined): string =>
  token === undefined
    ? `${url}/`
    : process.stderr.isTTY === true
    ? `${url}/#token=${Redacted.value(token)}`
    : `${url}/ (append #token= and the access token to the address, or paste it into the page)`

/** `skald serve`. */
export const serve = ({ home, token, verbose }: ServeArgs) =>
  Effect.gen(function*() {
    const settings = yield* Settings.Settings
    const given = Option.isSome(token)
      ? token
      : yield* Config.option(Config.redacted("SKALD_TOKEN")).pipe(Effect.orElseSucceed(() => Option.none()))
    const accessToken = Option.getOrUndefined(Option.filter(given, (t) => Redacted.value(t).length > 0))
    if (accessToken !== undefined && !RpcProtocol.TOKEN_PATTERN.test(Redacted.value(accessToken))) {
      return yield* new UsageError({
        message: "the access token (--token or SKALD_TOKEN) must be 16-256 letters, digits, '.', '_', '~' or '-'"
      })
    }
    const layer = ServeLayer.layer({
      home,
      version: VERSION,
      token: accessToken,
      host: settings.host,
      port: settings.port,
      startTimeout: settings.startTimeout,
      callTimeout: settings.callTimeout,
      onListening: (url) =>
        Effect.zipRight(
          stderr(
            `skald: HTTP endpoints on ${url} (media under /api/mcp-media/, RPC at /rpc` +
              `${accessToken === undefined ? "" : ", access token required"})`
          ),
          stderr(`skald: web UI at ${webLink(url, accessToken)}`)
        ),
      onFirstRun: (name) =>
        stderr(`skald: first run — registered the offline demo server '${name}' (skald mcp rm ${name} removes it)`)
    })
    yield* Effect.gen(function*() {
      const paths = yield* Paths
      yield* stderr(`skald: serving MCP servers from ${paths.database} (pid ${process.pid}); Ctrl-C stops`)
      return yield* Effect.never
    }).pipe(
      Effect.provide(layer),
      verbose ? Logger.withMinimumLogLevel(LogLevel.Debug) : (e) => e
    )
  })
