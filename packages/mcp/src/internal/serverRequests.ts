/**
 * Requests the server sends the client (`ping`, `elicitation/create`, `roots/list`,
 * `sampling/createMessage`): each runs in its own fiber, keyed by id so `notifications/cancelled`
 * can stop it, and gets exactly one answer — unless the server cancelled it. An elicitation or a
 * sampling request pauses every request's timeout while a person answers (or a model writes).
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as FiberMap from "effect/FiberMap"
import * as Predicate from "effect/Predicate"
import type * as Scope from "effect/Scope"
import * as Elicitation from "../Elicitation.js"
import * as JsonRpc from "../JsonRpc.js"
import type * as Roots from "../Roots.js"
import * as Sampling from "../Sampling.js"
import type { Connection } from "./connection.js"

/** One connection's handling of server requests. */
export interface ServerRequests {
  /** Starts answering a server request (ignored when one with its id is still being answered). */
  readonly start: (message: JsonRpc.Request) => Effect.Effect<void>
  /** `notifications/cancelled`: stops the handler of that request, unanswered. */
  readonly cancel: (id: JsonRpc.RequestId) => Effect.Effect<void>
  /** `notifications/elicitation/complete`: the URL elicitation `elicitationId` is done. */
  readonly completeUrl: (elicitationId: string) => void
  /** Done once the server's first `roots/list` has been answered (the answer handed to the transport). */
  readonly rootsListed: Deferred.Deferred<void>
}

export const make = (
  conn: Connection,
  elicitationHandler: Elicitation.Handler | undefined,
  timeouts: { readonly pause: () => void; readonly resume: () => void },
  roots: Roots.Service | undefined,
  samplingHandler: Sampling.Handler | undefined = undefined
): Effect.Effect<ServerRequests, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { log, transport } = conn
    const handlers = yield* FiberMap.make<JsonRpc.RequestId>()

    // A handler that dies is answered -32603 and logged without the defect's text (it may hold input).
    const answer = (id: JsonRpc.RequestId, method: string, handle: Effect.Effect<unknown, JsonRpc.ErrorObject>) =>
      handle.pipe(
        Effect.matchCauseEffect({
          onSuccess: (result) => Effect.sync(() => transport.send(JsonRpc.success(id, result))),
          onFailure: (cause) => {
            const failure = Cause.failureOption(cause)
            if (failure._tag === "Some") {
              const error = failure.value
              return Effect.sync(() => transport.send(JsonRpc.failure(id, error.code, error.message, error.data)))
            }
            if (Cause.isInterruptedOnly(cause)) return Effect.void
            return Effect.zipRight(
              Effect.sync(() =>
                transport.send(
                  JsonRpc.failure(id, JsonRpc.ErrorCode.InternalError, `the client failed to handle ${method}`)
                )
              ),
              log("warning", `the handler of the server's ${method} request failed; answered -32603`)
            )
          }
        })
      )

    const urlCompletions = new Map<string, Deferred.Deferred<void>>()
    const rootsListed = yield* Deferred.make<void>()

    const invalidParams = (why: string): JsonRpc.ErrorObject => ({
      code: JsonRpc.ErrorCode.InvalidParams,
      message: why
    })

    /** Answers `elicitation/create`: the handler asks a person, bounded by the user deadline. */
    const elicit = (params: unknown): Effect.Effect<Elicitation.Response, JsonRpc.ErrorObject> => {
      if (elicitationHandler === undefined) return Effect.succeed({ action: "decline" })
      const handler = elicitationHandler
      const server = conn.server
      const p = Predicate.isRecord(params) ? params : {}
      const message = typeof p.message === "string" ? p.message : ""
      const mode = p.mode === undefined ? "form" : p.mode
      let request: Elicitation.Request
      let fields: ReadonlyArray<Elicitation.Field> = []
      if (mode === "form") {
        const parsed = Elicitation.parseForm(p.requestedSchema)
        if (Either.isLeft(parsed)) return Effect.fail(invalidParams(`unsupported requestedSchema: ${parsed.left}`))
        fields = parsed.right
        request = { _tag: "Form", server, message, fields, confirmation: fields.length === 0 }
      } else if (mode === "url") {
        if (!handler.url) return Effect.fail(invalidParams("this client did not declare URL-mode elicitation"))
        if (typeof p.url !== "string" || typeof p.elicitationId !== "string") {
          return Effect.fail(invalidParams("a URL elicitation needs url and elicitationId"))
        }
        const elicitationId = p.elicitationId
        const done = urlCompletions.get(elicitationId) ?? Deferred.unsafeMake<void>(FiberId.none)
        urlCompletions.set(elicitationId, done)
        request = { _tag: "Url", server, message, url: p.url, elicitationId, completed: Deferred.await(done) }
      } else {
        return Effect.fail(invalidParams(`unknown elicitation mode ${JSON.stringify(mode)}`))
      }
      return Effect.acquireUseRelease(
        Effect.sync(timeouts.pause),
        () =>
          handler.elicit(request).pipe(
            Effect.timeoutTo({
              duration: conn.settings.userDeadline,
              onSuccess: (response): Elicitation.Response => response,
              onTimeout: (): Elicitation.Response => ({ action: "cancel" })
            })
          ),
        () => Effect.sync(timeouts.resume)
      ).pipe(
        Effect.flatMap((response): Effect.Effect<Elicitation.Response> => {
          if (response.action !== "accept") return Effect.succeed({ action: response.action })
          if (request._tag === "Url") return Effect.succeed({ action: "accept" })
          const checked = Elicitation.validate(fields, response.content)
          if (Either.isRight(checked)) return Effect.succeed({ action: "accept", content: checked.right })
          return Effect.as(
            log("warning", `an answer to an elicitation did not match its form (${checked.left}); declined instead`),
            { action: "decline" }
          )
        })
      )
    }

    /** Answers `sampling/createMessage`: checked here, answered by the handler (timeouts paused meanwhile). */
    const sample = (handler: Sampling.Handler, params: unknown): Effect.Effect<unknown, JsonRpc.ErrorObject> => {
      const parsed = Sampling.parseRequest(conn.server, params, handler.tools)
      if (Either.isLeft(parsed)) return Effect.fail(parsed.left)
      return Effect.acquireUseRelease(
        Effect.sync(timeouts.pause),
        () => handler.createMessage(parsed.right),
        () => Effect.sync(timeouts.resume)
      ).pipe(
        Effect.map(Sampling.encodeResult),
        Effect.mapError((refused): JsonRpc.ErrorObject => ({ code: refused.code, message: refused.message }))
      )
    }

    const serverRequest = (message: JsonRpc.Request): Effect.Effect<unknown, JsonRpc.ErrorObject> => {
      switch (message.method) {
        case "ping":
          return Effect.succeed({})
        case "elicitation/create":
          return elicit(message.params)
        case "sampling/createMessage":
          if (samplingHandler === undefined) break
          return sample(samplingHandler, message.params)
        case "roots/list":
          if (roots === undefined) break
          return Effect.map(roots.list, (list) => ({
            roots: list.map((
              root
            ) => (root.name === undefined ? { uri: root.uri } : { uri: root.uri, name: root.name }))
          }))
      }
      return Effect.fail({ code: JsonRpc.ErrorCode.MethodNotFound, message: `method not found: ${message.method}` })
    }

    return {
      start: (message) => {
        const answering = answer(message.id, message.method, serverRequest(message))
        return FiberMap.run(
          handlers,
          message.id,
          message.method === "roots/list"
            ? Effect.ensuring(answering, Deferred.done(rootsListed, Exit.void))
            : answering,
          { onlyIfMissing: true }
        ).pipe(Effect.asVoid)
      },
      cancel: (id) => FiberMap.remove(handlers, id),
      completeUrl: (elicitationId) => {
        // Only elicitations this connection was asked for; an unknown id is ignored (no growth).
        const done = urlCompletions.get(elicitationId)
        if (done !== undefined) {
          urlCompletions.delete(elicitationId)
          Deferred.unsafeDone(done, Exit.void)
        }
      },
      rootsListed
    } satisfies ServerRequests
  })
