/**
 * Roots: the folders an embedding app lets a server work in (`roots/list`). When a `Roots`
 * service is in context at connect time, the client declares `roots` (with `listChanged`) on
 * every transport, answers `roots/list` with the current list, and sends
 * `notifications/roots/list_changed` each time the list changes; without one nothing is declared
 * and `roots/list` is answered "method not found".
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Path from "node:path"
import * as Url from "node:url"

/** One root: a `file://` URI and an optional display name. */
export interface Root {
  readonly uri: string
  readonly name?: string | undefined
}

/** What the embedding app provides. */
export interface Service {
  /** The roots now (asked on every `roots/list`). */
  readonly list: Effect.Effect<ReadonlyArray<Root>>
  /** Emits once per change of the list after connect; each becomes one `notifications/roots/list_changed`. */
  readonly changes: Stream.Stream<unknown>
}

/** The roots the app offers the server. */
export class Roots extends Context.Tag("@skald/mcp/Roots")<Roots, Service>() {}

/** A folder as a root: its absolute `file://` URI, named by its basename unless `name` is given. */
export const fromPath = (path: string, name?: string): Root => {
  const absolute = Path.resolve(path)
  return { uri: Url.pathToFileURL(absolute).href, name: name ?? (Path.basename(absolute) || absolute) }
}

/** A list that never changes. */
export const fixed = (roots: ReadonlyArray<Root>): Service => ({ list: Effect.succeed(roots), changes: Stream.empty })

/** A fixed list as a layer. */
export const layer = (roots: ReadonlyArray<Root>): Layer.Layer<Roots> => Layer.succeed(Roots, fixed(roots))

/** A list the app changes with `set`: every client connected with `service` is told of each change. */
export const make = (
  initial: ReadonlyArray<Root>
): Effect.Effect<{ readonly service: Service; readonly set: (roots: ReadonlyArray<Root>) => Effect.Effect<void> }> =>
  Effect.map(SubscriptionRef.make(initial), (ref) => ({
    service: { list: SubscriptionRef.get(ref), changes: Stream.drop(ref.changes, 1) },
    set: (roots) => SubscriptionRef.set(ref, roots)
  }))
