/**
 * A registered server connected in this process, outside the host (`skald mcp tools|call`): the
 * rules that make it the same server the host runs, from any process. Only an enabled registered
 * server is connected; it gets the host's server environment (ServerEnvironment.ts); its log lines
 * go to its log file tagged with `origin` (e.g. `cli pid 4242`) and its events are stored, as
 * under the host; and whatever fails — the connection or what is done with it (a dying server's
 * stderr tail) — has that server's secrets redacted (Redactor.ts).
 *
 * @since 0.1.0
 */
import type { ServerName } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Connector from "./Connector.js"
import { EventRecorder } from "./EventRecorder.js"
import { ServerDisabled, UnknownServer } from "./HostError.js"
import { McpServerRepo } from "./McpServerRepo.js"
import { Paths } from "./Paths.js"
import * as Redactor from "./Redactor.js"
import type * as SecretStore from "./SecretStore.js"
import * as ServerEnvironment from "./ServerEnvironment.js"
import { ServerLogs } from "./ServerLogs.js"

/** How the connection is made. */
export interface Options {
  readonly startTimeout: Connector.Options["startTimeout"]
  readonly callTimeout: Connector.Options["callTimeout"]
  /** Tags this connection's log lines (`[<origin>] …`). */
  readonly origin: string
}

/**
 * Connects the named server, runs `use` with the connection, and closes it (the scope is the
 * call's own). Unknown and disabled servers are refused.
 */
export const use = <A, E, R>(
  name: ServerName.ServerName,
  options: Options,
  use: (connection: Connector.Connection) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const entry = yield* (yield* McpServerRepo).get(name)
    if (Option.isNone(entry)) return yield* new UnknownServer({ name })
    if (!entry.value.enabled) return yield* new ServerDisabled({ name })
    const connectOptions: Connector.Options = {
      startTimeout: options.startTimeout,
      callTimeout: options.callTimeout,
      environment: ServerEnvironment.make(yield* Paths)
    }
    const logs = yield* ServerLogs
    const recorder = yield* EventRecorder
    let redactor = Redactor.empty
    const sinks = (secrets: SecretStore.Resolved["secrets"]) => {
      redactor = Redactor.make(secrets)
      return { log: logs.sink(name, secrets, options.origin), events: recorder.sink }
    }
    return yield* Effect.flatMap(Connector.connect(entry.value, connectOptions, sinks), use).pipe(
      Effect.scoped,
      Effect.mapError((error) => Redactor.redactFields(redactor, error))
    )
  })
