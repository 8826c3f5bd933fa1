/**
 * `skald serve`: the host in the foreground. Starts the MCP manager on the home's database and
 * the HTTP endpoints (media files), registers the demo server on the very first run, and runs
 * until interrupted (Ctrl-C or SIGTERM), stopping every server on the way out. The console
 * stays quiet (warnings and worse); `--verbose` shows the debug stream, servers' stderr included.
 * The HTTP endpoint listens before any server starts; when it cannot (the port is taken), `serve`
 * exits 2 with one line naming the address and the settings that change it. Loaded when it runs
 * (its options and help are in Serve.ts, see Lazy.ts).
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as FirstRun from "../host/FirstRun.js"
import * as HttpEndpoints from "../host/HttpEndpoints.js"
import * as McpManager from "../host/McpManager.js"
import { Paths } from "../host/Paths.js"
import * as Host from "./HostRuntime.js"
import { reportFailures, stderr } from "./Io.js"
import type { ServeArgs } from "./Serve.js"
import * as Settings from "./Settings.js"

/** The host could not listen; the message adds the settings that change the address. */
class CannotListen extends Data.TaggedError("CannotListen")<{ readonly message: string }> {}

/** `skald serve`. */
export const serve = ({ home, verbose }: ServeArgs) =>
  Effect.gen(function*() {
    const options = yield* Host.connectOptions
    const settings = yield* Settings.Settings
    const services = Host.layer(home)
    const firstRun = Layer.effectDiscard(
      Effect.flatMap(FirstRun.ensure, (registered) =>
        Option.isSome(registered)
          ? stderr(
            `skald: first run — registered the offline demo server '${registered.value}' (skald mcp rm ${registered.value} removes it)`
          )
          : Effect.void)
    )
    // The HTTP endpoint listens first: a taken port stops `serve` before any server starts, and
    // the manager learns the address its media links point to.
    const listening = yield* Deferred.make<string>()
    const http = HttpEndpoints.layer(
      { host: settings.host, port: settings.port },
      (url) =>
        Effect.zipRight(
          Deferred.succeed(listening, url),
          stderr(`skald: HTTP endpoints on ${url} (media under /api/mcp-media/)`)
        )
    ).pipe(
      Layer.catchAll((error) =>
        Layer.fail(
          error._tag === "ListenFailed"
            ? new CannotListen({
              message: `${error.message}; set SKALD_PORT (0 picks a free port) or SKALD_HOST to listen elsewhere`
            })
            : error
        )
      )
    )
    const manager = Layer.unwrapEffect(
      Effect.map(Deferred.await(listening), (url) => McpManager.McpManager.Default({ ...options, mediaBaseUrl: url }))
    ).pipe(Layer.provide(firstRun), Layer.provide(http))
    yield* Effect.gen(function*() {
      const paths = yield* Paths
      yield* stderr(`skald: serving MCP servers from ${paths.database} (pid ${process.pid}); Ctrl-C stops`)
      return yield* Effect.never
    }).pipe(
      Effect.provide(manager.pipe(Layer.provideMerge(services))),
      verbose ? Logger.withMinimumLogLevel(LogLevel.Debug) : (e) => e
    )
  }).pipe(reportFailures)
