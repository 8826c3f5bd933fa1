/**
 * What `skald tools` and `skald call` do (their options and help are in Cli.ts; this module is
 * loaded when one of them runs, see Lazy.ts).
 *
 * @since 0.1.0
 */
import * as Elicitation from "@skald/mcp/Elicitation"
import * as McpClient from "@skald/mcp/McpClient"
import * as Roots from "@skald/mcp/Roots"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as CallParse from "./CallParse.js"
import type { CallArgs, ToolsArgs } from "./Cli.js"
import { ExitStatus, ExitWith, UsageError } from "./CliError.js"
import * as Elicit from "./Elicit.js"
import { stdout } from "./Io.js"
import * as Output from "./Output.js"
import type * as Target from "./Target.js"
import * as TargetClient from "./TargetClient.js"

/** How long `skald tools` waits for `tools/list_changed` after a listing before it prints. */
export const TOOLS_QUIET_PERIOD = Duration.millis(300)

/**
 * Runs `use` with a client of the command line's target, closing it afterwards. The client
 * declares elicitation and answers with `handler` (default: decline), and roots when `--root`
 * was given.
 */
export const withClient = <A, E, R>(
  target: Target.Http,
  use: (client: McpClient.Service) => Effect.Effect<A, E, R>,
  handler: Elicitation.Handler = Elicit.declining
) =>
  Effect.gen(function*() {
    const layer = yield* TargetClient.clientLayer(target)
    const roots = yield* TargetClient.rootsOf(target.root)
    const connected = Effect.flatMap(McpClient.McpClient, use).pipe(
      Effect.provide(layer),
      Effect.provideService(Elicitation.ElicitationHandler, handler)
    )
    return yield* (roots === undefined ? connected : Effect.provideService(connected, Roots.Roots, roots))
  })

/** `skald tools`. */
export const tools = ({ json, ...target }: ToolsArgs) =>
  withClient(target, (client) =>
    Effect.gen(function*() {
      yield* client.refreshTools
      // Servers may register tools right after initialize and announce them with
      // tools/list_changed: keep taking new lists until none came for a quiet period.
      yield* client.toolListChanges.pipe(Stream.timeout(TOOLS_QUIET_PERIOD), Stream.runDrain)
      const list = yield* client.toolList
      yield* stdout(json ? Output.json(list.wire) : Output.toolLines(list.tools))
    })).pipe(Effect.withSpan("skald tools"))

/** `skald call`. */
export const call = ({ apiKeyEnv, http, json, mediaDir, root, tool, ...given }: CallArgs) =>
  Effect.gen(function*() {
    const parsed = yield* CallParse.parse(given)
    const { callOptions, done } = CallParse.display(parsed)
    // The result is printed before the connection closes (a server may take seconds to stop).
    const exit = yield* Effect.exit(withClient({ http, apiKeyEnv, root }, (client) =>
      client.callTool(tool, parsed.params, callOptions).pipe(
        Effect.ensuring(done),
        Effect.tap((outcome) =>
          parsed.problems.first() !== undefined ? Effect.void : Effect.flatMap(
            json ? Effect.succeed(Output.json(outcome.wire)) : Output.renderResult(outcome.result, mediaDir),
            stdout
          )
        )
      ), parsed.handler))
    // An --elicit answer that did not fit the form is a usage error, whatever the call did after.
    const problem = parsed.problems.first()
    if (problem !== undefined) {
      return yield* new UsageError({ message: problem })
    }
    const outcome = yield* exit
    if (outcome.result._tag !== "Task" && outcome.result.isError) {
      return yield* new ExitWith({ status: ExitStatus.ToolError })
    }
  }).pipe(Effect.scoped, Effect.withSpan("skald call", { attributes: { "gen_ai.tool.name": tool } }))
