/**
 * The secret store (DESIGN §5 *Secrets*): `secrets/vars/<NAME>`, one file per secret, mode 0600,
 * written atomically (a temporary file renamed over the old one), in folders of mode 0700.
 * Server configs refer to secrets as `${NAME}`; they are resolved at connect time from the store,
 * then the process environment, and only ever reach the child's environment or an Authorization
 * header.
 *
 * @since 0.1.0
 */
import type { ServerConfig } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { InvalidSecretName, SecretStoreError, UnknownSecretReference } from "./HostError.js"
import { Paths } from "./Paths.js"
import * as Redactor from "./Redactor.js"
import { isValidName, references, substitute } from "./SecretNames.js"

/** Query parameters that carry credentials when found in a URL. */
const credentialParameters = new Set([
  "api_key",
  "apikey",
  "api-key",
  "token",
  "access_token",
  "auth_token",
  "refresh_token",
  "id_token",
  "auth",
  "key",
  "secret",
  "client_secret",
  "password",
  "passwd",
  "pwd"
])

/**
 * What in a URL is a credential — a user name or password (`http://user:PASS@host`), or a query
 * parameter named like one (`api_key`, `apikey`, `token`, `access_token`, `key`, `secret`,
 * `password`, …) — or undefined. A URL is stored as given and printed in logs and errors.
 */
export const credentialsInUrl = (url: string): string | undefined => {
  if (!URL.canParse(url)) return undefined
  const parsed = new URL(url)
  if (parsed.username !== "" || parsed.password !== "") return "a user name or password (user:password@host)"
  for (const key of parsed.searchParams.keys()) {
    if (credentialParameters.has(key.toLowerCase())) return `the query parameter ${JSON.stringify(key)}`
  }
  return undefined
}

/** A folder or file of the secrets folder that its group or others may read, write or enter. */
export interface Exposed {
  readonly path: string
  readonly kind: "folder" | "file"
  /** The permission bits, e.g. 0o644. */
  readonly mode: number
}

/** What `chmod` gives an exposed folder or file. */
export const privateMode = (kind: Exposed["kind"]): number => kind === "folder" ? 0o700 : 0o600

/** The warning for an exposed path, naming it and the `chmod` that fixes it. */
export const exposedWarning = (e: Exposed): string =>
  `the secrets ${e.kind} ${e.path} is accessible to other users (mode ${e.mode.toString(8).padStart(4, "0")}); ` +
  `fix it with: chmod ${privateMode(e.kind).toString(8)} ${e.path}`

/** An HTTP server's OAuth client settings with the client secret's and private key's references resolved. */
export interface ResolvedOAuth {
  readonly clientId?: string | undefined
  readonly clientSecret?: Redacted.Redacted<string> | undefined
  readonly privateKey?: Redacted.Redacted<string> | undefined
  readonly signingAlgorithm?: ServerConfig.OAuthSigningAlgorithm | undefined
  readonly clientMetadataUrl?: string | undefined
  readonly scope?: string | undefined
  readonly grant?: "authorization_code" | "client_credentials" | undefined
}

/** A server config with its references resolved: what the transport is started with. */
export type Resolved =
  & (
    | {
      readonly _tag: "stdio"
      readonly command: string
      readonly args: ReadonlyArray<string>
      readonly env: Readonly<Record<string, string>>
    }
    | {
      readonly _tag: "http"
      readonly url: string
      readonly apiKey: Redacted.Redacted<string> | undefined
      /** The OAuth client settings, the client secret resolved. */
      readonly oauth?: ResolvedOAuth | undefined
    }
  )
  & {
    /** The values the references resolved to: what must never appear in a log line or a status. */
    readonly secrets: ReadonlyArray<Redacted.Redacted<string>>
  }

const io = <A>(operation: string, path: string, f: () => A) =>
  Effect.try({
    try: f,
    catch: (cause) => new SecretStoreError({ operation, path, reason: (cause as Error).message ?? String(cause) })
  })

/** The secret store. */
export class SecretStore extends Effect.Service<SecretStore>()("@skald/server/SecretStore", {
  effect: Effect.gen(function*() {
    const paths = yield* Paths
    const dir = Path.join(paths.secretsDir, "vars")

    const checkName = (name: string) => isValidName(name) ? Effect.void : Effect.fail(new InvalidSecretName({ name }))
    const ensureDirs = io("create", dir, () => {
      for (const d of [paths.secretsDir, dir]) {
        Fs.mkdirSync(d, { recursive: true, mode: 0o700 })
        Fs.chmodSync(d, 0o700)
      }
    })

    const set = Effect.fn("SecretStore.set")(function*(name: string, value: Redacted.Redacted<string>) {
      yield* checkName(name)
      yield* ensureDirs
      const file = Path.join(dir, name)
      const tmp = Path.join(dir, `.${name}.${Crypto.randomBytes(6).toString("hex")}.tmp`)
      yield* io("write", file, () => {
        const fd = Fs.openSync(tmp, "wx", 0o600)
        try {
          Fs.writeSync(fd, Redacted.value(value))
          Fs.fsyncSync(fd)
        } finally {
          Fs.closeSync(fd)
        }
        try {
          Fs.renameSync(tmp, file)
        } catch (error) {
          Fs.rmSync(tmp, { force: true })
          throw error
        }
      })
    })

    const get = Effect.fn("SecretStore.get")(function*(name: string) {
      if (!isValidName(name)) return Option.none<Redacted.Redacted<string>>()
      const file = Path.join(dir, name)
      return yield* io("read", file, () => {
        try {
          // Never through a link planted in the store, symbolic or hard (docs/manager.md: the database rule).
          const stat = Fs.lstatSync(file, { throwIfNoEntry: false })
          if (stat === undefined) return Option.none<Redacted.Redacted<string>>()
          if (!stat.isFile() || stat.nlink !== 1) throw new Error("it is not a plain file (a link?)")
          const fd = Fs.openSync(file, Fs.constants.O_RDONLY | Fs.constants.O_NOFOLLOW | Fs.constants.O_NONBLOCK)
          try {
            return Option.some(Redacted.make(Fs.readFileSync(fd, "utf8")))
          } finally {
            Fs.closeSync(fd)
          }
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOENT") return Option.none<Redacted.Redacted<string>>()
          throw error
        }
      })
    })

    const list = io("list", dir, () => {
      try {
        return Fs.readdirSync(dir).filter(isValidName).sort()
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return []
        throw error
      }
    })

    const remove = Effect.fn("SecretStore.remove")(function*(name: string) {
      yield* checkName(name)
      const file = Path.join(dir, name)
      return yield* io("remove", file, () => {
        if (!Fs.existsSync(file)) return false
        Fs.rmSync(file)
        return true
      })
    })

    /** Replaces each `${NAME}` from the store, then the environment; fails naming the first unknown one. */
    const interpolate = (server: string, template: string, found?: Array<Redacted.Redacted<string>>) =>
      Effect.gen(function*() {
        const values = new Map<string, string>()
        for (const name of references(template)) {
          const stored = yield* get(name)
          const value = Option.isSome(stored) ? Redacted.value(stored.value) : process.env[name]
          if (value === undefined) return yield* new UnknownSecretReference({ server, variable: name })
          values.set(name, value)
          found?.push(Redacted.make(value))
        }
        return Redacted.make(substitute(template, (name) => values.get(name)!))
      })

    /** Resolves the env values (stdio) or the api key (http) of a config. */
    const resolve = Effect.fn("SecretStore.resolve")(function*(server: string, config: ServerConfig.ServerConfig) {
      const secrets: Array<Redacted.Redacted<string>> = []
      if (config._tag === "http") {
        // A literal api key is a secret too.
        const apiKey = config.apiKey === undefined ? undefined : yield* interpolate(server, config.apiKey, secrets)
        if (apiKey !== undefined) secrets.push(apiKey)
        const o = config.oauth
        if (o === undefined) return { _tag: "http", url: config.url, apiKey, secrets } satisfies Resolved as Resolved
        const clientSecret = o.clientSecret === undefined
          ? undefined
          : yield* interpolate(server, o.clientSecret, secrets)
        if (clientSecret !== undefined) secrets.push(clientSecret)
        const privateKey = o.privateKey === undefined ? undefined : yield* interpolate(server, o.privateKey, secrets)
        if (privateKey !== undefined) secrets.push(privateKey)
        const oauth: ResolvedOAuth = {
          clientId: o.clientId,
          clientSecret,
          privateKey,
          signingAlgorithm: o.signingAlgorithm,
          clientMetadataUrl: o.clientMetadataUrl,
          scope: o.scope,
          grant: o.grant
        }
        return { _tag: "http", url: config.url, apiKey, oauth, secrets } satisfies Resolved as Resolved
      }
      const env: Record<string, string> = {}
      for (const [key, template] of Object.entries(config.env)) {
        env[key] = Redacted.value(yield* interpolate(server, template, secrets))
      }
      return { _tag: "stdio", command: config.command, args: config.args, env, secrets } satisfies Resolved as Resolved
    })

    /** The secrets folder, its sub-folders and files that the group or others have any access to. */
    const exposed = io("inspect", paths.secretsDir, () => {
      const out: Array<Exposed> = []
      // The folder itself may be a link (to another volume); links inside it are not followed.
      const visit = (path: string, follow = false) => {
        let stat: Fs.Stats
        try {
          stat = follow ? Fs.statSync(path) : Fs.lstatSync(path)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOENT") return
          throw error
        }
        const kind = stat.isDirectory() ? "folder" : stat.isFile() ? "file" : undefined
        if (kind === undefined) return
        const mode = stat.mode & 0o777
        if ((mode & 0o077) !== 0) out.push({ path, kind, mode })
        if (kind === "folder") { for (const name of Fs.readdirSync(path).sort()) visit(Path.join(path, name)) }
      }
      visit(paths.secretsDir, true)
      return out as ReadonlyArray<Exposed>
    })

    return { set, get, list, remove, interpolate, resolve, exposed } as const
  })
}) {}

/**
 * Replaces every form of the given secrets in `text` (raw, line by line, JSON-escaped,
 * percent-encoded: see Redactor.ts) with `[redacted]`. Build one `Redactor` when redacting many texts.
 */
export const redact = (secrets: ReadonlyArray<Redacted.Redacted<string>>, text: string): string =>
  Redactor.make(secrets).redact(text)
