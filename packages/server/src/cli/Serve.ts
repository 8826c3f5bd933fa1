/**
 * `skald serve`: the host in the foreground. Starts the MCP manager on the home's database and
 * runs until interrupted (Ctrl-C or SIGTERM), stopping every server on the way out.
 *
 * @since 0.1.0
 */
import { Command } from "@effect/cli"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as McpManager from "../host/McpManager.js"
import { Paths } from "../host/Paths.js"
import * as Host from "./Host.js"
import { reportFailures, stderr } from "./Io.js"

/** `skald serve`. */
export const command = Command.make("serve", { home: Host.home }, ({ home }) =>
  Effect.gen(function*() {
    const options = yield* Host.connectOptions
    const manager = McpManager.layer(options)
    yield* Effect.gen(function*() {
      const paths = yield* Paths
      yield* stderr(`skald: serving MCP servers from ${paths.database} (pid ${process.pid}); Ctrl-C stops`)
      return yield* Effect.never
    }).pipe(Effect.provide(Layer.provideMerge(manager, Host.layer(home))))
  }).pipe(reportFailures)).pipe(
    Command.withDescription("Run the host in the foreground: connects every enabled server and follows the registry live.")
  )
