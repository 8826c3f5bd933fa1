/**
 * `skald mcp add|show|list|tools|call|resources|read|prompts|prompt|enable|disable|restart|rm|logs|import`: the server registry
 * from the command line. They write the database directly, so they work whether or not
 * `skald serve` runs, and a running host picks the change up within about a second. `tools` and
 * `call` connect to the one server in this process. The commands and their options; what they do
 * is in McpHandlers.ts.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as ServerConfig from "@skald/domain/ServerConfig"
import * as ServerName from "@skald/domain/ServerName"
import * as HashMap from "effect/HashMap"
import * as CallOptions from "./CallOptions.js"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import * as Lazy from "./Lazy.js"
import * as Resource from "./ResourceCommands.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print JSON instead of text."))

/** ServerName, failing with the domain's own sentence alone (not the schema's issue tree). */
const validName = ServerName.ServerName.annotations({
  message: (issue) => {
    const refused = issue._tag === "Refinement" ? issue.issue : issue
    return {
      message: refused._tag === "Type" && refused.message !== undefined
        ? refused.message
        : `invalid server name ${JSON.stringify(issue.actual)}`,
      override: true
    }
  }
})

const serverName = Args.text({ name: "NAME" }).pipe(
  Args.withSchema(validName),
  Args.withDescription("The server's name.")
)

/** The K=V options (`skald mcp add`). */
const keyValueOptions = ["env", "secret-env"]

/**
 * What is wrong with a K=V option's value, said as a usage error, for what `Options.keyValueMap`
 * would not take (it leaves such a value unparsed and @effect/cli then says something unrelated):
 * a value without `=`, or with nothing after it. The keys of what it does take are checked by the
 * handler (variable names). A value is repeated only for `--env` (a `--secret-env` one may be a secret).
 */
export const keyValueProblem = (argv: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i < argv.length; i++) {
    const option = keyValueOptions.find((o) => argv[i] === `--${o}`)
    if (option === undefined) continue
    const value = argv[i + 1]
    if (value === undefined) return `--${option} takes KEY=VALUE, got nothing`
    const at = value.indexOf("=")
    if (at === -1) {
      // Without '=', a --secret-env value may be the secret itself: not repeated.
      return option === "secret-env"
        ? `--${option} takes KEY=VALUE with a variable name as KEY, got a value without '='`
        : `--${option} takes KEY=VALUE with a variable name as KEY, got ${JSON.stringify(value)}`
    }
    if (at === value.length - 1) {
      return `--${option} takes KEY=VALUE with a non-empty VALUE, got an empty value for ${
        JSON.stringify(value.slice(0, at))
      }`
    }
  }
  return undefined
}

/**
 * The K=V options' pairs moved next to each option's first one. @effect/cli 0.77's keyValueMap
 * takes only consecutive pairs (`--env A=1 --env B=2`): a second `--env` after another option
 * (`--env A=1 --secret-env S=x --env B=2`) is left over as an unknown argument (the same class of
 * bug as Effect-TS/effect#3729, fixed there for Options.repeated). Options' order means nothing
 * else to it, so regrouping changes no meaning.
 */
export const groupKeyValues = (argv: ReadonlyArray<string>): Array<string> => {
  const pairs = new Map<string, Array<string>>()
  for (let i = 0; i < argv.length - 1; i++) {
    const option = keyValueOptions.find((o) => argv[i] === `--${o}`)
    if (option === undefined) continue
    const list = pairs.get(option) ?? []
    list.push(argv[i]!, argv[i + 1]!)
    pairs.set(option, list)
    i++
  }
  const out: Array<string> = []
  const placed = new Set<string>()
  for (let i = 0; i < argv.length; i++) {
    const option = i < argv.length - 1 ? keyValueOptions.find((o) => argv[i] === `--${o}`) : undefined
    if (option === undefined) {
      out.push(argv[i]!)
      continue
    }
    if (!placed.has(option)) {
      placed.add(option)
      out.push(...pairs.get(option)!)
    }
    i++
  }
  return out
}

/** `--OPTION K=V`, repeatable (or several pairs after one flag): a map, empty when not given. */
const keyValues = (name: string, description: string) =>
  Options.keyValueMap(name).pipe(Options.withDescription(description), Options.withDefault(HashMap.empty()))

const addConfig = {
  name: serverName,
  description: Options.text("description").pipe(Options.withDescription("What the server offers."), Options.optional),
  friendlyName: Options.text("friendly-name").pipe(
    Options.withDescription("A display name, e.g. \"Google Calendar\"."),
    Options.optional
  ),
  env: keyValues("env", "K=V for the server's environment, stored as given (V may be a ${NAME} reference)."),
  secretEnv: keyValues(
    "secret-env",
    "K=V whose value is a secret: moved into the secret store, referenced as ${MCP_<SERVER>__<K>}."
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
  root: Options.text("root").pipe(
    Options.withDescription("A folder offered to the server as an MCP root (stored absolute); repeat it for several."),
    Options.repeated
  ),
  oauthClientId: Options.text("oauth-client-id").pipe(
    Options.withDescription("A pre-registered OAuth client id (HTTP servers; used instead of registering one)."),
    Options.optional
  ),
  oauthClientSecret: Options.text("oauth-client-secret").pipe(
    Options.withDescription(
      "Its secret: @- (read from stdin, moved into the secret store as MCP_<SERVER>__OAUTH_CLIENT_SECRET) or a " +
        "${NAME} reference; never the value itself on the command line."
    ),
    Options.optional
  ),
  oauthPrivateKey: Options.text("oauth-private-key").pipe(
    Options.withDescription(
      "The client's private_key_jwt key (a PEM: PKCS#8, SEC1 or PKCS#1): @- (read from stdin, moved into the " +
        "secret store as MCP_<SERVER>__OAUTH_PRIVATE_KEY) or a ${NAME} reference; used where the authorization " +
        "server accepts private_key_jwt."
    ),
    Options.optional
  ),
  oauthSigningAlg: Options.choice("oauth-signing-alg", ServerConfig.OAuthSigningAlgorithm.literals).pipe(
    Options.withDescription("The private key's JWS algorithm (default ES256)."),
    Options.optional
  ),
  oauthClientMetadataUrl: Options.text("oauth-client-metadata-url").pipe(
    Options.withDescription(
      "The URL of this client's Client ID Metadata Document (https): its client id where the authorization " +
        "server supports them, instead of registering a client (not with --oauth-client-id)."
    ),
    Options.optional
  ),
  oauthScope: Options.text("oauth-scope").pipe(
    Options.withDescription("The OAuth scope to ask for (space-separated), instead of what the server names."),
    Options.optional
  ),
  oauthGrant: Options.choice("oauth-grant", ["authorization_code", "client_credentials"]).pipe(
    Options.withDescription(
      "authorization_code (default: a user logs in with `skald mcp login`) or client_credentials (a machine " +
        "client: the host gets its tokens with the client id and secret, no login)."
    ),
    Options.optional
  ),
  replace: Options.boolean("replace").pipe(
    Options.withDescription("Replace the server of that name if one is registered (without it: refused).")
  ),
  home: Host.home,
  verbose: Host.verbose
}

/** What `skald mcp add` parsed. */
export type AddArgs = Command.Command.ParseConfig<typeof addConfig>

const add = Command.make("add", addConfig, Lazy.handler(() => import("./McpHandlers.js"), (m) => m.add)).pipe(
  Command.withDescription(Help.about({
    summary: "Register an MCP server (enabled); an existing name is refused unless --replace.",
    details: [
      "Literal secrets (--secret-env, --api-key) move into the secret store; the registration keeps ${NAME} references."
    ],
    usage: ["skald mcp add [options] NAME -- CMD [ARGS…]", "skald mcp add [options] NAME --http URL"],
    examples: [
      "skald mcp add weather --secret-env API_TOKEN=s3cr3t -- node weather.js",
      "skald mcp add docs --http https://example.com/mcp --api-key-env DOCS_KEY",
      "skald mcp add weather --replace -- node weather.js --units metric",
      "skald mcp add files --root ~/projects/site -- npx -y @modelcontextprotocol/server-filesystem",
      "skald mcp add crm --http https://crm.example.com/mcp --oauth-client-id skald-crm --oauth-client-secret @- < secret.txt",
      "skald mcp add jobs --http https://jobs.example.com/mcp --oauth-grant client_credentials --oauth-client-id bot " +
      "--oauth-client-secret '${JOBS_SECRET}'",
      "skald mcp add ledger --http https://ledger.example.com/mcp --oauth-grant client_credentials " +
      "--oauth-client-id skald-ledger --oauth-private-key @- < ledger-key.pem",
      "skald mcp add wiki --http https://wiki.example.com/mcp --oauth-client-metadata-url https://me.example.com/skald.json"
    ]
  }))
)

const listConfig = { json, home: Host.home, verbose: Host.verbose }

/** What `skald mcp list` parsed. */
export type ListArgs = Command.Command.ParseConfig<typeof listConfig>

const list = Command.make("list", listConfig, Lazy.handler(() => import("./McpHandlers.js"), (m) => m.list)).pipe(
  Command.withDescription(Help.about({
    summary: "List the registered MCP servers and their status.",
    details: ["--json: an array of what `skald mcp show --json` prints, one per server."],
    usage: ["skald mcp list [options]"],
    examples: ["skald mcp list", "skald mcp list --json"]
  }))
)

const nameConfig = { name: serverName, home: Host.home, verbose: Host.verbose }

/** What `skald mcp enable|disable|restart|rm` parsed. */
export type NameArgs = Command.Command.ParseConfig<typeof nameConfig>

const showConfig = { name: serverName, json, home: Host.home, verbose: Host.verbose }

/** What `skald mcp show` parsed. */
export type ShowArgs = Command.Command.ParseConfig<typeof showConfig>

const show = Command.make("show", showConfig, Lazy.handler(() => import("./McpHandlers.js"), (m) => m.show)).pipe(
  Command.withDescription(Help.about({
    summary: "Print a server's configuration and status.",
    details: ["Secrets show as the ${NAME} references stored, never their values."],
    usage: ["skald mcp show [options] NAME"],
    examples: ["skald mcp show weather", "skald mcp show weather --json"]
  }))
)

const toolsConfig = { name: serverName, json, home: Host.home, verbose: Host.verbose }

/** What `skald mcp tools` parsed. */
export type ToolsArgs = Command.Command.ParseConfig<typeof toolsConfig>

const tools = Command.make("tools", toolsConfig, Lazy.handler(() => import("./McpHandlers.js"), (m) => m.tools)).pipe(
  Command.withDescription(Help.about({
    summary: "List the tools of a registered server: the running host's connection, else connecting it here.",
    usage: ["skald mcp tools [options] NAME"],
    examples: ["skald mcp tools weather", "skald mcp tools weather --json"]
  }))
)

const callConfig = {
  name: serverName,
  tool: Args.text({ name: "TOOL" }).pipe(Args.withDescription("The tool to call.")),
  ...CallOptions.options,
  home: Host.home
}

/** What `skald mcp call` parsed. */
export type CallArgs = Command.Command.ParseConfig<typeof callConfig>

const call = Command.make("call", callConfig, Lazy.handler(() => import("./McpHandlers.js"), (m) => m.call)).pipe(
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

const mcpResourcesConfig = { server: serverName, json: Resource.json, home: Host.home }

/** What `skald mcp resources` parsed. */
export type McpResourcesArgs = Command.Command.ParseConfig<typeof mcpResourcesConfig>

/** `skald mcp resources`. */
const resources = Command.make(
  "resources",
  mcpResourcesConfig,
  Lazy.handler(Resource.load, (m) => m.mcpResources)
).pipe(Command.withDescription(Help.about({
  summary: "List the resources and resource templates of a registered server, connecting it in this process.",
  usage: ["skald mcp resources [options] NAME"],
  examples: ["skald mcp resources docs", "skald mcp resources docs --json"]
})))

const mcpReadConfig = {
  server: serverName,
  uri: Resource.uri,
  json: Options.boolean("json").pipe(
    Options.withDescription(
      "Print the contents as JSON: text as sent, each blob as the url and size of its saved file."
    )
  ),
  home: Host.home
}

/** What `skald mcp read` parsed. */
export type McpReadArgs = Command.Command.ParseConfig<typeof mcpReadConfig>

/** `skald mcp read`. */
const read = Command.make("read", mcpReadConfig, Lazy.handler(Resource.load, (m) => m.mcpRead)).pipe(
  Command.withDescription(Help.about({
    summary: "Read one resource of a registered server, connecting it in this process: text as text, binary " +
      "contents saved in the home's media store (data/mcp_media, served by `skald serve` under /api/mcp-media/).",
    usage: ["skald mcp read [options] NAME URI"],
    examples: ["skald mcp read docs docs://index"]
  }))
)

const mcpPromptsConfig = { server: serverName, json: Resource.json, home: Host.home }

/** What `skald mcp prompts` parsed. */
export type McpPromptsArgs = Command.Command.ParseConfig<typeof mcpPromptsConfig>

/** `skald mcp prompts`. */
const prompts = Command.make("prompts", mcpPromptsConfig, Lazy.handler(Resource.load, (m) => m.mcpPrompts)).pipe(
  Command.withDescription(Help.about({
    summary: "List the prompts of a registered server, connecting it in this process.",
    usage: ["skald mcp prompts [options] NAME"],
    examples: ["skald mcp prompts docs"]
  }))
)

const mcpPromptConfig = {
  server: serverName,
  name: Args.text({ name: "PROMPT" }).pipe(Args.withDescription("The prompt to get.")),
  args: Resource.promptArgs,
  json: Resource.json,
  home: Host.home
}

/** What `skald mcp prompt` parsed. */
export type McpPromptArgs = Command.Command.ParseConfig<typeof mcpPromptConfig>

/** `skald mcp prompt`. */
const prompt = Command.make("prompt", mcpPromptConfig, Lazy.handler(Resource.load, (m) => m.mcpPrompt)).pipe(
  Command.withDescription(Help.about({
    summary: "Get one prompt of a registered server (as `skald prompt`), connecting it in this process.",
    usage: ["skald mcp prompt [options] NAME PROMPT"],
    examples: ["skald mcp prompt docs summarize --args '{\"topic\":\"roots\"}'"]
  }))
)

const toggle = (enabled: boolean) =>
  Command.make(
    enabled ? "enable" : "disable",
    nameConfig,
    Lazy.handler(() => import("./McpHandlers.js"), (m) => m.toggle(enabled))
  ).pipe(
    Command.withDescription(Help.about({
      summary: `${enabled ? "Enable" : "Disable"} a registered server (live when the host runs).`,
      usage: [`skald mcp ${enabled ? "enable" : "disable"} [options] NAME`],
      examples: [`skald mcp ${enabled ? "enable" : "disable"} weather`]
    }))
  )

const restart = Command.make("restart", nameConfig, Lazy.handler(() => import("./McpHandlers.js"), (m) => m.restart))
  .pipe(
    Command.withDescription(Help.about({
      summary: "Restart a server now in the running host (a failed one is retried at once).",
      usage: ["skald mcp restart [options] NAME"],
      examples: ["skald mcp restart weather"]
    }))
  )

const rm = Command.make("rm", nameConfig, Lazy.handler(() => import("./McpHandlers.js"), (m) => m.rm)).pipe(
  Command.withDescription(Help.about({
    summary: "Delete a server's registration and the secrets moved in for it, and disconnect it (irreversible).",
    usage: ["skald mcp rm [options] NAME"],
    examples: ["skald mcp rm weather"]
  }))
)

const loginConfig = {
  name: serverName,
  noBrowser: Options.boolean("no-browser").pipe(
    Options.withDescription("Only print the authorization URL; do not open a browser.")
  ),
  home: Host.home
}

/** What `skald mcp login` parsed. */
export type LoginArgs = Command.Command.ParseConfig<typeof loginConfig>

const login = Command.make("login", loginConfig, Lazy.handler(() => import("./McpHandlers.js"), (m) => m.login)).pipe(
  Command.withDescription(Help.about({
    summary: "Authorize an HTTP server (OAuth 2.1): opens a browser if one is there, prints the authorization URL " +
      "and waits for its redirect on 127.0.0.1.",
    details: [
      "The browser: $BROWSER (commands separated by ':', %s for the URL), else open (macOS) or xdg-open (with a " +
      "display). --no-browser: only print the URL."
    ],
    usage: ["skald mcp login [options] NAME"],
    examples: ["skald mcp login notion", "skald mcp login notion --no-browser"]
  }))
)

const logoutConfig = { name: serverName, home: Host.home }

/** What `skald mcp logout` parsed. */
export type LogoutArgs = Command.Command.ParseConfig<typeof logoutConfig>

const logout = Command.make("logout", logoutConfig, Lazy.handler(() => import("./McpHandlers.js"), (m) => m.logout))
  .pipe(
    Command.withDescription(Help.about({
      summary: "Forget an HTTP server's OAuth tokens and registered client (the next connection asks again).",
      usage: ["skald mcp logout [options] NAME"],
      examples: ["skald mcp logout notion"]
    }))
  )

const logsConfig = {
  name: serverName,
  follow: Options.boolean("follow").pipe(
    Options.withAlias("f"),
    Options.withDescription("Keep printing new lines as they are written.")
  ),
  home: Host.home,
  verbose: Host.verbose
}

/** What `skald mcp logs` parsed. */
export type LogsArgs = Command.Command.ParseConfig<typeof logsConfig>

const logs = Command.make("logs", logsConfig, Lazy.handler(() => import("./McpHandlers.js"), (m) => m.logs)).pipe(
  Command.withDescription(Help.about({
    summary: "Print a server's log file (logs/mcp/<name>.log).",
    usage: ["skald mcp logs [options] NAME"],
    examples: ["skald mcp logs weather", "skald mcp logs -f weather"]
  }))
)

const importConfig = {
  file: Args.file({ name: "FILE", exists: "yes" }).pipe(
    Args.withDescription("A Claude Desktop / .mcp.json or VS Code mcp.json file.")
  ),
  home: Host.home
}

/** What `skald mcp import` parsed. */
export type ImportArgs = Command.Command.ParseConfig<typeof importConfig>

const importFile = Command.make(
  "import",
  importConfig,
  Lazy.handler(() => import("./McpHandlers.js"), (m) => m.importFile)
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
  Command.withSubcommands([
    add,
    show,
    list,
    tools,
    call,
    resources,
    read,
    prompts,
    prompt,
    toggle(true),
    toggle(false),
    restart,
    rm,
    login,
    logout,
    logs,
    importFile
  ])
)
