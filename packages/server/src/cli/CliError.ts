/**
 * How the `skald` command ends: the exit status contract of DESIGN §5.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"

/** Exit statuses. */
export const ExitStatus = {
  Ok: 0,
  /** The tool answered `isError`. */
  ToolError: 1,
  /** Usage, protocol, transport, timeout, unknown tool, … */
  Failure: 2,
  /** Interrupted by Ctrl-C (SIGINT). */
  Interrupted: 130
} as const

/** A usage error: what was wrong with the command line and how to fix it. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/** Ends the command with this status (after its output was printed). */
export class ExitWith extends Data.TaggedError("ExitWith")<{ readonly status: number }> {}
