/**
 * The `--home` option of the host commands. The layer it leads to (the home's database,
 * registry, status table and secret store) is in HostRuntime.ts, which only the handlers load.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"

/** `--home DIR`: the folder holding data/, logs/ and secrets/ (default SKALD_HOME, else `.`). */
export const home = Options.text("home").pipe(
  Options.withDescription("The Skald home: data/, logs/ and secrets/ live here (default $SKALD_HOME, else .)."),
  Options.optional
)
