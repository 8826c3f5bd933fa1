/**
 * The `skald` process: splits argv at the first `--`, runs the command, and maps the outcome to
 * the exit status contract (0 ok, 1 tool error, 2 failure, 130 Ctrl-C).
 *
 * @since 0.1.0
 */
import { ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Telemetry from "../Telemetry.js"
import * as Cli from "./Cli.js"
import { ExitStatus, ExitWith } from "./CliError.js"
import * as Io from "./Io.js"
import * as Settings from "./Settings.js"
import * as Target from "./Target.js"

const { own, server } = Target.splitArgv(process.argv.slice(2))

// Diagnostics go to stderr (Io.stderrLogger): warnings and worse unless --log-level says otherwise.
// OpenTelemetry only when an OTEL_* variable asks for it (Telemetry.ts): every command runs under
// it, and its finalizer flushes the exporters before the process ends, whatever the exit status.

const program = Cli.run(own).pipe(
  Effect.provideService(Target.ServerCommandLine, server),
  Effect.provide(Telemetry.layer),
  Effect.provide(
    Layer.mergeAll(Settings.Settings.Default, NodeContext.layer, Logger.replace(Logger.defaultLogger, Io.stderrLogger))
  ),
  Logger.withMinimumLogLevel(LogLevel.Warning)
)

const statusOf = (exit: Exit.Exit<void, unknown>, signal: NodeJS.Signals | undefined): number => {
  if (Exit.isSuccess(exit)) return ExitStatus.Ok
  if (Cause.isInterruptedOnly(exit.cause)) return signal === "SIGTERM" ? 143 : ExitStatus.Interrupted
  const failure = Cause.failureOption(exit.cause)
  if (failure._tag === "Some") {
    const error = failure.value
    if (error instanceof ExitWith) return error.status
    if (ValidationError.isValidationError(error)) {
      return ValidationError.isHelpRequested(error) ? ExitStatus.Ok : ExitStatus.Failure
    }
  }
  process.stderr.write(`skald: unexpected failure, please report it:\n${Cause.pretty(exit.cause)}\n`)
  return ExitStatus.Failure
}

const fiber = Effect.runFork(program)
let signal: NodeJS.Signals | undefined
const onSignal = (received: NodeJS.Signals) => {
  if (signal !== undefined) return
  signal = received
  fiber.unsafeInterruptAsFork(fiber.id())
}
process.on("SIGINT", onSignal)
process.on("SIGTERM", onSignal)
fiber.addObserver((exit) => {
  const status = statusOf(exit, signal)
  process.exitCode = status
  process.removeListener("SIGINT", onSignal)
  process.removeListener("SIGTERM", onSignal)
  // Let stdout drain and the event loop end by itself; never linger on a stray handle.
  setTimeout(() => process.exit(status), 2000).unref()
})
