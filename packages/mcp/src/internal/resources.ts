/**
 * Resources: `resources/list` and `resources/templates/list` (all pages), `resources/read` (text,
 * and blobs decoded to bytes), `resources/subscribe`/`unsubscribe`, and the streams of
 * `notifications/resources/updated` and `notifications/resources/list_changed`. Every request
 * is sent only when the server declared `resources` (a subscription: `resources.subscribe`).
 */
import * as McpResource from "@skald/domain/McpResource"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import type * as JsonRpc from "../JsonRpc.js"
import type { ReadOutcome, ResourceList, ResourceTemplateList, Service } from "../McpClient.js"
import type { Connection, JsonObject } from "./connection.js"
import * as Listing from "./listing.js"

/** One connection's resources. */
export type Resources = Pick<
  Service,
  | "listResources"
  | "listResourceTemplates"
  | "readResource"
  | "subscribeResource"
  | "unsubscribeResource"
  | "watchResource"
  | "resourceUpdates"
  | "resourceListChanges"
>

/** The `params.uri` of a `notifications/resources/updated`. */
const updatedUri = (message: JsonRpc.Notification): Option.Option<string> =>
  message.method === "notifications/resources/updated" && Predicate.isRecord(message.params) &&
    typeof message.params.uri === "string"
    ? Option.some(message.params.uri)
    : Option.none()

export const make = (
  conn: Connection,
  capabilities: JsonObject,
  request: Listing.Request,
  notifications: PubSub.PubSub<JsonRpc.Notification>
): Resources => {
  const needs = (capability: string, method: string) =>
    Listing.requireCapability(conn, capabilities, capability, method)

  const listResources = Effect.zipRight(
    needs("resources", "resources/list"),
    Listing.listAll(conn, request, "resources/list", "resources", McpResource.resourceFromWire)
  ).pipe(Effect.map(({ items, wire }): ResourceList => ({ resources: items, wire })))

  const listResourceTemplates = Effect.zipRight(
    needs("resources", "resources/templates/list"),
    Listing.listAll(conn, request, "resources/templates/list", "resourceTemplates", McpResource.templateFromWire)
  ).pipe(Effect.map(({ items, wire }): ResourceTemplateList => ({ templates: items, wire })))

  const readResource = (uri: string) =>
    Effect.gen(function*() {
      yield* needs("resources", "resources/read")
      const result = yield* request("resources/read", { uri })
      if (!Predicate.isRecord(result) || !Array.isArray(result.contents)) {
        return yield* conn.protocolError("resources/read answered without a contents array")
      }
      const contents: Array<McpResource.McpResourceContents> = []
      for (const item of result.contents) {
        const decoded = McpResource.contentsFromWire(item)
        if (Option.isSome(decoded)) contents.push(decoded.value)
        else yield* conn.log("warning", `resources/read of ${uri} returned contents with neither text nor valid blob`)
      }
      return { contents, wire: result } satisfies ReadOutcome
    })

  const subscribeResource = (uri: string) =>
    Effect.zipRight(needs("resources.subscribe", "resources/subscribe"), request("resources/subscribe", { uri }))
      .pipe(Effect.asVoid)
  const unsubscribeResource = (uri: string) =>
    Effect.zipRight(needs("resources.subscribe", "resources/unsubscribe"), request("resources/unsubscribe", { uri }))
      .pipe(Effect.asVoid)

  const resourceUpdates = Stream.filterMap(Stream.fromPubSub(notifications), updatedUri)

  // Listening starts before the subscription is sent, so no update after its answer is missed.
  const watchResource = (uri: string) =>
    Stream.unwrapScoped(Effect.gen(function*() {
      const queue = yield* PubSub.subscribe(notifications)
      yield* Effect.acquireRelease(subscribeResource(uri), () => Effect.ignore(unsubscribeResource(uri)))
      return Stream.fromQueue(queue).pipe(
        Stream.filterMap(updatedUri),
        Stream.filter((updated) => updated === uri)
      )
    }))

  const resourceListChanges = Stream.fromPubSub(notifications).pipe(
    Stream.filter((m) => m.method === "notifications/resources/list_changed"),
    Stream.as(undefined)
  )

  return {
    listResources,
    listResourceTemplates,
    readResource,
    subscribeResource,
    unsubscribeResource,
    watchResource,
    resourceUpdates,
    resourceListChanges
  }
}
