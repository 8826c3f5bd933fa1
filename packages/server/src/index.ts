/**
 * @skald/server — the Skald host and the `skald` command line.
 *
 * @since 0.1.0
 */

/** The `skald` command line. */
export * as Cli from "./cli/Cli.js"
