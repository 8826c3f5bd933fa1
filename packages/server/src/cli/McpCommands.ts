/**
 * `skald mcp add|list|tools|call|enable|disable|restart|rm`: the server registry from the command line.
 * They write the database directly, so they work whether or not `skald serve` runs, and a
 * running host picks the change up within about a second. `tools` and `call` connect to the one
 * server in this process.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { McpServerEntry, ServerName } from "@skald/domain"
import { Elicitation } from "@skald/mcp"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schedule from "effect/Schedule"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as ConfigImport from "../host/ConfigImport.js"
import * as Connector from "../host/Connector.js"
import { ServerDisabled, UnknownServer } from "../host/HostError.js"
import * as Redactor from "../host/Redactor.js"
import * as ServerSecrets from "../host/ServerSecrets.js"
import { McpServerRepo } from "../host/McpServerRepo.js"
import * as Registration from "../host/Registration.js"
import { Paths } from "../host/Paths.js"
import { SecretStore } from "../host/SecretStore.js"
import * as ServerEnvironment from "../host/ServerEnvironment.js"
import * as SecretStoreModule from "../host/SecretStore.js"
import { EventRecorder } from "../host/EventStore.js"
import { sanitize, ServerLogs } from "../host/ServerLogs.js"
import * as ServerList from "../host/ServerList.js"
import * as ToolResults from "../host/ToolResults.js"
import { ExitStatus, ExitWith, UsageError } from "./CliError.js"
import * as CallOptions from "./CallOptions.js"
import * as Elicit from "./Elicit.js"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import { reportFailures, stderr, stdout } from "./Io.js"
import * as Output from "./Output.js"
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

const pairs = (option: string, texts: ReadonlyArray<string>) =>
  Effect.map(Effect.forEach(texts, (text) => parsePair(option, text)), (all) => Object.fromEntries(all))

/** `skald mcp add`'s flags → a registration request (the rules are Registration's). */
const addRequest = (o: {
  readonly name: string
  readonly description: Option.Option<string>
  readonly friendlyName: Option.Option<string>
  readonly env: ReadonlyArray<string>
  readonly secretEnv: ReadonlyArray<string>
  readonly http: Option.Option<string>
  readonly apiKey: Option.Option<string>
  readonly apiKeyEnv: Option.Option<string>
  readonly replace: boolean
}) =>
  Effect.gen(function*() {
    const commandLine = yield* ServerCommandLine
    const env = yield* pairs("env", o.env)
    const secretEnv = yield* pairs("secret-env", o.secretEnv)
    let transport: Registration.Transport
    if (Option.isSome(o.http)) {
      if (commandLine.length > 0) return yield* new UsageError({ message: "give either --http URL or `-- CMD`, not both" })
      if (o.env.length + o.secretEnv.length > 0) {
        return yield* new UsageError({ message: "--env and --secret-env are for stdio servers (`-- CMD`)" })
      }
      if (Option.isSome(o.apiKey) && Option.isSome(o.apiKeyEnv)) {
        return yield* new UsageError({ message: "give either --api-key or --api-key-env, not both" })
      }
      transport = {
        _tag: "http",
        url: o.http.value,
        apiKey: Option.getOrUndefined(o.apiKey),
        apiKeyVariable: Option.getOrUndefined(o.apiKeyEnv)
      }
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
      transport = { _tag: "stdio", command, args, env, secretEnv }
    }
    return {
      name: o.name,
      transport,
      description: Option.getOrUndefined(o.description),
      friendlyName: Option.getOrUndefined(o.friendlyName),
      replace: o.replace
    } satisfies Registration.Request as Registration.Request
  })

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
      Options.withDescription("K=V whose value is a secret: moved into the secret store, referenced as ${MCP_<SERVER>__<K>}."),
      Options.repeated
    ),
    http: Options.text("http").pipe(Options.withDescription("The URL of a streamable HTTP server."), Options.optional),
    apiKey: Options.text("api-key").pipe(
      Options.withDescription("A ${NAME} reference, or a literal moved into the secret store as MCP_<SERVER>__API_KEY."),
      Options.optional
    ),
    apiKeyEnv: Options.text("api-key-env").pipe(
      Options.withDescription("The variable (stored secret or environment) holding the api key: stored as ${VAR}."),
      Options.optional
    ),
    replace: Options.boolean("replace").pipe(
      Options.withDescription("Replace the server of that name if one is registered (without it: refused).")
    ),
    home: Host.home
  },
  (o) =>
    Host.run(
      o.home,
      Effect.gen(function*() {
        const request = yield* addRequest(o)
        const done = yield* (yield* Registration.Registration).register(request)
        for (const secret of done.secrets) {
          yield* stderr(`skald: stored the secret value as ${secret.name} (referenced as \${${secret.name}})`)
        }
        if (done.droppedSecrets.length > 0) {
          yield* stderr(`skald: removed the stored secrets it no longer uses: ${done.droppedSecrets.join(", ")}`)
        }
        const host = yield* ServerList.hostRunning()
        const what = `${done.replaced ? "replaced" : "registered"} '${done.entry.name}'`
        yield* stderr(
          Option.isSome(host)
            ? `skald: ${what}; the running host (pid ${host.value}) connects it`
            : `skald: ${what}; start \`skald serve\` to connect it`
        )
      })
    ).pipe(reportFailures)
).pipe(
  Command.withDescription(Help.about({
    summary: "Register an MCP server (enabled); an existing name is refused unless --replace.",
    details: ["Literal secrets (--secret-env, --api-key) move into the secret store; the registration keeps ${NAME} references."],
    usage: ["skald mcp add [options] NAME -- CMD [ARGS…]", "skald mcp add [options] NAME --http URL"],
    examples: [
      "skald mcp add weather --secret-env API_TOKEN=s3cr3t -- node weather.js",
      "skald mcp add docs --http https://example.com/mcp --api-key-env DOCS_KEY",
      "skald mcp add weather --replace -- node weather.js --units metric"
    ]
  }))
)

const stateText = (s: McpServerEntry.ServerSummary): string => {
  const state = s.state === "host-not-running" ? "host not running" : s.state
  const text = s.error === undefined ? state : `${state}: ${s.error.split("\n")[0]}`
  return s.nextRetryAt === undefined ? text : `${text} (next retry ${s.nextRetryAt})`
}

/** A server as `show --json` and each element of `list --json` print it: configuration and status. */
const serverJson = (entry: McpServerEntry.McpServerEntry, summary: McpServerEntry.ServerSummary | undefined) => ({
  ...Registration.describe(entry),
  ...summary
})

/** Every registered server: its status, and its entry (configuration, references as stored). */
const listed = Effect.gen(function*() {
  const summaries = yield* ServerList.summaries()
  const entries = new Map((yield* (yield* McpServerRepo).list).map((e) => [e.name as string, e]))
  return summaries.flatMap((summary) => {
    const entry = entries.get(summary.name)
    return entry === undefined ? [] : [{ summary, entry }]
  })
})

const list = Command.make("list", { json, home: Host.home }, ({ home, json }) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const servers = yield* listed
      if (json) return yield* stdout(Output.json(servers.map(({ entry, summary }) => serverJson(entry, summary))))
      if (servers.length === 0) return yield* stderr("skald: no MCP servers registered; add one with `skald mcp add`")
      const width = Math.max(...servers.map(({ summary }) => summary.name.length))
      yield* stdout(
        servers.map(({ summary: s }) => {
          const tools = s.toolCount === undefined ? "" : ` (${s.toolCount} tools)`
          const about = s.friendlyName ?? s.description
          return `${s.name.padEnd(width)}  ${s.transport.padEnd(5)}  ${stateText(s)}${tools}${about === undefined ? "" : `  — ${about}`}`
        }).join("\n")
      )
    })
  ).pipe(reportFailures)).pipe(
    Command.withDescription(Help.about({
      summary: "List the registered MCP servers and their status.",
      details: ["--json: an array of what `skald mcp show --json` prints, one per server."],
      usage: ["skald mcp list [options]"],
      examples: ["skald mcp list", "skald mcp list --json"]
    }))
  )

const show = Command.make("show", { name: serverName, json, home: Host.home }, ({ home, json, name }) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const server = yield* parseName(name)
      const found = (yield* listed).find(({ entry }) => entry.name === server)
      if (found === undefined) return yield* new UnknownServer({ name })
      if (json) return yield* stdout(Output.json(serverJson(found.entry, found.summary)))
      const view = Registration.describe(found.entry)
      const rows: Array<readonly [string, string]> = [["name", view.name], ["transport", view.transport]]
      if (view.transport === "stdio") {
        rows.push(["command", view.command], ["args", view.args.map(shellWord).join(" ")])
        const env = Object.entries(view.env)
        if (env.length === 0) rows.push(["env", ""])
        for (const [key, value] of env) rows.push(["env", `${key}=${value}`])
      } else {
        rows.push(["url", view.url], ["api key", view.apiKey ?? ""])
      }
      rows.push(
        ["description", view.description ?? ""],
        ["friendly name", view.friendlyName ?? ""],
        ["enabled", view.enabled ? "yes" : "no"],
        ["status", `${stateText(found.summary)}${found.summary.toolCount === undefined ? "" : ` (${found.summary.toolCount} tools)`}`]
      )
      yield* stdout(rows.map(([key, value]) => `${key.padEnd(13)}  ${value}`.trimEnd()).join("\n"))
    })
  ).pipe(reportFailures)).pipe(
    Command.withDescription(Help.about({
      summary: "Print a server's configuration and status.",
      details: ["Secrets show as the ${NAME} references stored, never their values."],
      usage: ["skald mcp show [options] NAME"],
      examples: ["skald mcp show weather", "skald mcp show weather --json"]
    }))
  )

/** An argument as a shell would need it quoted. */
const shellWord = (arg: string): string => /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`

/** Connects the named registered (and enabled) server in this process and runs `use` with its client. */
const withServer = <A, E, R>(
  home: Option.Option<string>,
  name: string,
  use: (connection: Connector.Connection) => Effect.Effect<A, E, R>,
  handler: Elicitation.Handler = process.stdin.isTTY === true ? Elicit.terminal : Elicit.declining
) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const server = yield* parseName(name)
      const entry = yield* (yield* McpServerRepo).get(server)
      if (Option.isNone(entry)) return yield* new UnknownServer({ name })
      if (!entry.value.enabled) return yield* new ServerDisabled({ name })
      // The same server environment as under `skald serve` (host/ServerEnvironment.ts).
      const options = { ...(yield* Host.connectOptions), environment: ServerEnvironment.make(yield* Paths) }
      const logs = yield* ServerLogs
      const recorder = yield* EventRecorder
      // Log lines go to the server's log file (and --log-level debug), tagged as this process's;
      // events are stored, as the host does. What is printed of a failure (a dying server's stderr
      // tail) has the server's secrets redacted.
      const origin = `cli pid ${process.pid}`
      let redactor = Redactor.empty
      const sinks = (secrets: SecretStoreModule.Resolved["secrets"]) => {
        redactor = Redactor.make(secrets)
        return { log: logs.sink(server, secrets, origin), events: recorder.sink }
      }
      return yield* Effect.flatMap(Connector.connect(entry.value, options, sinks), use).pipe(
        Effect.provideService(Elicitation.ElicitationHandler, handler),
        Effect.scoped,
        Effect.mapError((error) => Redactor.redactFields(redactor, error))
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
    })).pipe(reportFailures)).pipe(
      Command.withDescription(Help.about({
        summary: "List the tools of a registered server, connecting it in this process.",
        usage: ["skald mcp tools [options] NAME"],
        examples: ["skald mcp tools weather", "skald mcp tools weather --json"]
      }))
    )

const call = Command.make(
  "call",
  {
    name: serverName,
    tool: Args.text({ name: "TOOL" }).pipe(Args.withDescription("The tool to call.")),
    ...CallOptions.options,
    home: Host.home
  },
  ({ home, json, name, tool, ...given }) =>
    Effect.gen(function*() {
      const parsed = yield* CallOptions.parse(given)
      const { callOptions, done } = CallOptions.display(parsed)
      const exit = yield* Effect.exit(withServer(home, name, ({ client }) =>
        Effect.gen(function*() {
          const outcome = yield* client.callTool(tool, parsed.params, callOptions).pipe(Effect.ensuring(done))
          if (parsed.problems.first() !== undefined) return false
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
        }), parsed.handler))
      // An --elicit answer that did not fit the form is a usage error, whatever the call did after.
      const problem = parsed.problems.first()
      if (problem !== undefined) return yield* new UsageError({ message: problem })
      if (yield* exit) return yield* new ExitWith({ status: ExitStatus.ToolError })
    }).pipe(Effect.scoped, reportFailures)
).pipe(
  Command.withDescription(Help.about({
    summary: "Call a tool of a registered (enabled) server, connecting it in this process.",
    details: [
      "Prints the result as the host keeps it; --json: {\"kind\":\"string\",\"text\":…} or {\"kind\":\"json\",\"value\":…}. " +
        "Exit status 1 when the tool answers isError."
    ],
    usage: ["skald mcp call [options] NAME TOOL"],
    examples: [
      "skald mcp call weather forecast --args '{\"city\":\"Oslo\"}'",
      "skald mcp call weather forecast --args @- --timeout 30 < args.json"
    ]
  }))
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
      Command.withDescription(Help.about({
        summary: `${enabled ? "Enable" : "Disable"} a registered server (live when the host runs).`,
        usage: [`skald mcp ${enabled ? "enable" : "disable"} [options] NAME`],
        examples: [`skald mcp ${enabled ? "enable" : "disable"} weather`]
      }))
    )

const restart = Command.make("restart", { name: serverName, home: Host.home }, ({ home, name }) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const outcome = yield* ServerList.requestRestart(yield* parseName(name))
      if (!outcome.enabled) return yield* stderr(`skald: '${name}' is disabled; \`skald mcp enable ${name}\` starts it`)
      yield* stderr(
        Option.isSome(outcome.host)
          ? `skald: asked the running host (pid ${outcome.host.value}) to restart '${name}'`
          : `skald: the host is not running; \`skald serve\` starts '${name}'`
      )
    })
  ).pipe(reportFailures)).pipe(
    Command.withDescription(Help.about({
      summary: "Restart a server now in the running host (a failed one is retried at once).",
      usage: ["skald mcp restart [options] NAME"],
      examples: ["skald mcp restart weather"]
    }))
  )

const rm = Command.make("rm", { name: serverName, home: Host.home }, ({ home, name }) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const server = yield* parseName(name)
      const removed = yield* ServerSecrets.unregister(server)
      if (Option.isNone(removed)) return yield* new UnknownServer({ name })
      const secrets = removed.value.length === 0 ? "" : ` and its stored secrets ${removed.value.join(", ")}`
      yield* stderr(`skald: removed '${name}'${secrets}`)
    })
  ).pipe(reportFailures)).pipe(Command.withDescription(Help.about({
    summary: "Delete a server's registration and the secrets moved in for it, and disconnect it (irreversible).",
    usage: ["skald mcp rm [options] NAME"],
    examples: ["skald mcp rm weather"]
  })))

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
      // A log of a server removed since is still printed; a name never registered is an error.
      if (!found && Option.isNone(yield* (yield* McpServerRepo).get(ServerName.make(name)))) {
        return yield* new UnknownServer({ name })
      }
      if (!follow) {
        if (!found) yield* stderr(`skald: no log yet for '${name}' (${file})`)
        return
      }
      yield* printNew.pipe(Effect.repeat(Schedule.spaced("250 millis")), Effect.asVoid)
    }).pipe((effect) => Host.run(home, effect), reportFailures)
).pipe(Command.withDescription(Help.about({
  summary: "Print a server's log file (logs/mcp/<name>.log).",
  usage: ["skald mcp logs [options] NAME"],
  examples: ["skald mcp logs weather", "skald mcp logs -f weather"]
})))

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
        const registration = yield* Registration.Registration
        const existing = new Set((yield* (yield* McpServerRepo).list).map((e) => e.name as string))
        const stored = new Set(yield* (yield* SecretStore).list)
        const context: ConfigImport.Context = {
          file: Path.resolve(file),
          userHome: Os.homedir(),
          isSet: (variable) => stored.has(variable) || process.env[variable] !== undefined
        }
        const outcomes = yield* Either.match(ConfigImport.fromJson(text, existing, context), {
          onLeft: (message) => Effect.fail(new UsageError({ message: `${file}: ${message}` })),
          onRight: Effect.succeed
        })
        const lines: Array<string> = []
        for (const outcome of outcomes) {
          if (outcome._tag === "Skipped") {
            lines.push(`skipped  ${outcome.source}: ${outcome.reason}`)
            continue
          }
          yield* registration.apply({ entry: outcome.entry, secrets: outcome.secrets }, false)
          const renamed = outcome.entry.name === outcome.source ? "" : ` (from ${JSON.stringify(outcome.source)})`
          const moved = outcome.secrets.length === 0 ? "" : `; secrets moved to the store: ${outcome.secrets.map((s) => s.name).join(", ")}`
          lines.push(`imported ${outcome.entry.name}${renamed}: ${outcome.entry.config._tag}${outcome.entry.enabled ? "" : ", disabled"}${moved}`)
        }
        const imported = outcomes.filter((o) => o._tag === "Imported").length
        yield* stdout([...lines, `${imported} imported, ${outcomes.length - imported} skipped`].join("\n"))
      })
    ).pipe(reportFailures)
).pipe(Command.withDescription(Help.about({
  summary: "Import servers from a Claude Desktop / Claude Code / Cursor (mcpServers) or VS Code (servers) file.",
  details: [
    "${VAR}, ${env:VAR} and ${VAR:-default} become references (the default is used when VAR is set neither in " +
      "the store nor the environment); ${workspaceFolder} is the folder holding .vscode/ or .cursor/, ${userHome} " +
      "your home folder; literal secrets move into the store. What cannot be resolved is skipped, saying why."
  ],
  usage: ["skald mcp import [options] FILE"],
  examples: ["skald mcp import .vscode/mcp.json", "skald mcp import ~/.cursor/mcp.json"]
})))

/** `skald mcp …`. */
export const command = Command.make("mcp").pipe(
  Command.withDescription(Help.about({
    summary: "Manage the registered MCP servers.",
    usage: ["skald mcp COMMAND [options]"],
    examples: ["skald mcp add weather -- node weather.js", "skald mcp list"]
  })),
  Command.withSubcommands([add, show, list, tools, call, toggle(true), toggle(false), restart, rm, logs, importFile])
)
