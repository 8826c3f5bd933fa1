/**
 * What the resource and prompt parts share: the capability check made before a request is sent,
 * and the paginated listing (`nextCursor` followed for at most `maxListPages` pages, as tools are).
 */
import * as McpError from "@skald/domain/McpError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type { Connection, JsonObject } from "./connection.js"

/** Sends a request (the client's own `request`, spans included). */
export type Request = (method: string, params?: unknown) => Effect.Effect<unknown, McpError.McpError>

/** Whether `capabilities` has the object at `path` (e.g. `["resources", "subscribe"]` is `true` or an object). */
export const declared = (capabilities: JsonObject, path: ReadonlyArray<string>): boolean => {
  let node: unknown = capabilities
  for (const key of path) node = Predicate.isRecord(node) ? node[key] : undefined
  return Predicate.isRecord(node) || node === true
}

/** Fails `McpCapabilityUnsupported` (nothing sent) unless the server declared `capability` (dotted). */
export const requireCapability = (
  conn: Connection,
  capabilities: JsonObject,
  capability: string,
  method: string
): Effect.Effect<void, McpError.McpCapabilityUnsupported> =>
  declared(capabilities, capability.split("."))
    ? Effect.void
    : Effect.fail(new McpError.McpCapabilityUnsupported({ server: conn.server, capability, method }))

/** Every page of a paginated list, its entries as sent and decoded (undecodable ones dropped with a warning). */
export const listAll = <A>(
  conn: Connection,
  request: Request,
  method: string,
  key: string,
  decode: (wire: unknown) => Option.Option<A>
): Effect.Effect<{ readonly items: ReadonlyArray<A>; readonly wire: ReadonlyArray<JsonObject> }, McpError.McpError> =>
  Effect.gen(function*() {
    const maxPages = conn.settings.maxListPages
    const wire: Array<JsonObject> = []
    let cursor: string | undefined
    for (let page = 1; page <= maxPages; page++) {
      const result = yield* request(method, cursor === undefined ? {} : { cursor })
      const entries = Predicate.isRecord(result) ? result[key] : undefined
      if (!Array.isArray(entries)) {
        return yield* new McpError.McpProtocolError({
          server: conn.server,
          detail: `${method} answered without ${key}`
        })
      }
      for (const entry of entries) if (Predicate.isRecord(entry)) wire.push(entry)
      cursor = Predicate.isRecord(result) && typeof result.nextCursor === "string" ? result.nextCursor : undefined
      if (cursor === undefined) break
      if (page === maxPages) {
        yield* conn.log(
          "warning",
          `${method} still had a nextCursor after ${maxPages} pages; kept the ${wire.length} entries read so far`
        )
      }
    }
    const items: Array<A> = []
    const kept: Array<JsonObject> = []
    for (const entry of wire) {
      const item = decode(entry)
      if (Option.isSome(item)) {
        items.push(item.value)
        kept.push(entry)
      } else yield* conn.log("warning", `${method} returned an entry without its identifier; it was ignored`)
    }
    return { items, wire: kept }
  })
