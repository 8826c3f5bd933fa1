/**
 * The tool cache: every page of `tools/list` merged, kept fresh by `notifications/tools/list_changed`
 * (a burst coalesced into one listing, and only once the client has listed), one listing at a time.
 */
import * as McpError from "@skald/domain/McpError"
import * as McpTool from "@skald/domain/McpTool"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type * as Scope from "effect/Scope"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as Tracer from "effect/Tracer"
import type { ToolList } from "../McpClient.js"
import type { Connection, JsonObject } from "./connection.js"
import * as Span from "./span.js"

/** One connection's tool cache. */
export interface ToolCache {
  /** Each new list (none until the first). */
  readonly toolList: SubscriptionRef.SubscriptionRef<Option.Option<ToolList>>
  /** Lists every tool now and updates the cache. */
  readonly refreshTools: Effect.Effect<ToolList, McpError.McpError>
  /** The cached list; lists on first use and waits for a refresh under way. */
  readonly currentTools: Effect.Effect<ToolList, McpError.McpError>
  /** The list changed on the server: refresh it in the background (under `Scope`). */
  readonly onToolsChanged: Effect.Effect<void, never, Scope.Scope>
  /** Whether the cached list is as new as the last change the server announced. */
  readonly isFresh: () => boolean
  /** The tool `name` of the latest list (fresh or not). */
  readonly byName: (name: string) => McpTool.McpTool | undefined
  /** The latest list, if any was read. */
  readonly latest: () => ToolList | undefined
}

export const make = (
  conn: Connection,
  request: (method: string, params?: unknown, options?: Span.Traced) => Effect.Effect<unknown, McpError.McpError>
): Effect.Effect<ToolCache> =>
  Effect.gen(function*() {
    const { log } = conn
    const maxToolPages = conn.settings.maxToolPages
    const toolList = yield* SubscriptionRef.make<Option.Option<ToolList>>(Option.none())
    const refreshLock = yield* Effect.makeSemaphore(1)
    let wantedGeneration = 0
    let listedGeneration = -1
    let everListed = false
    let latest: ToolList | undefined
    let byName = new Map<string, McpTool.McpTool>()

    const listAllPages = (span: Tracer.Span | undefined) =>
      Effect.gen(function*() {
        const wire: Array<JsonObject> = []
        let cursor: string | undefined
        for (let page = 1; page <= maxToolPages; page++) {
          const result = yield* request("tools/list", cursor === undefined ? {} : { cursor }, { traceSpan: span })
          if (!Predicate.isRecord(result) || !Array.isArray(result.tools)) {
            return yield* new McpError.McpProtocolError({
              server: conn.server,
              detail: "tools/list answered without a tools array"
            })
          }
          for (const tool of result.tools) if (Predicate.isRecord(tool)) wire.push(tool)
          cursor = typeof result.nextCursor === "string" ? result.nextCursor : undefined
          if (cursor === undefined) break
          if (page === maxToolPages) {
            yield* log(
              "warning",
              `tools/list still had a nextCursor after ${maxToolPages} pages; kept the ${wire.length} tools read so far`
            )
          }
        }
        const tools: Array<McpTool.McpTool> = []
        for (const entry of wire) {
          const tool = McpTool.fromWire(entry)
          if (Option.isSome(tool)) tools.push(tool.value)
          else yield* log("warning", "tools/list returned a tool without a name; it was ignored")
        }
        return { tools, wire } satisfies ToolList
      })

    const listNow = Span.hot("tools/list", () =>
      Span.requestAttributes(conn.server, "tools/list"), (span) =>
      Effect.gen(function*() {
        everListed = true
        const generation = wantedGeneration
        const list = yield* listAllPages(span)
        listedGeneration = generation
        latest = list
        byName = new Map(list.tools.map((tool) => [tool.name, tool]))
        yield* SubscriptionRef.set(toolList, Option.some(list))
        return list
      }))

    const refreshTools = refreshLock.withPermits(1)(listNow)

    const isFresh = () =>
      latest !== undefined && listedGeneration >= wantedGeneration
    const currentTools: Effect.Effect<ToolList, McpError.McpError> = Effect.suspend(() =>
      isFresh()
        ? Effect.succeed(latest!)
        : refreshLock.withPermits(1)(Effect.suspend(() => (isFresh() ? Effect.succeed(latest!) : listNow)))
    )

    const onToolsChanged = Effect.suspend(() => {
      wantedGeneration++
      // Only a client that has listed keeps its list fresh; coalesces a burst into one listing.
      if (!everListed) {
        return Effect.void
      }
      return currentTools.pipe(
        Effect.catchAll((error) =>
          log("warning", `could not refresh the tool list: ${error.message}`)
        ),
        Effect.forkScoped,
        Effect.asVoid
      )
    })

    return {
      toolList,
      refreshTools,
      currentTools,
      onToolsChanged,
      isFresh,
      byName: (name) => byName.get(name),
      latest: () => latest
    } satisfies ToolCache
  })
