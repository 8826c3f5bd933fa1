/**
 * The `--home` option of the host commands. The layers it leads to (`HostServices`: the home's
 * database and repositories, secret store, logs, events and registration) are in HostRuntime.ts,
 * which only the handlers load.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"

/** `--home DIR`: the folder holding data/, logs/ and secrets/ (default SKALD_HOME, else `.`). */
export const home = Options.text("home").pipe(
  Options.withDescription("The Skald home: data/, logs/ and secrets/ live here (default $SKALD_HOME, else .)."),
  Options.optional
)

/** `--verbose`: says on stderr which path a command with two paths took (HostPath.ts). */
export const verbose = Options.boolean("verbose").pipe(
  Options.withAlias("v"),
  Options.withDescription(
    "Say on stderr which path this takes: via the running host (`skald serve` of the home) or in this process."
  )
)
