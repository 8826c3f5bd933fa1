/**
 * Where the host keeps its files (DESIGN §5 *Homes*): `SKALD_HOME` (default `.`, or `--home`)
 * holds `data/` (`skald.db`, `mcp_media/`), `logs/` (`logs/mcp/<name>.log`) and `secrets/`;
 * `SKALD_DATA_DIR`, `SKALD_LOGS_DIR` and `SKALD_SECRETS_DIR` override each folder. The host's
 * folders are private (mode 0700) and the files it writes in them too (0600): `ensurePrivateDir`,
 * `privateFile`.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The mode of the host's folders. */
export const PRIVATE_DIR_MODE = 0o700

/** The mode of the files the host writes. */
export const PRIVATE_FILE_MODE = 0o600

const chmodIfOwned = (path: string, mode: number) => {
  try {
    Fs.chmodSync(path, mode)
  } catch (error) {
    // A folder given by an override may belong to someone else: leave it as it is.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") throw error
  }
}

/**
 * Creates `dir` (and missing parents) with mode 0700 and makes `dir` itself 0700 if it existed
 * with a wider mode. Synchronous: a foreign call the caller wraps once.
 */
export const ensurePrivateDir = (dir: string): void => {
  Fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
  if ((Fs.statSync(dir).mode & 0o777) !== PRIVATE_DIR_MODE) chmodIfOwned(dir, PRIVATE_DIR_MODE)
}

/** Makes an existing file 0600 (nothing when it does not exist). */
export const privateFile = (file: string): void => {
  let mode: number
  try {
    mode = Fs.statSync(file).mode & 0o777
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return
    throw error
  }
  if (mode !== PRIVATE_FILE_MODE) chmodIfOwned(file, PRIVATE_FILE_MODE)
}

/** Absolute paths of the host's folders and files. */
export interface Service {
  readonly home: string
  readonly dataDir: string
  readonly database: string
  readonly mediaDir: string
  /** The folder holding `mcp/`. */
  readonly logsDir: string
  /** `logs/mcp`: one log file per server. */
  readonly mcpLogsDir: string
  readonly secretsDir: string
}

/** Where a home and its overrides put each folder and file. */
interface Options {
  readonly home: string
  readonly dataDir?: string | undefined
  readonly logsDir?: string | undefined
  readonly secretsDir?: string | undefined
}

const resolve = (options: Options): Service => {
  const home = Path.resolve(options.home)
  const dataDir = Path.resolve(options.dataDir ?? Path.join(home, "data"))
  const logsDir = Path.resolve(options.logsDir ?? Path.join(home, "logs"))
  return {
    home,
    dataDir,
    database: Path.join(dataDir, "skald.db"),
    mediaDir: Path.join(dataDir, "mcp_media"),
    logsDir,
    mcpLogsDir: Path.join(logsDir, "mcp"),
    secretsDir: Path.resolve(options.secretsDir ?? Path.join(home, "secrets"))
  }
}

/** The host's paths. */
export class Paths extends Effect.Service<Paths>()("@skald/server/Paths", {
  /** From `--home` (when given) or `SKALD_HOME`, and the `SKALD_*_DIR` overrides: `Paths.Default(homeFlag)`. */
  effect: (homeFlag: Option.Option<string> = Option.none()) =>
    Effect.gen(function*() {
      const optional = (name: string) =>
        Config.option(Config.nonEmptyString(name)).pipe(Effect.map(Option.getOrUndefined))
      const home = Option.isSome(homeFlag) ? homeFlag.value : (yield* optional("SKALD_HOME")) ?? "."
      return resolve({
        home,
        dataDir: yield* optional("SKALD_DATA_DIR"),
        logsDir: yield* optional("SKALD_LOGS_DIR"),
        secretsDir: yield* optional("SKALD_SECRETS_DIR")
      })
    })
}) {
  /** The paths of `home` alone, reading no `SKALD_*` variable: a hermetic home for tests. */
  static readonly Test = (home: string): Layer.Layer<Paths> => Layer.succeed(Paths, make({ home }))
}

/** Paths from a home folder and optional per-folder overrides (relative paths resolve against the cwd). */
export const make = (options: Options): Paths => Paths.make(resolve(options))
