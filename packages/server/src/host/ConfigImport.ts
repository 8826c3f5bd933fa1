/**
 * Importing MCP server configs written for other hosts:
 *
 * - Claude Desktop's `claude_desktop_config.json` and Claude Code's `.mcp.json`: `{"mcpServers":
 *   {name: {command, args, env} | {type: "http"|"sse", url, headers}}}`;
 * - VS Code's `mcp.json`: `{"servers": {name: {type: "stdio", command, args, env} | {type: "http"|"sse",
 *   url, headers}}, "inputs": […]}`.
 *
 * References `${VAR}` and `${env:VAR}` become our `${VAR}`; editor variables (`${workspaceFolder}`,
 * `${userHome}`, …) and Claude Code's `${VAR:-default}` are resolved as `mapReferences` says. A literal value of an env key that
 * looks secret (token, key, secret, password) and a literal bearer token are moved into the
 * secret store under the name `SecretNames.secretNameFor(server, KEY | "API_KEY")` gives
 * (`MCP_<SERVER>__<KEY>`, the rule `skald mcp add` uses); the entry keeps the reference. What cannot
 * be expressed is skipped with the reason: VS Code `${input:…}` prompts, `${cwd}`, `envFile`, headers other
 * than `Authorization: Bearer`, a url carrying credentials (`user:pass@`, `?api_key=…`), invalid
 * names, names already registered.
 *
 * @since 0.1.0
 */
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Path from "node:path"
import { API_KEY_FIELD, isReference, isValidName, secretNameFor } from "./SecretNames.js"
import { credentialsInUrl } from "./SecretStore.js"

/** A secret to move into the store. */
export interface SecretToStore {
  readonly name: string
  readonly value: string
}

/** What one source entry became. */
export type Outcome =
  | {
    readonly _tag: "Imported"
    readonly source: string
    readonly entry: McpServerEntry.McpServerEntry
    readonly secrets: ReadonlyArray<SecretToStore>
  }
  | { readonly _tag: "Skipped"; readonly source: string; readonly reason: string }

const looksSecret = (key: string) => /token|key|secret|password|passwd|credential/i.test(key)

/** What an import knows about where it runs: what editor variables resolve to. */
export interface Context {
  /** The imported file (absolute): `${workspaceFolder}` is the folder holding its `.vscode/` or `.cursor/`. */
  readonly file?: string | undefined
  /** `${userHome}`. */
  readonly userHome?: string | undefined
  /** Whether a variable is set now (stored secret or environment): decides `${VAR:-default}`. */
  readonly isSet?: ((name: string) => boolean) | undefined
}

/** The workspace folder of a file in `<folder>/.vscode/` or `<folder>/.cursor/`, if it is in one. */
export const workspaceFolderOf = (file: string): string | undefined => {
  const dir = Path.dirname(file)
  return /^\.(vscode|cursor)$/.test(Path.basename(dir)) ? Path.dirname(dir) : undefined
}

/**
 * Rewrites a value's references to ours: `${VAR}` and `${env:VAR}` (Cursor, VS Code) become
 * `${VAR}`; `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}` and
 * `${pathSeparator}` become their values when the context knows them; Claude Code's
 * `${VAR:-default}` becomes `${VAR}` when VAR is set now, else the default itself. Fails, saying
 * why, on what cannot be resolved here (`${input:…}`, `${cwd}`, a workspace folder of a file
 * outside `.vscode/`, …).
 */
export const mapReferences = (value: string, context: Context = {}): Either.Either<string, string> => {
  let problem: string | undefined
  const folder = context.file === undefined ? undefined : workspaceFolderOf(context.file)
  const editor: Record<string, string | undefined> = {
    workspaceFolder: folder,
    workspaceFolderBasename: folder === undefined ? undefined : Path.basename(folder),
    userHome: context.userHome,
    pathSeparator: Path.sep
  }
  const mapped = value.replace(/\$\{([^}]*)\}/g, (whole, inner: string) => {
    const withDefault = /^([A-Za-z_][A-Za-z0-9_]*):-(.*)$/s.exec(inner)
    if (withDefault !== null) {
      const [, name, fallback] = withDefault as unknown as [string, string, string]
      return context.isSet?.(name) === false ? fallback : `\${${name}}`
    }
    const m = /^(?:env:)?([A-Za-z_][A-Za-z0-9_]*)$/.exec(inner)
    if (m !== null && !inner.startsWith("env:") && Object.hasOwn(editor, m[1]!)) {
      const known = editor[m[1]!]
      if (known !== undefined) return known
      problem ??= m[1] === "workspaceFolder" || m[1] === "workspaceFolderBasename"
        ? `${whole} is known only for a file in a project's .vscode/ or .cursor/ folder`
        : `${whole} cannot be resolved outside the host it was written for`
      return whole
    }
    if (m !== null && m[1] !== "cwd") return `\${${m[1]}}`
    problem ??= `${whole} cannot be resolved outside the host it was written for`
    return whole
  })
  return problem === undefined ? Either.right(mapped) : Either.left(problem)
}

/** A usable server name from a foreign one, or undefined. */
const nameFrom = (raw: string): string | undefined => {
  if (ServerName.isValid(raw)) return raw
  const cleaned = raw.replace(/[^A-Za-z0-9_-]+/g, "-").replace(/_{2,}/g, "_").replace(/^[_-]+|[_-]+$/g, "").slice(0, 64)
  return ServerName.isValid(cleaned) ? cleaned : undefined
}

const one = (source: string, raw: unknown, existing: ReadonlySet<string>, context: Context): Outcome => {
  const skip = (reason: string): Outcome => ({ _tag: "Skipped", source, reason })
  if (!Predicate.isRecord(raw)) return skip("not an object")
  const name = nameFrom(source)
  if (name === undefined) return skip("no valid server name can be made from it")
  if (existing.has(name)) return skip(`a server named '${name}' is already registered (remove it first to re-import)`)
  const secrets: Array<SecretToStore> = []
  const type = typeof raw.type === "string" ? raw.type : raw.url !== undefined ? "http" : "stdio"
  const enabled = raw.disabled !== true
  const description = typeof raw.description === "string" ? raw.description : undefined
  const meta = { ...(description === undefined ? {} : { description }), enabled }

  if (type === "stdio") {
    if (typeof raw.command !== "string" || raw.command.length === 0) return skip("no command")
    if (raw.envFile !== undefined) return skip("envFile is not supported: put the variables in env")
    const args = raw.args === undefined ? [] : raw.args
    if (!Array.isArray(args) || !args.every((a) => typeof a === "string")) return skip("args must be strings")
    const mappedArgs: Array<string> = []
    for (const a of args) {
      const m = mapReferences(a, context)
      if (Either.isLeft(m)) return skip(`args: ${m.left}`)
      mappedArgs.push(m.right)
    }
    const env: Record<string, string> = {}
    if (raw.env !== undefined) {
      if (!Predicate.isRecord(raw.env)) return skip("env must be an object")
      for (const [key, value] of Object.entries(raw.env)) {
        if (typeof value !== "string") return skip(`env ${key} is not a string`)
        if (!isValidName(key)) return skip(`env ${JSON.stringify(key)} is not a variable name`)
        const m = mapReferences(value, context)
        if (Either.isLeft(m)) return skip(`env ${key}: ${m.left}`)
        if (looksSecret(key) && !m.right.includes("${") && m.right.length > 0) {
          const secret = secretNameFor(name, key)
          secrets.push({ name: secret, value: m.right })
          env[key] = `\${${secret}}`
        } else {
          env[key] = m.right
        }
      }
    }
    const command = mapReferences(raw.command, context)
    if (Either.isLeft(command)) return skip(`command: ${command.left}`)
    return {
      _tag: "Imported",
      source,
      secrets,
      entry: McpServerEntry.McpServerEntry.make({
        name: ServerName.make(name),
        config: ServerConfig.StdioServerConfig.make({ command: command.right, args: mappedArgs, env }),
        ...meta
      })
    }
  }
  if (type === "http" || type === "sse" || type === "streamable-http" || type === "streamableHttp") {
    if (typeof raw.url !== "string") return skip("no url")
    const url = mapReferences(raw.url, context)
    if (Either.isLeft(url)) return skip(`url: ${url.left}`)
    if (!URL.canParse(url.right) || !/^https?:$/.test(new URL(url.right).protocol)) {
      return skip("the url is not http(s)")
    }
    const credentials = credentialsInUrl(url.right)
    if (credentials !== undefined) {
      return skip(
        `the url carries a credential (${credentials}); register the server with an api key from the secret store instead`
      )
    }
    let apiKey: string | undefined
    if (raw.headers !== undefined) {
      if (!Predicate.isRecord(raw.headers)) return skip("headers must be an object")
      for (const [header, value] of Object.entries(raw.headers)) {
        if (header.toLowerCase() !== "authorization" || typeof value !== "string") {
          return skip(`header ${header} is not supported (only Authorization: Bearer)`)
        }
        const bearer = /^Bearer\s+(.+)$/i.exec(value.trim())
        if (bearer === null) return skip("an Authorization header that is not a bearer token is not supported")
        const m = mapReferences(bearer[1]!, context)
        if (Either.isLeft(m)) return skip(`Authorization: ${m.left}`)
        if (isReference(m.right)) {
          apiKey = m.right
        } else if (m.right.includes("${")) {
          return skip("Authorization mixes text and references")
        } else {
          const secret = secretNameFor(name, API_KEY_FIELD)
          secrets.push({ name: secret, value: m.right })
          apiKey = `\${${secret}}`
        }
      }
    }
    return {
      _tag: "Imported",
      source,
      secrets,
      entry: McpServerEntry.McpServerEntry.make({
        name: ServerName.make(name),
        config: ServerConfig.HttpServerConfig.make(
          apiKey === undefined ? { url: url.right } : { url: url.right, apiKey }
        ),
        ...meta
      })
    }
  }
  return skip(`transport type ${JSON.stringify(type)} is not supported`)
}

/** The entries of a config file's JSON, each imported or skipped with a reason. */
export const fromJson = (
  json: unknown,
  existing: ReadonlySet<string>,
  context: Context = {}
): Either.Either<ReadonlyArray<Outcome>, string> => {
  if (!Predicate.isRecord(json)) return Either.left("the file is not a JSON object")
  const servers = Predicate.isRecord(json.mcpServers)
    ? json.mcpServers
    : Predicate.isRecord(json.servers)
    ? json.servers
    : undefined
  if (servers === undefined) {
    return Either.left("no `mcpServers` (Claude Desktop, .mcp.json) or `servers` (VS Code mcp.json) object found")
  }
  const taken = new Set(existing)
  const outcomes: Array<Outcome> = []
  for (const [source, raw] of Object.entries(servers)) {
    const outcome = one(source, raw, taken, context)
    if (outcome._tag === "Imported") taken.add(outcome.entry.name)
    outcomes.push(outcome)
  }
  return Either.right(outcomes)
}
