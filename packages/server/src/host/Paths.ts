/**
 * Where the host keeps its files (DESIGN §5 *Homes*): `SKALD_HOME` (default `.`, or `--home`)
 * holds `data/` (`skald.db`, `mcp_media/`), `logs/` (`logs/mcp/<name>.log`) and `secrets/`;
 * `SKALD_DATA_DIR`, `SKALD_LOGS_DIR` and `SKALD_SECRETS_DIR` override each folder.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "node:path"

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

/** Paths from a home folder and optional per-folder overrides (relative paths resolve against the cwd). */
export const make = (options: {
  readonly home: string
  readonly dataDir?: string | undefined
  readonly logsDir?: string | undefined
  readonly secretsDir?: string | undefined
}): Service => {
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
export class Paths extends Context.Tag("@skald/server/Paths")<Paths, Service>() {
  /** From `--home` (when given) or `SKALD_HOME`, and the `SKALD_*_DIR` overrides. */
  static readonly layer = (homeFlag: Option.Option<string> = Option.none()) =>
    Layer.effect(
      Paths,
      Effect.gen(function*() {
        const optional = (name: string) => Config.option(Config.nonEmptyString(name)).pipe(Effect.map(Option.getOrUndefined))
        const home = Option.isSome(homeFlag) ? homeFlag.value : (yield* optional("SKALD_HOME")) ?? "."
        return make({
          home,
          dataDir: yield* optional("SKALD_DATA_DIR"),
          logsDir: yield* optional("SKALD_LOGS_DIR"),
          secretsDir: yield* optional("SKALD_SECRETS_DIR")
        })
      })
    )
}
