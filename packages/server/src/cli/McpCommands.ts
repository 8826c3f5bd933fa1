/**
 * `skald mcp add|list|tools|call|enable|disable|rm`: the server registry from the command line.
 * They write the database directly, so they work whether or not `skald serve` runs, and a
 * running host picks the change up within about a second. `tools` and `call` connect to the one
 * server in this process.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import { Elicitation } from "@skald/mcp"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schedule from "effect/Schedule"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as ConfigImport from "../host/ConfigImport.js"
import * as Connector from "../host/Connector.js"
import { UnknownServer } from "../host/HostError.js"
import * as McpManager from "../host/McpManager.js"
import { McpServerRepo } from "../host/McpServerRepo.js"
import { Paths } from "../host/Paths.js"
import { SecretStore } from "../host/SecretStore.js"
import * as ServerEnvironment from "../host/ServerEnvironment.js"
import * as SecretStoreModule from "../host/SecretStore.js"
import { EventRecorder } from "../host/EventStore.js"
import { sanitize, ServerLogs } from "../host/ServerLogs.js"
import * as ServerList from "../host/ServerList.js"
import * as ToolResults from "../host/ToolResults.js"
import { ExitStatus, ExitWith, UsageError } from "./CliError.js"
import * as Elicit from "./Elicit.js"
import * as Host from "./Host.js"
import { reportFailures, stderr, stdout } from "./Io.js"
import * as Output from "./Output.js"
import * as Progress from "./Progress.js"
import { ServerCommandLine } from "./Target.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print JSON instead of text."))

const serverName = Args.text({ name: "NAME" }).pipe(Args.withDescription("The server's name."))

const parseName = (name: string) =>
  ServerName.isValid(name)
    ? Effect.succeed(ServerName.make(name))
    : Effect.fail(
      new UsageError({
        message: `invalid server name ${JSON.stringify(name)}: use 1-64 letters, digits, '-' and '_', ` +
          "never '__', and do not start or end with '_'"
      })
    )

/** `K=V` → [K, V]. */
const parsePair = (option: string, text: string) => {
  const at = text.indexOf("=")
  const key = text.slice(0, at)
  return at <= 0 || !SecretStoreModule.isValidName(key)
    ? Effect.fail(new UsageError({ message: `--${option} takes KEY=VALUE with a variable name as KEY, got ${JSON.stringify(text.split("=")[0])}` }))
    : Effect.succeed([key, text.slice(at + 1)] as const)
}


const { isReference, secretNameFor } = SecretStoreModule

const add = Command.make(
  "add",
  {
    name: serverName,
    description: Options.text("description").pipe(Options.withDescription("What the server offers."), Options.optional),
    friendlyName: Options.text("friendly-name").pipe(
      Options.withDescription("A display name, e.g. \"Google Calendar\"."),
      Options.optional
    ),
    env: Options.text("env").pipe(
      Options.withDescription("K=V for the server's environment, stored as given (V may be a ${NAME} reference)."),
      Options.repeated
    ),
    secretEnv: Options.text("secret-env").pipe(
      Options.withDescription("K=V whose value is a secret: moved into the secret store, referenced as ${<SERVER>_<K>}."),
      Options.repeated
    ),
    http: Options.text("http").pipe(Options.withDescription("The URL of a streamable HTTP server."), Options.optional),
    apiKey: Options.text("api-key").pipe(
      Options.withDescription("A ${NAME} reference, or a literal moved into the secret store as <SERVER>_API_KEY."),
      Options.optional
    ),
    apiKeyEnv: Options.text("api-key-env").pipe(
      Options.withDescription("The variable (stored secret or environment) holding the api key: stored as ${VAR}."),
      Options.optional
    ),
    home: Host.home
  },
  (o) =>
    Host.run(
      o.home,
      Effect.gen(function*() {
        const name = yield* parseName(o.name)
        const commandLine = yield* ServerCommandLine
        const secrets = yield* SecretStore
        const env: Record<string, string> = {}
        for (const text of o.env) {
          const [key, value] = yield* parsePair("env", text)
          env[key] = value
        }
        const toStore: Array<readonly [string, string]> = []
        for (const text of o.secretEnv) {
          const [key, value] = yield* parsePair("secret-env", text)
          if (isReference(value)) {
            env[key] = value
          } else {
            const secret = secretNameFor(name, key)
            toStore.push([secret, value])
            env[key] = `\${${secret}}`
          }
        }
        let config: ServerConfig.ServerConfig
        if (Option.isSome(o.http)) {
          if (commandLine.length > 0) return yield* new UsageError({ message: "give either --http URL or `-- CMD`, not both" })
          if (Object.keys(env).length > 0) {
            return yield* new UsageError({ message: "--env and --secret-env are for stdio servers (`-- CMD`)" })
          }
          if (Option.isSome(o.apiKey) && Option.isSome(o.apiKeyEnv)) {
            return yield* new UsageError({ message: "give either --api-key or --api-key-env, not both" })
          }
          let apiKey: string | undefined
          if (Option.isSome(o.apiKeyEnv)) {
            if (!SecretStoreModule.isValidName(o.apiKeyEnv.value)) {
              return yield* new UsageError({ message: `--api-key-env takes a variable name, got ${JSON.stringify(o.apiKeyEnv.value)}` })
            }
            apiKey = `\${${o.apiKeyEnv.value}}`
          } else if (Option.isSome(o.apiKey)) {
            if (isReference(o.apiKey.value)) {
              apiKey = o.apiKey.value
            } else {
              const secret = secretNameFor(name, "API_KEY")
              toStore.push([secret, o.apiKey.value])
              apiKey = `\${${secret}}`
            }
          }
          config = ServerConfig.HttpServerConfig.make(apiKey === undefined ? { url: o.http.value } : { url: o.http.value, apiKey })
        } else {
          if (Option.isSome(o.apiKey) || Option.isSome(o.apiKeyEnv)) {
            return yield* new UsageError({ message: "--api-key and --api-key-env go with --http" })
          }
          const [command, ...args] = commandLine
          if (command === undefined || command.length === 0) {
            return yield* new UsageError({
              message: "no server given: use --http URL, or put the server's command line after `--`, " +
                "e.g. `skald mcp add weather -- node weather.js`"
            })
          }
          config = ServerConfig.StdioServerConfig.make({ command, args, env })
        }
        const entry = McpServerEntry.McpServerEntry.make({
          name,
          config,
          enabled: true,
          ...(Option.isSome(o.description) ? { description: o.description.value } : {}),
          ...(Option.isSome(o.friendlyName) ? { friendlyName: o.friendlyName.value } : {})
        })
        yield* McpManager.validate(entry).pipe(Effect.mapError((e) => new UsageError({ message: e.message })))
        for (const [secret, value] of toStore) {
          yield* secrets.set(secret, Redacted.make(value))
          yield* stderr(`skald: stored the secret value as ${secret} (referenced as \${${secret}})`)
        }
        yield* (yield* McpServerRepo).upsert(entry)
        const host = yield* ServerList.hostRunning()
        yield* stderr(
          Option.isSome(host)
            ? `skald: registered '${name}'; the running host (pid ${host.value}) connects it`
            : `skald: registered '${name}'; start \`skald serve\` to connect it`
        )
      })
    ).pipe(reportFailures)
).pipe(
  Command.withDescription(
    "Register (or replace) an MCP server: skald mcp add NAME [--description D] [--friendly-name F] [--env K=V]… " +
      "[--secret-env K=V]… (--http URL [--api-key REF_OR_VALUE | --api-key-env VAR] | -- CMD [ARGS…])"
  )
)

const stateText = (s: McpServerEntry.ServerSummary): string => {
  const state = s.state === "host-not-running" ? "host not running" : s.state
  return s.error === undefined ? state : `${state}: ${s.error.split("\n")[0]}`
}

const list = Command.make("list", { json, home: Host.home }, ({ home, json }) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const summaries = yield* ServerList.summaries()
      if (json) return yield* stdout(Output.json(summaries.map((s) => McpServerEntry.ServerSummary.make(s))))
      if (summaries.length === 0) return yield* stderr("skald: no MCP servers registered; add one with `skald mcp add`")
      const width = Math.max(...summaries.map((s) => s.name.length))
      yield* stdout(
        summaries.map((s) => {
          const tools = s.toolCount === undefined ? "" : ` (${s.toolCount} tools)`
          const about = s.friendlyName ?? s.description
          return `${s.name.padEnd(width)}  ${s.transport.padEnd(5)}  ${stateText(s)}${tools}${about === undefined ? "" : `  — ${about}`}`
        }).join("\n")
      )
    })
  ).pipe(reportFailures)).pipe(Command.withDescription("List the registered MCP servers and their status: skald mcp list [--json]"))

/** Connects the named registered server in this process and runs `use` with its client. */
const withServer = <A, E, R>(
  home: Option.Option<string>,
  name: string,
  use: (connection: Connector.Connection) => Effect.Effect<A, E, R>
) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const server = yield* parseName(name)
      const entry = yield* (yield* McpServerRepo).get(server)
      if (Option.isNone(entry)) return yield* new UnknownServer({ name })
      // The same server environment as under `skald serve` (host/ServerEnvironment.ts).
      const options = { ...(yield* Host.connectOptions), environment: ServerEnvironment.make(yield* Paths) }
      const handler = process.stdin.isTTY === true ? Elicit.terminal : Elicit.declining
      const logs = yield* ServerLogs
      const recorder = yield* EventRecorder
      // Log lines go to the server's log file (and --log-level debug); events are stored, as the host does.
      const sinks = (secrets: SecretStoreModule.Resolved["secrets"]) => ({ log: logs.sink(server, secrets), events: recorder.sink })
      return yield* Effect.flatMap(Connector.connect(entry.value, options, sinks), use).pipe(
        Effect.provideService(Elicitation.ElicitationHandler, handler),
        Effect.scoped
      )
    })
  )

const tools = Command.make("tools", { name: serverName, json, home: Host.home }, ({ home, json, name }) =>
  withServer(home, name, ({ client }) =>
    Effect.gen(function*() {
      yield* client.refreshTools
      yield* client.toolListChanges.pipe(Stream.timeout("300 millis"), Stream.runDrain)
      const list = yield* client.toolList
      yield* stdout(json ? Output.json(list.wire) : Output.toolLines(list.tools))
    })).pipe(reportFailures)).pipe(Command.withDescription("List the tools of a registered server: skald mcp tools NAME [--json]"))

const call = Command.make(
  "call",
  {
    name: serverName,
    tool: Args.text({ name: "TOOL" }).pipe(Args.withDescription("The tool to call.")),
    args: Options.text("args").pipe(Options.withDescription("The tool's arguments as a JSON object (default {})."), Options.optional),
    json,
    home: Host.home
  },
  ({ args, home, json, name, tool }) =>
    Effect.gen(function*() {
      let params: Record<string, unknown> = {}
      if (Option.isSome(args)) {
        const parsed = yield* Effect.try({
          try: () => JSON.parse(args.value) as unknown,
          catch: () => new UsageError({ message: "--args is not valid JSON" })
        })
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
          return yield* new UsageError({ message: "--args must be a JSON object, e.g. --args '{\"message\":\"hi\"}'" })
        }
        params = parsed as Record<string, unknown>
      }
      const isError = yield* withServer(home, name, ({ client }) =>
        Effect.gen(function*() {
          const outcome = yield* Progress.showing(process.stderr, (reporting) => client.callTool(tool, params, reporting))
          const paths = yield* Paths
          const result = yield* ToolResults.fromCallResult(outcome.result, paths.mediaDir)
          yield* stdout(
            json
              ? Output.json(result._tag === "Text" ? { kind: "string", text: result.text } : { kind: "json", value: result.value })
              : result._tag === "Text"
              ? result.text
              : Output.json(result.value)
          )
          return outcome.result._tag !== "Task" && outcome.result.isError
        }))
      if (isError) return yield* new ExitWith({ status: ExitStatus.ToolError })
    }).pipe(reportFailures)
).pipe(
  Command.withDescription(
    "Call a tool of a registered server and print its result as the host keeps it: " +
      "skald mcp call NAME TOOL [--args JSON] [--json]"
  )
)

const toggle = (enabled: boolean) =>
  Command.make(enabled ? "enable" : "disable", { name: serverName, home: Host.home }, ({ home, name }) =>
    Host.run(
      home,
      Effect.gen(function*() {
        const server = yield* parseName(name)
        if (!(yield* (yield* McpServerRepo).setEnabled(server, enabled))) return yield* new UnknownServer({ name })
        yield* stderr(`skald: ${enabled ? "enabled" : "disabled"} '${name}'`)
      })
    ).pipe(reportFailures)).pipe(
      Command.withDescription(`${enabled ? "Enable" : "Disable"} a registered server (live when the host runs).`)
    )

const rm = Command.make("rm", { name: serverName, home: Host.home }, ({ home, name }) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const server = yield* parseName(name)
      if (!(yield* (yield* McpServerRepo).remove(server))) return yield* new UnknownServer({ name })
      yield* stderr(`skald: removed '${name}'`)
    })
  ).pipe(reportFailures)).pipe(Command.withDescription("Delete a server's registration and disconnect it (irreversible)."))

const logs = Command.make(
  "logs",
  {
    name: serverName,
    follow: Options.boolean("follow").pipe(Options.withAlias("f"), Options.withDescription("Keep printing new lines as they are written.")),
    home: Host.home
  },
  ({ follow, home, name }) =>
    Effect.gen(function*() {
      yield* parseName(name)
      const paths = yield* Paths
      const file = Path.join(paths.mcpLogsDir, `${sanitize(name)}.log`)
      let offset = 0
      const printNew = Effect.sync(() => {
        let size: number
        try {
          size = Fs.statSync(file).size
        } catch {
          return false
        }
        if (size < offset) offset = 0 // rotated: the new file starts over
        if (size > offset) {
          const fd = Fs.openSync(file, "r")
          try {
            const buffer = Buffer.alloc(size - offset)
            Fs.readSync(fd, buffer, 0, buffer.length, offset)
            process.stdout.write(buffer)
          } finally {
            Fs.closeSync(fd)
          }
          offset = size
        }
        return true
      })
      const found = yield* printNew
      if (!follow) {
        if (!found) yield* stderr(`skald: no log yet for '${name}' (${file})`)
        return
      }
      yield* printNew.pipe(Effect.repeat(Schedule.spaced("250 millis")), Effect.asVoid)
    }).pipe(Effect.provide(Paths.layer(home)), reportFailures)
).pipe(Command.withDescription("Print a server's log file (logs/mcp/<name>.log): skald mcp logs NAME [--follow]"))

const importFile = Command.make(
  "import",
  { file: Args.file({ name: "FILE", exists: "yes" }).pipe(Args.withDescription("A Claude Desktop / .mcp.json or VS Code mcp.json file.")), home: Host.home },
  ({ file, home }) =>
    Host.run(
      home,
      Effect.gen(function*() {
        const text = yield* Effect.try({
          try: () => JSON.parse(Fs.readFileSync(file, "utf8")) as unknown,
          catch: (e) => new UsageError({ message: `${file} is not valid JSON: ${(e as Error).message}` })
        })
        const repo = yield* McpServerRepo
        const secrets = yield* SecretStore
        const existing = new Set((yield* repo.list).map((e) => e.name as string))
        const outcomes = yield* Either.match(ConfigImport.fromJson(text, existing), {
          onLeft: (message) => Effect.fail(new UsageError({ message: `${file}: ${message}` })),
          onRight: Effect.succeed
        })
        const lines: Array<string> = []
        for (const outcome of outcomes) {
          if (outcome._tag === "Skipped") {
            lines.push(`skipped  ${outcome.source}: ${outcome.reason}`)
            continue
          }
          for (const secret of outcome.secrets) yield* secrets.set(secret.name, Redacted.make(secret.value))
          yield* repo.upsert(outcome.entry)
          const renamed = outcome.entry.name === outcome.source ? "" : ` (from ${JSON.stringify(outcome.source)})`
          const moved = outcome.secrets.length === 0 ? "" : `; secrets moved to the store: ${outcome.secrets.map((s) => s.name).join(", ")}`
          lines.push(`imported ${outcome.entry.name}${renamed}: ${outcome.entry.config._tag}${outcome.entry.enabled ? "" : ", disabled"}${moved}`)
        }
        const imported = outcomes.filter((o) => o._tag === "Imported").length
        yield* stdout([...lines, `${imported} imported, ${outcomes.length - imported} skipped`].join("\n"))
      })
    ).pipe(reportFailures)
).pipe(Command.withDescription("Import servers from a Claude Desktop / .mcp.json (mcpServers) or VS Code mcp.json (servers) file."))

/** `skald mcp …`. */
export const command = Command.make("mcp").pipe(
  Command.withDescription("Manage the registered MCP servers."),
  Command.withSubcommands([add, list, tools, call, toggle(true), toggle(false), rm, logs, importFile])
)
