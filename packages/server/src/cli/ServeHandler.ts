/**
 * What `skald serve` does (its options and help are in Serve.ts; this module is loaded when it
 * runs, see Lazy.ts): provides the serve process's layers, composed in ServeLayer.ts, says on
 * stderr where it listens and what the first run did, and waits until interrupted (Ctrl-C or
 * SIGTERM), which stops every server on the way out. `--verbose` shows the debug stream.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { Paths } from "../host/Paths.js"
import * as ServeLayer from "../ServeLayer.js"
import { stderr } from "./Io.js"
import type { ServeArgs } from "./Serve.js"
import * as Settings from "./Settings.js"

/** `skald serve`. */
export const serve = ({ home, verbose }: ServeArgs) =>
  Effect.gen(function*() {
    const settings = yield* Settings.Settings
    const layer = ServeLayer.layer({
      home,
      host: settings.host,
      port: settings.port,
      startTimeout: settings.startTimeout,
      callTimeout: settings.callTimeout,
      onListening: (url) => stderr(`skald: HTTP endpoints on ${url} (media under /api/mcp-media/)`),
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
