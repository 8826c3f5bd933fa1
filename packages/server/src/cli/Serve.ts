/**
 * `skald serve`: the host in the foreground. Starts the MCP manager on the home's database and
 * the HTTP endpoints (media files), registers the demo server on the very first run, and runs
 * until interrupted (Ctrl-C or SIGTERM), stopping every server on the way out. The console
 * stays quiet (warnings and worse); `--verbose` shows the debug stream, servers' stderr included.
 * The HTTP endpoint listens before any server starts; when it cannot (the port is taken), `serve`
 * exits 2 with one line naming the address and the settings that change it. `/rpc` is the RPC
 * WebSocket (docs/rpc.md); `--token`/`SKALD_TOKEN` is the access token its clients present,
 * required for a non-loopback `SKALD_HOST`. The command and its
 * options; what it does is in ServeHandler.ts.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import * as Lazy from "./Lazy.js"

const verbose = Options.boolean("verbose").pipe(
  Options.withAlias("v"),
  Options.withDescription(
    "Show the debug stream on stderr: servers' stderr and log records, lifecycle, reconciliation."
  )
)

const token = Options.redacted("token").pipe(
  Options.optional,
  Options.withDescription(
    "The access token RPC clients must present (default SKALD_TOKEN; prefer it: argv is visible to other users). " +
      "Required when SKALD_HOST is not a loopback address; 16-256 letters, digits, '.', '_', '~' or '-'."
  )
)

const serveConfig = { home: Host.home, verbose, token }

/** What `skald serve` parsed. */
export type ServeArgs = Command.Command.ParseConfig<typeof serveConfig>

/** `skald serve`. */
export const command = Command.make(
  "serve",
  serveConfig,
  Lazy.handler(() => import("./ServeHandler.js"), (m) => m.serve)
).pipe(
  Command.withDescription(Help.about({
    summary: "Run the host in the foreground: connects every enabled server, follows the registry live, and serves " +
      "media files and the RPC WebSocket (/rpc) on SKALD_HOST:SKALD_PORT (127.0.0.1:8787).",
    details: [
      "Every SKALD_TIC_INTERVAL seconds (900; 0: never) the tic agent reads a batch of pending events and posts " +
      "briefings to the inbox (see `skald tic run`)."
    ],
    usage: ["skald serve [options]"],
    examples: ["skald serve", "skald serve --verbose --home ~/skald"]
  }))
)
