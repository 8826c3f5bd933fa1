/**
 * Everything the host's parts stand on, from one home: the database with its repositories, the
 * secret store, the per-server logs and the event recorder.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Database from "./Database.js"
import { EventRecorder } from "./EventRecorder.js"
import * as EventRepo from "./EventRepo.js"
import * as McpServerRepo from "./McpServerRepo.js"
import type { Paths } from "./Paths.js"
import { Registration } from "./Registration.js"
import { SecretStore } from "./SecretStore.js"
import { ServerLogs } from "./ServerLogs.js"
import * as ServerSecrets from "./ServerSecrets.js"
import * as StatusRepo from "./StatusRepo.js"

/**
 * The host's services over the given paths (which it also provides): the database and its
 * repositories, the secret store, the per-server log writer, the event recorder, registration.
 * Opening it moves secrets named by the older rule to their new names (`ServerSecrets.migrate`).
 */
export const layer = <E, R>(paths: Layer.Layer<Paths, E, R>) => {
  const database = Database.layer.pipe(Layer.provide(paths))
  const repos = Layer.mergeAll(McpServerRepo.layer, StatusRepo.layer, EventRepo.layer).pipe(
    Layer.provideMerge(database)
  )
  const runtime = Layer.mergeAll(ServerLogs.Default, EventRecorder.Default).pipe(Layer.provideMerge(repos))
  const stores = Layer.mergeAll(runtime, SecretStore.Default)
  const services = Registration.Default.pipe(Layer.provideMerge(stores), Layer.provideMerge(paths))
  // Secrets an older rule named are moved to their new names when a home is opened (ServerSecrets.ts).
  const migrated = Layer.effectDiscard(ServerSecrets.migrate.pipe(
    Effect.catchAll((error) => Effect.logWarning(`could not move stored secrets to their new names: ${error.message}`))
  ))
  return migrated.pipe(Layer.provideMerge(services))
}
