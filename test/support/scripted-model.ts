/**
 * A scripted `@effect/ai` `LanguageModel` for the agent's tests: each `streamText` request plays
 * the next round of the script (a list of encoded stream parts, or a function of the request that
 * gives one, or a `Stream` — e.g. one that never ends) and records the request (its prompt and
 * tool names). `generateText` plays the same round and collects it. A request past the script's
 * end fails the test (dies) rather than inventing an answer.
 *
 * Like the providers, it hands its parts over raw too (`StreamParts.withStreamParts`): the turn loop
 * reads them so, as it reads a provider's; embedders' `streamText` goes through `@effect/ai`'s decode.
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as StreamParts from "@skald/server/agent/llm/StreamParts"
import { Chunk, Effect, Layer, Ref, Schema, Stream } from "effect"

/** One round: parts, a function of the request giving them, or a stream of them. */
export type Round =
  | ReadonlyArray<Response.StreamPartEncoded>
  | ((request: Recorded) => ReadonlyArray<Response.StreamPartEncoded>)
  | Stream.Stream<Response.StreamPartEncoded, AiError.AiError>

/** What the model was asked: the prompt (encoded, so it compares with deepStrictEqual) and the tools. */
export interface Recorded {
  readonly prompt: Prompt.Prompt
  readonly messages: ReadonlyArray<Prompt.MessageEncoded>
  readonly tools: ReadonlyArray<string>
}

let nextText = 0

/** A text block streamed as the given deltas. */
export const text = (...deltas: ReadonlyArray<string>): Array<Response.StreamPartEncoded> => {
  const id = `text-${nextText++}`
  return [
    { type: "text-start", id },
    ...deltas.map((delta): Response.StreamPartEncoded => ({ type: "text-delta", id, delta })),
    { type: "text-end", id }
  ]
}

/** A complete tool call. */
export const toolCall = (id: string, name: string, params: unknown = {}): Response.StreamPartEncoded => ({
  type: "tool-call",
  id,
  name,
  params
})

/** The round's end with its usage. */
export const finish = (
  inputTokens = 10,
  outputTokens = 5,
  reason: "stop" | "tool-calls" = "stop"
): Response.StreamPartEncoded => ({
  type: "finish",
  reason,
  usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens }
})

/** A round answering `answer` (one delta) with no tool call. */
export const answer = (answerText: string, inputTokens = 10, outputTokens = 5): Array<Response.StreamPartEncoded> => [
  ...text(answerText),
  finish(inputTokens, outputTokens)
]

/** A round making these tool calls (and optionally saying something first). */
export const calls = (
  list: ReadonlyArray<{ readonly id: string; readonly name: string; readonly params?: unknown }>,
  say?: string
): Array<Response.StreamPartEncoded> => [
  ...(say === undefined ? [] : text(say)),
  ...list.map((c) => toolCall(c.id, c.name, c.params ?? {})),
  finish(10, 5, "tool-calls")
]

/** A round whose stream sends `before` and then never ends (until interrupted). */
export const hang = (before: ReadonlyArray<Response.StreamPartEncoded> = []): Round =>
  Stream.concat(Stream.fromIterable(before), Stream.never)

/** A round that fails as a provider would. */
export const fail = (description = "the model server answered 503"): Round =>
  Stream.fail(new AiError.UnknownError({ module: "Scripted", method: "streamText", description }))

const encodeMessages = Schema.encodeSync(Schema.Array(Prompt.Message))

/** The model over `script`, with what it was asked. */
export const make = (script: ReadonlyArray<Round>) =>
  Effect.gen(function*() {
    const recorded = yield* Ref.make<ReadonlyArray<Recorded>>([])
    const cursor = yield* Ref.make(0)
    const next = (options: LanguageModel.ProviderOptions) =>
      Effect.gen(function*() {
        const request: Recorded = {
          prompt: options.prompt,
          messages: encodeMessages(options.prompt.content),
          tools: options.tools.map((t) => t.name)
        }
        yield* Ref.update(recorded, (all) => [...all, request])
        const index = yield* Ref.getAndUpdate(cursor, (n) => n + 1)
        const round = script[index]
        if (round === undefined) return yield* Effect.dieMessage(`the script has no round ${index + 1}`)
        if (Stream.StreamTypeId in round) return round as Stream.Stream<Response.StreamPartEncoded, AiError.AiError>
        const parts = typeof round === "function" ? round(request) : round
        return Stream.fromIterable(parts)
      })
    const service = yield* LanguageModel.make({
      streamText: (options) => Stream.unwrap(next(options)),
      generateText: (options) =>
        Stream.unwrap(next(options)).pipe(
          Stream.runCollect,
          Effect.map((chunk) => Chunk.toArray(chunk) as Array<Response.PartEncoded>)
        )
    })
    return {
      service: StreamParts.withStreamParts(service, (options) => Stream.unwrap(next(options))),
      recorded: Ref.get(recorded),
      rounds: Ref.get(cursor)
    }
  })

/** The model as a layer, and what it was asked (read it inside the test). */
export const layer = (script: ReadonlyArray<Round>) =>
  Effect.map(make(script), (model) => ({
    ...model,
    layer: Layer.succeed(LanguageModel.LanguageModel, model.service)
  }))
