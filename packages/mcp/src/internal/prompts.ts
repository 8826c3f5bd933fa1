/**
 * Prompts and completions: `prompts/list` (all pages), `prompts/get` with its arguments, the
 * stream of `notifications/prompts/list_changed`, and `completion/complete` for a prompt's or a
 * resource template's argument. Each request is sent only when the server declared `prompts`
 * (`completions` for completion).
 */
import * as McpPrompt from "@skald/domain/McpPrompt"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import type * as JsonRpc from "../JsonRpc.js"
import type { CompletionRef, PromptList, PromptOutcome, Service } from "../McpClient.js"
import type { Connection, JsonObject } from "./connection.js"
import * as Listing from "./listing.js"

/** One connection's prompts and completions. */
export type Prompts = Pick<
  Service,
  | "listPrompts"
  | "getPrompt"
  | "promptListChanges"
  | "complete"
>

export const make = (
  conn: Connection,
  capabilities: JsonObject,
  request: Listing.Request,
  notifications: PubSub.PubSub<JsonRpc.Notification>
): Prompts => {
  const needs = (capability: string, method: string) =>
    Listing.requireCapability(conn, capabilities, capability, method)

  const listPrompts = Effect.zipRight(
    needs("prompts", "prompts/list"),
    Listing.listAll(conn, request, "prompts/list", "prompts", McpPrompt.promptFromWire)
  ).pipe(Effect.map(({ items, wire }): PromptList => ({ prompts: items, wire })))

  const getPrompt = (name: string, args?: Readonly<Record<string, string>>) =>
    Effect.gen(function*() {
      yield* needs("prompts", "prompts/get")
      const wire = yield* request("prompts/get", args === undefined ? { name } : { name, arguments: args })
      const result = McpPrompt.promptResultFromWire(wire)
      if (Option.isNone(result)) return yield* conn.protocolError("prompts/get answered without a messages array")
      return { result: result.value, wire: wire as JsonObject } satisfies PromptOutcome
    })

  const complete = (
    ref: CompletionRef,
    argument: { readonly name: string; readonly value: string },
    context?: Readonly<Record<string, string>>
  ) =>
    Effect.gen(function*() {
      yield* needs("completions", "completion/complete")
      const wire = yield* request("completion/complete", {
        ref: ref.type === "ref/prompt" ? { type: ref.type, name: ref.name } : { type: ref.type, uri: ref.uri },
        argument: { name: argument.name, value: argument.value },
        ...(context === undefined ? {} : { context: { arguments: context } })
      })
      const completion = McpPrompt.completionFromWire(wire)
      if (Option.isNone(completion)) {
        return yield* conn.protocolError("completion/complete answered without completion.values")
      }
      return completion.value
    })

  const promptListChanges = Stream.fromPubSub(notifications).pipe(
    Stream.filter((m) => m.method === "notifications/prompts/list_changed"),
    Stream.as(undefined)
  )

  return { listPrompts, getPrompt, promptListChanges, complete }
}
