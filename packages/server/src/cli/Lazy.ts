/**
 * Command handlers loaded on first use. The command tree (Cli.ts, the *Commands.ts files, Serve.ts,
 * Events.ts) defines every command with its options and help but imports none of the handlers'
 * modules (the MCP client, SQLite, the HTTP server, …): a command's handler module (*Handler.ts,
 * *Handlers.ts) is imported when that command runs, so `skald tools` loads no database and
 * `skald --help` no MCP client.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"

/** A handler that imports its module, then runs the function `pick` selects from it. */
export const handler = <M, A, E, R>(
  load: () => Promise<M>,
  pick: (module: M) => (args: A) => Effect.Effect<void, E, R>
) =>
(args: A): Effect.Effect<void, E, R> => Effect.flatMap(Effect.promise(load), (module) => pick(module)(args))
