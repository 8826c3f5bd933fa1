/**
 * Settings read from the environment (DESIGN §5), with their defaults.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** Timeouts of MCP connections. */
export interface Service {
  readonly callTimeout: Duration.Duration
  readonly startTimeout: Duration.Duration
  /** Where `skald serve` listens. */
  readonly host: string
  readonly port: number
}

const seconds = (name: string, fallback: number) =>
  Config.number(name).pipe(
    Config.validate({ message: `${name} must be a positive number of seconds`, validation: (n) => n > 0 }),
    Config.withDefault(fallback),
    Config.map((s) => Duration.millis(Math.round(s * 1000)))
  )

/**
 * The settings: `Settings.Default` reads `SKALD_MCP_CALL_TIMEOUT` and `SKALD_MCP_START_TIMEOUT`
 * (seconds, default 120 each), `SKALD_HOST` (127.0.0.1) and `SKALD_PORT` (8787; 0 picks a free port).
 */
export class Settings extends Effect.Service<Settings>()("@skald/server/Settings", {
  effect: Effect.all({
    callTimeout: seconds("SKALD_MCP_CALL_TIMEOUT", 120),
    startTimeout: seconds("SKALD_MCP_START_TIMEOUT", 120),
    host: Config.nonEmptyString("SKALD_HOST").pipe(Config.withDefault("127.0.0.1")),
    port: Config.integer("SKALD_PORT").pipe(
      Config.validate({
        message: "SKALD_PORT must be a port number (0-65535)",
        validation: (n) => n >= 0 && n <= 65535
      }),
      Config.withDefault(8787)
    )
  }) satisfies Effect.Effect<Service, unknown>
}) {}
