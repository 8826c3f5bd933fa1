/**
 * Settings read from the environment (DESIGN §5), with their defaults.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Timeouts of MCP connections. */
export interface Service {
  readonly callTimeout: Duration.Duration
  readonly startTimeout: Duration.Duration
}

const seconds = (name: string, fallback: number) =>
  Config.number(name).pipe(
    Config.validate({ message: `${name} must be a positive number of seconds`, validation: (n) => n > 0 }),
    Config.withDefault(fallback),
    Config.map((s) => Duration.millis(Math.round(s * 1000)))
  )

/** The settings. */
export class Settings extends Context.Tag("@skald/server/Settings")<Settings, Service>() {
  /** From `SKALD_MCP_CALL_TIMEOUT` and `SKALD_MCP_START_TIMEOUT` (seconds, default 120 each). */
  static readonly layer = Layer.effect(
    Settings,
    Effect.all({
      callTimeout: seconds("SKALD_MCP_CALL_TIMEOUT", 120),
      startTimeout: seconds("SKALD_MCP_START_TIMEOUT", 120)
    })
  )
}
