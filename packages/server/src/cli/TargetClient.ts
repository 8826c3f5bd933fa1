/**
 * The MCP client of a one-off command's target (Target.ts): over streamable HTTP for `--http URL`,
 * else a stdio server started from the command line after `--`. Loaded by the handlers only.
 *
 * @since 0.1.0
 */
import type { McpClient } from "@skald/mcp"
import * as Roots from "@skald/mcp/Roots"
import * as StdioTransport from "@skald/mcp/StdioTransport"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { UsageError } from "./CliError.js"
import { stderr } from "./Io.js"
import * as Settings from "./Settings.js"
import { type Http, ServerCommandLine } from "./Target.js"

/**
 * The `--root` folders as MCP roots (absolute `file://` URIs, named by their basenames), or
 * undefined when none was given (the client then declares no roots). A path that is not a folder
 * is a usage error.
 */
export const rootsOf = (paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    if (paths.length === 0) return undefined
    for (const path of paths) {
      if (!Fs.statSync(path, { throwIfNoEntry: false })?.isDirectory()) {
        return yield* new UsageError({ message: `--root ${JSON.stringify(path)}: no such folder` })
      }
    }
    return Roots.fixed(paths.map((path) => Roots.fromPath(path)))
  })

/** A client layer for the target of this command line. */
export const clientLayer = (target: Http) =>
  Effect.gen(function*() {
    const commandLine = yield* ServerCommandLine
    const settings = yield* Settings.Settings
    // Errors name the server by its serverInfo.name once initialize answered; before that by its
    // URL's host, or its executable's basename and first argument (`npx @scope/server-x`).
    const clientOptions: McpClient.Options = {
      callTimeout: settings.callTimeout,
      startTimeout: settings.startTimeout,
      nameFromServerInfo: true
    }
    if (Option.isSome(target.http)) {
      if (commandLine.length > 0) {
        return yield* new UsageError({ message: "give either --http URL or `-- CMD`, not both" })
      }
      const url = target.http.value
      if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
        return yield* new UsageError({ message: `--http needs an http(s) URL, got ${JSON.stringify(url)}` })
      }
      let apiKey: Redacted.Redacted<string> | undefined
      if (Option.isSome(target.apiKeyEnv)) {
        const value = process.env[target.apiKeyEnv.value]
        if (value === undefined || value.length === 0) {
          return yield* new UsageError({ message: `--api-key-env ${target.apiKeyEnv.value}: that variable is not set` })
        }
        apiKey = Redacted.make(value)
      }
      // The transport brings its own HTTP (pooled keep-alive node:http): no HttpClient layer to provide.
      // Loaded only for --http: node:http and node:https cost a stdio command ~2 MB at its peak.
      const HttpTransport = yield* Effect.promise(() => import("@skald/mcp/HttpTransport"))
      const server = new URL(url).host
      if (apiKey !== undefined) return HttpTransport.layerClient({ server, url, apiKey }, clientOptions)
      // No key: a server that answers 401 gets the OAuth flow (tokens in memory, for this run only).
      const OAuthTokens = yield* Effect.promise(() => import("../host/OAuthTokens.js"))
      return OAuthTokens.adHocClientLayer(server, url, clientOptions, (line) => stderr(line))
    }
    if (Option.isSome(target.apiKeyEnv)) {
      return yield* new UsageError({ message: "--api-key-env goes with --http" })
    }
    const [command, ...args] = commandLine
    if (command === undefined || command.length === 0) {
      return yield* new UsageError({
        message: "no MCP server given: use --http URL, or put the server's command line after `--`, " +
          "e.g. `skald tools -- node server.js`"
      })
    }
    const name = args[0] === undefined ? Path.basename(command) : `${Path.basename(command)} ${args[0]}`
    return StdioTransport.layerClient({ server: name, command, args }, clientOptions)
  })
