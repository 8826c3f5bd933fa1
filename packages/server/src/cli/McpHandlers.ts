/**
 * What `skald mcp add|show|list|tools|call|enable|disable|restart|rm|logs|import` do (their
 * options and help are in McpCommands.ts; this module is loaded when one of them runs, see
 * Lazy.ts). They write the database directly, so they work whether or not `skald serve` runs, and
 * a running host picks the change up within about a second. `tools` and `call` connect to the one
 * server in this process.
 *
 * @since 0.1.0
 */
import { McpServerEntry, type ServerConfig, ServerName } from "@skald/domain"
import { Elicitation } from "@skald/mcp"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Os from "node:os"
import * as Browser from "../host/Browser.js"
import * as ConfigImportFile from "../host/ConfigImportFile.js"
import type * as Connector from "../host/Connector.js"
import * as MediaStore from "../host/MediaStore.js"
import * as OAuthTokens from "../host/OAuthTokens.js"
import * as OneOffConnection from "../host/OneOffConnection.js"
import { Paths } from "../host/Paths.js"
import * as Registration from "../host/Registration.js"
import * as SecretNames from "../host/SecretNames.js"
import * as ServerLogs from "../host/ServerLogs.js"
import * as CallParse from "./CallParse.js"
import { ExitStatus, ExitWith, statusHint, UsageError } from "./CliError.js"
import * as Elicit from "./Elicit.js"
import * as Host from "./HostRuntime.js"
import { readStdin, stderr, stdout, stdoutBytes } from "./Io.js"
import * as McpAdmin from "./McpAdmin.js"
import type {
  AddArgs,
  CallArgs,
  ImportArgs,
  ListArgs,
  LoginArgs,
  LogoutArgs,
  LogsArgs,
  NameArgs,
  ShowArgs,
  ToolsArgs
} from "./McpCommands.js"
import * as Output from "./Output.js"
import { ServerCommandLine } from "./Target.js"

/** `K=V` pairs (parsed by Options.keyValueMap) whose keys must be variable names. */
const pairs = (option: string, given: HashMap.HashMap<string, string>) =>
  Effect.forEach(given, ([key, value]) =>
    SecretNames.isValidName(key)
      ? Effect.succeed([key, value] as const)
      : Effect.fail(
        new UsageError({
          message: `--${option} takes KEY=VALUE with a variable name as KEY, got ${JSON.stringify(key)}`
        })
      )).pipe(Effect.map((all) => Object.fromEntries(all)))

/**
 * `--oauth-client-secret` / `--oauth-private-key`: `@-` (stdin, one trailing newline dropped) or a
 * `${NAME}` reference. A value on the command line is refused: other users can read a process's
 * arguments.
 */
const secretOf =
  (option: "oauth-client-secret" | "oauth-private-key", what: string) => (given: Option.Option<string>) =>
    Effect.gen(function*() {
      if (Option.isNone(given)) return undefined
      if (given.value === "@-") return (yield* readStdin(option)).replace(/\r?\n$/, "")
      if (SecretNames.isReference(given.value)) return given.value
      return yield* new UsageError({
        message: `--${option} takes @- (${what} on stdin) or a \${NAME} reference (quoted: ` +
          `'\${NAME}'), not ${what} itself: other users can see a command's arguments`
      })
    })
const clientSecretOf = secretOf("oauth-client-secret", "the secret")
const privateKeyOf = secretOf("oauth-private-key", "the key")

/** `skald mcp add`'s flags → a registration request (the rules are Registration's). */
const addRequest = (o: {
  readonly name: ServerName.ServerName
  readonly description: Option.Option<string>
  readonly friendlyName: Option.Option<string>
  readonly env: HashMap.HashMap<string, string>
  readonly secretEnv: HashMap.HashMap<string, string>
  readonly http: Option.Option<string>
  readonly apiKey: Option.Option<string>
  readonly apiKeyEnv: Option.Option<string>
  readonly root: ReadonlyArray<string>
  readonly oauthClientId: Option.Option<string>
  readonly oauthClientSecret: Option.Option<string>
  readonly oauthPrivateKey: Option.Option<string>
  readonly oauthSigningAlg: Option.Option<ServerConfig.OAuthSigningAlgorithm>
  readonly oauthClientMetadataUrl: Option.Option<string>
  readonly oauthScope: Option.Option<string>
  readonly oauthGrant: Option.Option<"authorization_code" | "client_credentials">
  readonly replace: boolean
}) =>
  Effect.gen(function*() {
    const commandLine = yield* ServerCommandLine
    const env = yield* pairs("env", o.env)
    const secretEnv = yield* pairs("secret-env", o.secretEnv)
    let transport: Registration.Transport
    if (Option.isSome(o.http)) {
      if (commandLine.length > 0) {
        return yield* new UsageError({ message: "give either --http URL or `-- CMD`, not both" })
      }
      if (HashMap.size(o.env) + HashMap.size(o.secretEnv) > 0) {
        return yield* new UsageError({ message: "--env and --secret-env are for stdio servers (`-- CMD`)" })
      }
      if (Option.isSome(o.apiKey) && Option.isSome(o.apiKeyEnv)) {
        return yield* new UsageError({ message: "give either --api-key or --api-key-env, not both" })
      }
      if (
        o.oauthClientSecret.pipe(Option.exists((v) => v === "@-")) &&
        o.oauthPrivateKey.pipe(Option.exists((v) => v === "@-"))
      ) {
        return yield* new UsageError({
          message:
            "only one of --oauth-client-secret and --oauth-private-key can read stdin (@-): give the other as a ${NAME} reference"
        })
      }
      transport = {
        _tag: "http",
        url: o.http.value,
        apiKey: Option.getOrUndefined(o.apiKey),
        apiKeyVariable: Option.getOrUndefined(o.apiKeyEnv),
        oauth: {
          clientId: Option.getOrUndefined(o.oauthClientId),
          clientSecret: yield* clientSecretOf(o.oauthClientSecret),
          privateKey: yield* privateKeyOf(o.oauthPrivateKey),
          signingAlgorithm: Option.getOrUndefined(o.oauthSigningAlg),
          clientMetadataUrl: Option.getOrUndefined(o.oauthClientMetadataUrl),
          scope: Option.getOrUndefined(o.oauthScope),
          grant: Option.getOrUndefined(o.oauthGrant)
        }
      }
    } else {
      if (Option.isSome(o.apiKey) || Option.isSome(o.apiKeyEnv)) {
        return yield* new UsageError({ message: "--api-key and --api-key-env go with --http" })
      }
      if (
        [
          o.oauthClientId,
          o.oauthClientSecret,
          o.oauthPrivateKey,
          o.oauthSigningAlg,
          o.oauthClientMetadataUrl,
          o.oauthScope,
          o.oauthGrant
        ].some(Option.isSome)
      ) {
        return yield* new UsageError({ message: "the --oauth-… options go with --http" })
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
      roots: o.root,
      replace: o.replace
    } satisfies Registration.Request as Registration.Request
  })

/** The home's folders (no database). */
const HostPaths = (home: Option.Option<string>) => Paths.Default(home).pipe(Layer.orDie)

/** Text on stdout as it is (a log's text, which carries its own newlines). */
const stdoutText = (text: string) => Effect.sync(() => void process.stdout.write(text))

/** Runs a command with the admin of its path (McpAdmin.ts): the running host's, else this process's. */
const withAdmin = <A>(
  args: { readonly home: Option.Option<string>; readonly verbose: boolean },
  use: (admin: McpAdmin.Admin) => Effect.Effect<A, unknown>
) => Effect.scoped(Effect.flatMap(McpAdmin.open(args), use))

/** `skald mcp add`. */
export const add = (o: AddArgs) =>
  Effect.gen(function*() {
    // The flags are checked (and stdin read) before any path is chosen.
    const request = yield* addRequest(o)
    return yield* withAdmin(o, (admin) =>
      Effect.gen(function*() {
        const done = yield* admin.add(request)
        for (const secret of done.storedSecrets) {
          yield* stderr(`skald: stored the secret value as ${secret} (referenced as \${${secret}})`)
        }
        if (done.droppedSecrets.length > 0) {
          yield* stderr(`skald: removed the stored secrets it no longer uses: ${done.droppedSecrets.join(", ")}`)
        }
        const what = `${done.replaced ? "replaced" : "registered"} '${done.name}'`
        yield* stderr(
          Option.isSome(done.host)
            ? `skald: ${what}; the running host (pid ${done.host.value}) connects it`
            : `skald: ${what}; start \`skald serve\` to connect it`
        )
      }))
  })

const stateText = (s: McpServerEntry.ServerSummary): string => {
  const state = s.state === "host-not-running" ? "host not running" : s.state
  const text = s.error === undefined ? state : `${state}: ${s.error.split("\n")[0]}`
  return s.nextRetryAt === undefined ? text : `${text} (next retry ${s.nextRetryAt})`
}

/** On stderr, what to run about a failed server's error, when the command line knows. */
const printStatusHint = (summary: McpServerEntry.ServerSummary) => {
  const hint = statusHint(summary)
  return hint === undefined ? Effect.void : stderr(hint)
}

/** A server as `show --json` and each element of `list --json` print it: configuration and status. */
const serverJson = ({ description, summary }: McpAdmin.Server) => ({ ...description, ...summary })

/** `skald mcp list`. */
export const list = (args: ListArgs) =>
  withAdmin(args, (admin) =>
    Effect.gen(function*() {
      const servers = yield* admin.list
      if (args.json) return yield* stdout(Output.json(servers.map(serverJson)))
      if (servers.length === 0) return yield* stderr("skald: no MCP servers registered; add one with `skald mcp add`")
      const width = Math.max(...servers.map(({ summary }) => summary.name.length))
      yield* stdout(
        servers.map(({ summary: s }) => {
          const tools = s.toolCount === undefined ? "" : ` (${s.toolCount} tools)`
          const about = s.friendlyName ?? s.description
          return `${s.name.padEnd(width)}  ${s.transport.padEnd(5)}  ${stateText(s)}${tools}${
            about === undefined ? "" : `  — ${about}`
          }`
        }).join("\n")
      )
      yield* Effect.forEach(servers, ({ summary }) => printStatusHint(summary), { discard: true })
    }))

/** `skald mcp show`. */
export const show = (args: ShowArgs) =>
  withAdmin(args, (admin) =>
    Effect.gen(function*() {
      const found = yield* admin.show(args.name)
      if (args.json) return yield* stdout(Output.json(serverJson(found)))
      const view = found.description
      const rows: Array<readonly [string, string]> = [["name", view.name], ["transport", view.transport]]
      if (view.transport === "stdio") {
        rows.push(["command", view.command ?? ""], ["args", (view.args ?? []).map(shellWord).join(" ")])
        const env = Object.entries(view.env ?? {})
        if (env.length === 0) rows.push(["env", ""])
        for (const [key, value] of env) rows.push(["env", `${key}=${value}`])
      } else {
        rows.push(["url", view.url ?? ""], ["api key", view.apiKey ?? ""])
        const oauth = view.oauth
        if (oauth?.clientId !== undefined) rows.push(["oauth client", oauth.clientId])
        if (oauth?.clientSecret !== undefined) rows.push(["oauth secret", oauth.clientSecret])
        if (oauth?.privateKey !== undefined) rows.push(["oauth key", oauth.privateKey])
        if (oauth?.signingAlgorithm !== undefined) rows.push(["oauth key alg", oauth.signingAlgorithm])
        if (oauth?.clientMetadataUrl !== undefined) rows.push(["oauth metadata", oauth.clientMetadataUrl])
        if (oauth?.scope !== undefined) rows.push(["oauth scope", oauth.scope])
        if (oauth?.grant !== undefined) rows.push(["oauth grant", oauth.grant])
      }
      for (const root of view.roots ?? []) rows.push(["root", root])
      rows.push(
        ["description", view.description ?? ""],
        ["friendly name", view.friendlyName ?? ""],
        ["enabled", view.enabled ? "yes" : "no"],
        [
          "status",
          `${stateText(found.summary)}${
            found.summary.toolCount === undefined ? "" : ` (${found.summary.toolCount} tools)`
          }`
        ]
      )
      yield* stdout(rows.map(([key, value]) => `${key.padEnd(13)}  ${value}`.trimEnd()).join("\n"))
      yield* printStatusHint(found.summary)
    }))

/** An argument as a shell would need it quoted. */
const shellWord = (arg: string): string =>
  /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`

/**
 * Connects the named registered server in this process (the rules are OneOffConnection's) and
 * runs `use` with its client; elicitations are answered by `handler` (a prompt on a terminal, else
 * decline).
 */
export const withServer = <A, E, R>(
  home: Option.Option<string>,
  name: ServerName.ServerName,
  use: (connection: Connector.Connection) => Effect.Effect<A, E, R>,
  handler: Elicitation.Handler = process.stdin.isTTY === true ? Elicit.terminal : Elicit.declining
) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const options = { ...(yield* Host.connectOptions), origin: `cli pid ${process.pid}` }
      return yield* OneOffConnection.use(name, options, use).pipe(
        Effect.provideService(Elicitation.ElicitationHandler, handler)
      )
    })
  )

/** `skald mcp tools`. */
export const tools = (args: ToolsArgs) =>
  withAdmin(args, (admin) =>
    Effect.gen(function*() {
      const list = yield* admin.tools(args.name)
      yield* stdout(args.json ? Output.json(list.wire) : Output.toolLines(list.tools))
    }))

/** `skald mcp call`. */
export const call = ({ home, json, name, tool, ...given }: CallArgs) =>
  Effect.gen(function*() {
    const parsed = yield* CallParse.parse(given)
    const { callOptions, done } = CallParse.display(parsed)
    const exit = yield* Effect.exit(withServer(home, name, ({ client }) =>
      Effect.gen(function*() {
        const outcome = yield* client.callTool(tool, parsed.params, callOptions).pipe(Effect.ensuring(done))
        if (parsed.problems.first() !== undefined) return false
        const paths = yield* Paths
        const result = yield* MediaStore.fromCallResult(outcome.result, paths.mediaDir)
        yield* stdout(
          json
            ? Output.json(
              result._tag === "Text" ? { kind: "string", text: result.text } : { kind: "json", value: result.value }
            )
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
  }).pipe(Effect.scoped)

/** `skald mcp enable` and `skald mcp disable`. */
export const toggle = (enabled: boolean) => (args: NameArgs) =>
  withAdmin(args, (admin) =>
    Effect.zipRight(
      admin.setEnabled(args.name, enabled),
      stderr(`skald: ${enabled ? "enabled" : "disabled"} '${args.name}'`)
    ))

/** `skald mcp restart`. */
export const restart = ({ name, ...args }: NameArgs) =>
  withAdmin(args, (admin) =>
    Effect.gen(function*() {
      const outcome = yield* admin.restart(name)
      if (!outcome.enabled) return yield* stderr(`skald: '${name}' is disabled; \`skald mcp enable ${name}\` starts it`)
      yield* stderr(
        Option.isSome(outcome.host)
          ? `skald: asked the running host (pid ${outcome.host.value}) to restart '${name}'`
          : `skald: the host is not running; \`skald serve\` starts '${name}'`
      )
    }))

/** `skald mcp rm`. */
export const rm = ({ name, ...args }: NameArgs) =>
  withAdmin(args, (admin) =>
    Effect.gen(function*() {
      const removed = yield* admin.remove(name)
      const secrets = removed.length === 0 ? "" : ` and its stored secrets ${removed.join(", ")}`
      yield* stderr(`skald: removed '${name}'${secrets}`)
    }))

/**
 * `skald mcp login`: opens a browser if one is there (not with --no-browser); the URL always on
 * stdout (alone on its line), what to do on stderr.
 */
export const login = ({ home, name, noBrowser }: LoginArgs) =>
  Host.run(
    home,
    Effect.scoped(Effect.gen(function*() {
      const authorizer = yield* OAuthTokens.loopbackAuthorizer(
        (url) =>
          Effect.gen(function*() {
            const opened = noBrowser ? undefined : yield* Browser.open(url.href)
            yield* stderr(
              opened === undefined
                ? `skald: open this URL in a browser to authorize '${name}':`
                : `skald: opened a browser (${opened}) to authorize '${name}'; if it shows nothing, open this URL:`
            )
            yield* stdout(url.href)
          }),
        undefined,
        name
      )
      const restart = yield* OAuthTokens.authorize(name, authorizer)
      yield* stderr(`skald: authorized '${name}'; its tokens are in the secret store`)
      if (Option.isSome(restart.host) && restart.enabled) {
        yield* stderr(`skald: asked the running host (pid ${restart.host.value}) to reconnect '${name}'`)
      }
    }))
  )

/** `skald mcp logout`. */
export const logout = ({ home, name }: LogoutArgs) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const had = yield* OAuthTokens.logout(name)
      yield* stderr(had ? `skald: forgot the OAuth tokens of '${name}'` : `skald: '${name}' had no OAuth tokens`)
    })
  )

/** `skald mcp logs`. */
export const logs = ({ follow, name, ...args }: LogsArgs) =>
  withAdmin(args, (admin) =>
    Effect.gen(function*() {
      let printed = false
      yield* admin.logs(name, follow).pipe(
        Stream.runForEach((chunk) => {
          if (chunk.length === 0) return Effect.void
          printed = true
          return typeof chunk === "string" ? stdoutText(chunk) : stdoutBytes(chunk)
        })
      )
      if (!printed) {
        const paths = yield* Paths
        yield* stderr(`skald: no log yet for '${name}' (${ServerLogs.fileIn(paths.mcpLogsDir, name)})`)
      }
    }).pipe(Effect.provide(HostPaths(args.home))))

/** `skald mcp import`. */
export const importFile = ({ file, home }: ImportArgs) =>
  Host.run(
    home,
    Effect.gen(function*() {
      const outcomes = yield* ConfigImportFile.importFile(file, { userHome: Os.homedir(), variables: process.env })
      const lines = outcomes.map((outcome) => {
        if (outcome._tag === "Skipped") return `skipped  ${outcome.source}: ${outcome.reason}`
        const renamed = outcome.entry.name === outcome.source ? "" : ` (from ${JSON.stringify(outcome.source)})`
        const moved = outcome.secrets.length === 0
          ? ""
          : `; secrets moved to the store: ${outcome.secrets.map((s) => s.name).join(", ")}`
        return `imported ${outcome.entry.name}${renamed}: ${outcome.entry.config._tag}${
          outcome.entry.enabled ? "" : ", disabled"
        }${moved}`
      })
      const imported = outcomes.filter((o) => o._tag === "Imported").length
      yield* stdout([...lines, `${imported} imported, ${outcomes.length - imported} skipped`].join("\n"))
    })
  )
