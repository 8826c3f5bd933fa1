/**
 * Registering a server: a request (what `skald mcp add`'s flags or an imported file say, later an
 * RPC) becomes a validated registry entry, with every literal secret moved into the secret store
 * and the entry keeping only its `${NAME}` reference. An existing name is refused unless the
 * request says to replace it. `describe` is the other way: an entry as it may be shown, with the
 * references as stored (a registry entry never holds a secret's value).
 *
 * @since 0.1.0
 */
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { InvalidServerEntry, ServerAlreadyRegistered } from "./HostError.js"
import { isLoopback } from "./Loopback.js"
import { validate } from "./McpManager.js"
import { McpServerRepo } from "./McpServerRepo.js"
import {
  API_KEY_FIELD,
  isReference,
  isValidName,
  OAUTH_CLIENT_SECRET_FIELD,
  OAUTH_PRIVATE_KEY_FIELD,
  secretNameFor
} from "./SecretNames.js"
import { SecretStore } from "./SecretStore.js"
import * as ServerSecrets from "./ServerSecrets.js"

/** How the server is reached, as requested. */
export type Transport =
  | {
    readonly _tag: "stdio"
    readonly command: string
    readonly args: ReadonlyArray<string>
    /** Stored as given (values may be `${NAME}` references). */
    readonly env: Readonly<Record<string, string>>
    /** Secret values: a literal is moved to the store as `secretNameFor(server, key)`; a reference is kept. */
    readonly secretEnv: Readonly<Record<string, string>>
  }
  | {
    readonly _tag: "http"
    readonly url: string
    /** A `${NAME}` reference, or a literal moved to the store as `secretNameFor(server, "API_KEY")`. */
    readonly apiKey?: string | undefined
    /** The variable (stored secret or environment) holding the api key: stored as `${VARIABLE}`. */
    readonly apiKeyVariable?: string | undefined
    /** OAuth client settings (not with an api key, which turns OAuth off). */
    readonly oauth?: OAuthRequest | undefined
  }

/** A pre-registered OAuth client (or a Client ID Metadata Document), its scope and grant, as requested. */
export interface OAuthRequest {
  readonly clientId?: string | undefined
  /** A `${NAME}` reference, or a literal moved to the store as `secretNameFor(server, "OAUTH_CLIENT_SECRET")`. */
  readonly clientSecret?: string | undefined
  /**
   * The `private_key_jwt` key: a `${NAME}` reference, or a literal PEM (PKCS#8, SEC1 or PKCS#1),
   * checked against the algorithm and moved to the store, as PKCS#8, as
   * `secretNameFor(server, "OAUTH_PRIVATE_KEY")`.
   */
  readonly privateKey?: string | undefined
  readonly signingAlgorithm?: ServerConfig.OAuthSigningAlgorithm | undefined
  /** The URL of the client's Client ID Metadata Document (https; http only on a loopback host). */
  readonly clientMetadataUrl?: string | undefined
  readonly scope?: string | undefined
  readonly grant?: "authorization_code" | "client_credentials" | undefined
}

/** The key type and curve each algorithm signs with. */
const keyFor = (alg: ServerConfig.OAuthSigningAlgorithm): { readonly type: "ec" | "rsa"; readonly curve?: string } =>
  alg.startsWith("ES")
    ? { type: "ec", curve: alg === "ES256" ? "prime256v1" : alg === "ES384" ? "secp384r1" : "secp521r1" }
    : { type: "rsa" }

/**
 * A literal private key as the PKCS#8 PEM the engine imports, or why it cannot sign with `alg`
 * (never quoting the key).
 */
export const pkcs8Key = (
  pem: string,
  alg: ServerConfig.OAuthSigningAlgorithm
): { readonly pem: string } | { readonly problem: string } => {
  let key: Crypto.KeyObject
  try {
    key = Crypto.createPrivateKey({ key: pem, format: "pem" })
  } catch {
    return { problem: "the OAuth private key is not a PEM private key (unencrypted PKCS#8, SEC1 or PKCS#1)" }
  }
  const wanted = keyFor(alg)
  const curve = key.asymmetricKeyDetails?.namedCurve
  if (key.asymmetricKeyType !== wanted.type || (wanted.curve !== undefined && curve !== wanted.curve)) {
    const has = key.asymmetricKeyType === "ec"
      ? `an EC key on ${curve ?? "an unknown curve"}`
      : `a ${key.asymmetricKeyType} key`
    const needs = wanted.type === "ec" ? `an EC key on ${wanted.curve}` : "an RSA key"
    return { problem: `the OAuth private key is ${has}, but ${alg} signs with ${needs}` }
  }
  return { pem: key.export({ type: "pkcs8", format: "pem" }).toString() }
}

/** Where a Client ID Metadata Document may live: https with a path; http only on a loopback host. */
const metadataUrlProblem = (value: string): string | undefined => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return `the Client ID Metadata Document URL is not a URL: ${JSON.stringify(value)}`
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopback(url.hostname))) {
    return "the Client ID Metadata Document URL must be https (http only on a loopback host)"
  }
  if (url.pathname === "/" || url.pathname === "") return "the Client ID Metadata Document URL needs a path"
  if (url.hash !== "") return "the Client ID Metadata Document URL must not have a fragment"
  return undefined
}

/** A registration as requested. */
export interface Request {
  readonly name: string
  readonly transport: Transport
  readonly description?: string | undefined
  readonly friendlyName?: string | undefined
  /** Default true. */
  readonly enabled?: boolean | undefined
  /** Folders offered to the server as MCP roots (made absolute from the current folder). Default none. */
  readonly roots?: ReadonlyArray<string> | undefined
  /** Replace an entry of the same name instead of refusing. Default false. */
  readonly replace?: boolean | undefined
}

/** A secret value to move into the store. */
export interface SecretToStore {
  readonly name: string
  readonly value: string
}

/** A validated registration: the entry to store and the secrets it refers to. */
export interface Planned {
  readonly entry: McpServerEntry.McpServerEntry
  readonly secrets: ReadonlyArray<SecretToStore>
}

/** What `register` did. */
export interface Registered extends Planned {
  /** True when an entry of that name was replaced. */
  readonly replaced: boolean
  /** The secrets moved in for the replaced entry that the new one no longer uses: removed. */
  readonly droppedSecrets: ReadonlyArray<string>
}

const invalid = (reason: string) => Effect.fail(new InvalidServerEntry({ reason }))

/** The rule for server names, in words. */
export const NAME_RULE = "use 1-64 letters, digits, '-' and '_', never '__', and do not start or end with '_'"

/** Checks a request and builds its entry (nothing is stored). */
export const plan = (request: Request): Effect.Effect<Planned, InvalidServerEntry> => {
  if (!ServerName.isValid(request.name)) {
    return invalid(`the name ${JSON.stringify(request.name)} is not valid: ${NAME_RULE}`)
  }
  const name = ServerName.make(request.name)
  const secrets: Array<SecretToStore> = []
  /** A reference stays; a literal moves to the store under `secretNameFor(name, suffix)`. */
  const toReference = (value: string, suffix: string): string => {
    if (isReference(value)) return value
    const secret = secretNameFor(name, suffix)
    secrets.push({ name: secret, value })
    return `\${${secret}}`
  }
  const t = request.transport
  const given = request.roots ?? []
  if (given.some((root) => root.trim().length === 0)) return invalid("a root folder path is empty")
  const absolute = [...new Set(given.map((root) => Path.resolve(root)))]
  const missing = absolute.find((root) => !Fs.statSync(root, { throwIfNoEntry: false })?.isDirectory())
  if (missing !== undefined) return invalid(`the root ${JSON.stringify(missing)} is not a folder`)
  const roots = absolute.length === 0 ? {} : { roots: absolute }
  let config: ServerConfig.ServerConfig
  if (t._tag === "stdio") {
    if (t.command.trim().length === 0) return invalid("the command is empty")
    const env: Record<string, string> = {}
    for (const [key, value] of [...Object.entries(t.env), ...Object.entries(t.secretEnv)]) {
      if (!isValidName(key)) return invalid(`invalid environment variable name ${JSON.stringify(key)}`)
      if (Object.hasOwn(env, key)) return invalid(`the environment variable ${key} is given twice`)
      env[key] = Object.hasOwn(t.secretEnv, key) ? toReference(value, key) : value
    }
    config = ServerConfig.StdioServerConfig.make({ command: t.command, args: [...t.args], env, ...roots })
  } else {
    // An empty URL is no entry at all (`HttpServerConfig` would refuse it as a defect).
    if (t.url.trim().length === 0) return invalid("the url must be http(s), got \"\"")
    if (t.apiKey !== undefined && t.apiKeyVariable !== undefined) {
      return invalid("give either the api key or the variable holding it, not both")
    }
    if (t.apiKeyVariable !== undefined && !isValidName(t.apiKeyVariable)) {
      return invalid(`the api key variable must be a variable name, got ${JSON.stringify(t.apiKeyVariable)}`)
    }
    const apiKey = t.apiKeyVariable !== undefined
      ? `\${${t.apiKeyVariable}}`
      : t.apiKey === undefined || t.apiKey.length === 0
      ? undefined
      : toReference(t.apiKey, API_KEY_FIELD)
    const o = t.oauth
    const given = o !== undefined &&
      [o.clientId, o.clientSecret, o.privateKey, o.signingAlgorithm, o.clientMetadataUrl, o.scope, o.grant].some((v) =>
        v !== undefined
      )
    if (given && apiKey !== undefined) {
      return invalid("an api key turns OAuth off: give either the api key or the OAuth client settings, not both")
    }
    if (o?.clientId !== undefined && o.clientId.trim().length === 0) return invalid("the OAuth client id is empty")
    if (o?.clientSecret !== undefined && o.clientId === undefined) {
      return invalid("an OAuth client secret needs the client id it belongs to")
    }
    if (o?.clientSecret !== undefined && o.clientSecret.length === 0) return invalid("the OAuth client secret is empty")
    if (o?.clientMetadataUrl !== undefined) {
      const problem = metadataUrlProblem(o.clientMetadataUrl)
      if (problem !== undefined) return invalid(problem)
      if (o.clientId !== undefined) {
        return invalid("give either a pre-registered client id or a Client ID Metadata Document URL, not both")
      }
      if (o.grant === "client_credentials") {
        return invalid("a Client ID Metadata Document is for a user's authorization, not the client credentials grant")
      }
    }
    if (o?.grant === "client_credentials" && o.clientId === undefined) {
      return invalid("the client credentials grant needs a pre-registered client id (and usually its secret)")
    }
    if (o?.scope !== undefined && o.scope.trim().length === 0) return invalid("the OAuth scope is empty")
    if (o?.privateKey !== undefined && o.clientId === undefined) {
      return invalid("an OAuth private key needs the client id it belongs to")
    }
    if (o?.privateKey !== undefined && o.privateKey.trim().length === 0) {
      return invalid("the OAuth private key is empty")
    }
    if (o?.signingAlgorithm !== undefined && o.privateKey === undefined) {
      return invalid("an OAuth signing algorithm goes with the private key it signs with")
    }
    let privateKey = o?.privateKey
    if (privateKey !== undefined && !isReference(privateKey)) {
      const checked = pkcs8Key(privateKey, o?.signingAlgorithm ?? "ES256")
      if ("problem" in checked) return invalid(checked.problem)
      privateKey = checked.pem
    }
    const oauth: ServerConfig.HttpOAuthConfig | undefined = !given ? undefined : {
      ...(o.clientId === undefined ? {} : { clientId: o.clientId }),
      ...(o.clientSecret === undefined ? {} : { clientSecret: toReference(o.clientSecret, OAUTH_CLIENT_SECRET_FIELD) }),
      ...(privateKey === undefined ? {} : { privateKey: toReference(privateKey, OAUTH_PRIVATE_KEY_FIELD) }),
      ...(o.signingAlgorithm === undefined ? {} : { signingAlgorithm: o.signingAlgorithm }),
      ...(o.clientMetadataUrl === undefined ? {} : { clientMetadataUrl: o.clientMetadataUrl }),
      ...(o.scope === undefined ? {} : { scope: o.scope.trim() }),
      ...(o.grant === undefined ? {} : { grant: o.grant })
    }
    config = ServerConfig.HttpServerConfig.make({
      url: t.url,
      ...(apiKey === undefined ? {} : { apiKey }),
      ...roots,
      ...(oauth === undefined ? {} : { oauth })
    })
  }
  const entry = McpServerEntry.McpServerEntry.make({
    name,
    config,
    enabled: request.enabled ?? true,
    ...(request.description === undefined ? {} : { description: request.description }),
    ...(request.friendlyName === undefined ? {} : { friendlyName: request.friendlyName })
  })
  return Effect.as(validate(entry), { entry, secrets } satisfies Planned as Planned)
}

/** What a literal api key (an entry registered by a library user, not through `register`) shows as. */
export const HIDDEN = "[literal, not shown]"

/**
 * An entry as it may be shown (`skald mcp show`, `list --json`): references as stored, never
 * values. An api key that is not exactly a `${NAME}` reference is a literal secret: hidden.
 */
export const describe = (entry: McpServerEntry.McpServerEntry) => {
  const c = entry.config
  return {
    name: entry.name as string,
    ...(entry.friendlyName === undefined ? {} : { friendlyName: entry.friendlyName }),
    ...(entry.description === undefined ? {} : { description: entry.description }),
    enabled: entry.enabled,
    ...(c.roots === undefined || c.roots.length === 0 ? {} : { roots: [...c.roots] }),
    ...(c._tag === "stdio"
      ? { transport: "stdio" as const, command: c.command, args: [...c.args], env: { ...c.env } }
      : {
        transport: "http" as const,
        url: c.url,
        ...(c.apiKey === undefined ? {} : { apiKey: isReference(c.apiKey) ? c.apiKey : HIDDEN }),
        ...(c.oauth === undefined ? {} : {
          oauth: {
            ...c.oauth,
            ...(c.oauth.clientSecret === undefined
              ? {}
              : { clientSecret: isReference(c.oauth.clientSecret) ? c.oauth.clientSecret : HIDDEN }),
            ...(c.oauth.privateKey === undefined
              ? {}
              : { privateKey: isReference(c.oauth.privateKey) ? c.oauth.privateKey : HIDDEN })
          }
        })
      })
  }
}

/** What `describe` gives. */
export type Description = ReturnType<typeof describe>

/** Registers servers: validation, secrets to the store, the registry row. */
export class Registration extends Effect.Service<Registration>()("@skald/server/Registration", {
  effect: Effect.gen(function*() {
    const repo = yield* McpServerRepo
    const store = yield* SecretStore

    /** Stores a planned registration; refuses an existing name unless `replace`. */
    const apply = Effect.fn("Registration.apply")(function*(planned: Planned, replace: boolean) {
      const name = planned.entry.name
      yield* Effect.annotateCurrentSpan("mcp.server", name)
      const existing = yield* repo.get(name)
      if (Option.isSome(existing) && !replace) return yield* new ServerAlreadyRegistered({ name })
      for (const secret of planned.secrets) yield* store.set(secret.name, Redacted.make(secret.value))
      // Replacing: the secrets moved in for the old entry that the new one no longer uses are removed.
      const droppedSecrets = yield* ServerSecrets.upsert(planned.entry)
      return { ...planned, replaced: Option.isSome(existing), droppedSecrets } satisfies Registered as Registered
    })

    /** Validates the request, moves its literal secrets to the store and writes the entry. */
    const register = Effect.fn("Registration.register")(function*(request: Request) {
      const planned = yield* plan(request)
      return yield* apply(planned, request.replace ?? false)
    })

    /** The entry of that name, as it may be shown. */
    const show = Effect.fn("Registration.show")(function*(name: ServerName.ServerName) {
      return Option.map(yield* repo.get(name), describe)
    })

    return { register, apply, show } as const
  })
}) {}
