import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { McpCallResult, McpError } from "@skald/domain"
import { JsonRpc, McpClient, McpLog, Protocol } from "@skald/mcp"
import { Transport } from "@skald/mcp/Transport"
import {
  Cause,
  Chunk,
  Context,
  Effect,
  Either,
  Exit,
  FastCheck as fc,
  Fiber,
  Layer,
  Option,
  Queue,
  Stream,
  TestClock
} from "effect"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { makeLogCapture } from "./utils/LogCapture.js"
import * as Memory from "./utils/MemoryTransport.js"

// --- helpers --------------------------------------------------------------------------------------

const echoTool = { name: "echo", description: "echoes its marker", inputSchema: { type: "object" } }

/** The peer answers every `tools/list` with the echo tool. */
const answerToolsList = (peer: Memory.MemoryTransport, m: JsonRpc.Request) =>
  peer.push(JsonRpc.success(m.id, { tools: [echoTool] }))

/** Reads the marker the test put in a request's params (`{marker}` or `{arguments: {marker}}`). */
const markerOf = (m: JsonRpc.Request): string => {
  const params = m.params as { marker?: string; arguments?: { marker?: string } } | undefined
  const marker = params?.marker ?? params?.arguments?.marker
  if (typeof marker !== "string") throw new Error(`no marker in ${JSON.stringify(m)}`)
  return marker
}

/**
 * Collects `n` requests the calls under test sent (answering any `tools/list` on the way), keyed
 * by marker. Dies on anything else: no other message may be sent while they are issued.
 */
const collectCalls = (peer: Memory.MemoryTransport, n: number) =>
  Effect.gen(function*() {
    const byMarker = new Map<string, JsonRpc.Request>()
    while (byMarker.size < n) {
      const m = yield* peer.next
      if (Memory.isRequest(m) && m.method === "tools/list") {
        yield* answerToolsList(peer, m)
      } else if (Memory.isRequest(m) && (m.method === "tools/call" || m.method === "test/echo")) {
        const marker = markerOf(m)
        assert.isFalse(byMarker.has(marker), `marker ${marker} sent twice`)
        byMarker.set(marker, m)
      } else {
        return yield* Effect.dieMessage(`unexpected message while calls were issued: ${JSON.stringify(m)}`)
      }
    }
    return byMarker
  })

/**
 * Subscribes to one of the client's notification streams and returns a queue of what it delivers
 * from now on. A handshake (`<prefix>/_sync` until one arrives, then `<prefix>/_synced`) makes sure
 * the subscription is live, so no later message can be missed.
 */
const subscribe = (
  stream: Stream.Stream<JsonRpc.Notification>,
  peer: Memory.MemoryTransport,
  prefix: "event" | "notifications"
) =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<JsonRpc.Notification>()
    yield* stream.pipe(Stream.runForEach((n) => Queue.offer(queue, n)), Effect.forkScoped)
    for (let i = 0; (yield* Queue.size(queue)) === 0; i++) {
      if (i > 10_000) return yield* Effect.dieMessage(`the ${prefix} stream never delivered`)
      yield* peer.push(JsonRpc.notification(`${prefix}/_sync`))
      yield* Effect.yieldNow()
    }
    yield* peer.push(JsonRpc.notification(`${prefix}/_synced`))
    while ((yield* Queue.take(queue)).method !== `${prefix}/_synced`) {
      // drop the handshake
    }
    return queue
  })

/** Takes from `queue` until `method` arrives; returns what came before it. */
const takeUntil = (queue: Queue.Queue<JsonRpc.Notification>, method: string) =>
  Effect.gen(function*() {
    const out: Array<JsonRpc.Notification> = []
    while (true) {
      const n = yield* Queue.take(queue)
      if (n.method === method) return out
      out.push(n)
    }
  })

/**
 * A barrier: the peer sends a `ping` and waits for its answer, which must be the next message
 * the client sends. The reader routes in order, so everything pushed before has been routed.
 */
const barrier = (peer: Memory.MemoryTransport, id: JsonRpc.RequestId = "barrier") =>
  Effect.gen(function*() {
    yield* peer.push(JsonRpc.request(id, "ping"))
    const answer = yield* peer.next
    deepStrictEqual(answer, JsonRpc.success(id, {}), "the next message after the barrier ping")
  })

/** Waits until a sleep ending at `at` (TestClock millis) is registered, so `TestClock.adjust` reaches it. */
const awaitSleep = (at: number) =>
  Effect.gen(function*() {
    for (let i = 0; !Chunk.some(yield* TestClock.sleeps(), (t) => t === at); i++) {
      if (i > 10_000) return yield* Effect.dieMessage(`no sleep until ${at} was registered`)
      yield* Effect.yieldNow()
    }
  })

const cancelledIn = (messages: ReadonlyArray<JsonRpc.Message>) =>
  messages.filter((m): m is JsonRpc.Notification => Memory.isNotification(m) && m.method === "notifications/cancelled")

const textResult = (text: string) => ({ content: [{ type: "text", text }] })

/** Asserts that `exit` failed with exactly `expected` (same class, same fields). */
const assertFailsWith = (exit: Exit.Exit<unknown, unknown>, expected: McpError.McpError, label = "") => {
  assert.isTrue(Exit.isFailure(exit), `${label} should fail with ${expected._tag}, got ${JSON.stringify(exit)}`)
  const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
  assert.instanceOf(error, expected.constructor as new(...args: Array<any>) => unknown, label)
  deepStrictEqual({ ...(error as object) }, { ...(expected as object) }, label)
}

// --- the routing property --------------------------------------------------------------------------

interface Call {
  readonly via: "request" | "callTool"
  readonly fails: boolean
  readonly code: number
  readonly salt: string
}

type Extra =
  | { readonly _tag: "log"; readonly level: unknown; readonly logger?: string; readonly data: unknown }
  | { readonly _tag: "progress"; readonly progress: number }
  | { readonly _tag: "event"; readonly name: string }
  | { readonly _tag: "ping"; readonly asString: boolean }
  | { readonly _tag: "unknown"; readonly method: string; readonly asString: boolean }

const call: fc.Arbitrary<Call> = fc.record({
  via: fc.constantFrom("request", "callTool"),
  fails: fc.boolean(),
  // Server-defined errors, except -32042 (URL elicitation required), which has its own typed error.
  code: fc.integer({ min: -32099, max: -32000 }).filter((code) => code !== McpClient.URL_ELICITATION_REQUIRED),
  salt: fc.string({ unit: "binary", maxLength: 6 })
})

const extra: fc.Arbitrary<Extra> = fc.oneof(
  fc.record({
    _tag: fc.constant("log" as const),
    level: fc.oneof(fc.constantFrom(...McpLog.levels), fc.constantFrom("trace", "INFO", 3, null)),
    logger: fc.string(),
    data: fc.oneof(
      fc.string(),
      fc.constantFrom("  padded  ", "", "line\nbreak"),
      fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown)
    )
  }, { requiredKeys: ["_tag", "level", "data"] }),
  fc.record({ _tag: fc.constant("progress" as const), progress: fc.nat() }),
  fc.record({ _tag: fc.constant("event" as const), name: fc.stringMatching(/^[a-z][a-z_/]{0,12}$/) }),
  fc.record({ _tag: fc.constant("ping" as const), asString: fc.boolean() }),
  fc.record({
    _tag: fc.constant("unknown" as const),
    method: fc.oneof(
      fc.constantFrom("sampling/createMessage", "roots/list", "tools/call", "elicitation/x", ""),
      fc.string()
    ).filter((m) => m !== "ping"),
    asString: fc.boolean()
  })
)

const scenario = fc.array(call, { minLength: 1, maxLength: 8 }).chain((calls) =>
  fc.record({
    calls: fc.constant(calls),
    /** The order the peer answers the calls in. */
    order: fc.shuffledSubarray(calls.map((_, i) => i), { minLength: calls.length, maxLength: calls.length }),
    /** Notifications and server requests, each placed before the answer at `at` (or after the last). */
    extras: fc.array(fc.record({ extra, at: fc.nat({ max: calls.length }) }), { maxLength: 12 }),
    idBase: fc.integer({ min: -1000, max: 1000 })
  })
)

describe("McpClient routing", () => {
  it.effect.prop(
    "answers in any order, interleaved with notifications and server requests, reach exactly their requests",
    { scenario },
    ({ scenario: { calls, extras, idBase, order } }) =>
      Effect.gen(function*() {
        const { lines, sink } = makeLogCapture()
        const expectedLogs: Array<McpLog.McpLogLine> = []
        const expectedEvents: Array<JsonRpc.Notification> = []
        const expectedProgress: Array<JsonRpc.Notification> = []
        const serverRequests = new Map<string, { readonly id: JsonRpc.RequestId; readonly ping: boolean }>()

        const peer = yield* Effect.gen(function*() {
          const { client, peer } = yield* Memory.connect()
          const events = yield* subscribe(client.events, peer, "event")
          const notifications = yield* subscribe(client.notifications, peer, "notifications")

          // N calls in flight at once.
          const fibers = yield* Effect.forEach(calls, (c, i) => {
            const marker = `${i}:${c.salt}`
            const run = c.via === "request"
              ? client.request("test/echo", { marker })
              : client.callTool("echo", { marker })
            return Effect.fork(Effect.either(run))
          })
          const requests = yield* collectCalls(peer, calls.length)

          // The script: answers in `order`, with the extras slotted in before answer `at`.
          const script: Array<JsonRpc.Message> = []
          let serverIds = 0
          for (let slot = 0; slot <= calls.length; slot++) {
            for (const { at, extra } of extras) {
              if (at !== slot) continue
              const k = serverIds
              switch (extra._tag) {
                case "log": {
                  const { _tag, ...params } = extra
                  script.push(JsonRpc.notification("notifications/message", params))
                  // The documented mapping: an unknown level logs at info; non-string data as JSON; `logger: ` prefix.
                  const text = typeof extra.data === "string" ? extra.data : JSON.stringify(extra.data)
                  expectedLogs.push({
                    server: "memory",
                    tag: McpLog.isLevel(extra.level) ? extra.level : "info",
                    text: extra.logger === undefined ? text : `${extra.logger}: ${text}`
                  })
                  break
                }
                case "progress": {
                  const n = JsonRpc.notification("notifications/progress", {
                    progressToken: "t",
                    progress: extra.progress
                  })
                  script.push(n)
                  expectedProgress.push(n)
                  break
                }
                case "event": {
                  const n = JsonRpc.notification(`event/${extra.name}`, { seq: script.length })
                  script.push(n)
                  expectedEvents.push(n)
                  break
                }
                case "ping":
                case "unknown": {
                  serverIds++
                  const id = extra.asString ? `srv-${k}` : idBase + k
                  serverRequests.set(JSON.stringify(id), { id, ping: extra._tag === "ping" })
                  script.push(JsonRpc.request(id, extra._tag === "ping" ? "ping" : extra.method, { k }))
                  break
                }
              }
            }
            const i = order[slot]
            if (i === undefined) continue
            const c = calls[i]!
            const marker = `${i}:${c.salt}`
            const request = requests.get(marker)!
            script.push(
              c.fails
                ? JsonRpc.failure(request.id, c.code, `no:${marker}`, { marker })
                : JsonRpc.success(request.id, c.via === "request" ? { echo: marker } : textResult(`echo:${marker}`))
            )
          }
          for (const m of script) yield* peer.push(m)
          yield* peer.push(JsonRpc.notification("event/_done"))
          yield* peer.push(JsonRpc.notification("notifications/_done"))

          // Every call got exactly its own answer.
          for (const [i, fiber] of fibers.entries()) {
            const c = calls[i]!
            const marker = `${i}:${c.salt}`
            const outcome = yield* Fiber.join(fiber)
            if (c.fails) {
              if (Either.isRight(outcome)) return assert.fail(`call ${i} should fail, got ${JSON.stringify(outcome)}`)
              assert.instanceOf(outcome.left, McpError.McpRequestError)
              const e = outcome.left as McpError.McpRequestError
              assert.strictEqual(e.method, c.via === "request" ? "test/echo" : "tools/call")
              assert.strictEqual(e.code, c.code)
              assert.strictEqual(e.reason, `no:${marker}`)
              deepStrictEqual(e.data, { marker })
            } else {
              if (Either.isLeft(outcome)) return assert.fail(`call ${i} should succeed, got ${outcome.left.message}`)
              if (c.via === "request") {
                deepStrictEqual(outcome.right, { echo: marker })
              } else {
                const value = outcome.right as McpClient.CallOutcome
                deepStrictEqual(value.result, McpCallResult.McpText.make({ text: `echo:${marker}`, isError: false }))
                deepStrictEqual(value.wire, textResult(`echo:${marker}`))
              }
            }
          }

          // Events and protocol notifications arrive in order; log lines went to the sink.
          deepStrictEqual(yield* takeUntil(events, "event/_done"), expectedEvents)
          deepStrictEqual(yield* takeUntil(notifications, "notifications/_done"), expectedProgress)
          deepStrictEqual(lines.filter((l) => l.tag !== "lifecycle"), expectedLogs)

          // Every server request is answered: ping with {}, anything else with -32601.
          const answers = new Map<string, JsonRpc.Success | JsonRpc.Failure>()
          while (answers.size < serverRequests.size) {
            const m = yield* peer.next
            if (!Memory.isResponse(m)) return yield* Effect.dieMessage(`unexpected message ${JSON.stringify(m)}`)
            const key = JSON.stringify(m.id)
            assert.isFalse(answers.has(key), `server request ${key} answered twice`)
            answers.set(key, m)
          }
          for (const [key, { id, ping }] of serverRequests) {
            const answer = answers.get(key)
            assert.isDefined(answer, `server request ${key} unanswered`)
            if (ping) {
              deepStrictEqual(answer, JsonRpc.success(id, {}))
            } else {
              assert.isTrue(answer !== undefined && "error" in answer, `server request ${key} must fail`)
              const failure = answer as JsonRpc.Failure
              assert.strictEqual(failure.id, id)
              assert.strictEqual(failure.error.code, JsonRpc.ErrorCode.MethodNotFound)
            }
          }
          yield* barrier(peer)
          return peer
        }).pipe(Effect.scoped, Effect.provideService(McpLog.McpLogSink, sink))

        // After the connection closed: nothing was cancelled, every server request answered once.
        const history = peer.history()
        deepStrictEqual(cancelledIn(history), [])
        const responses = history.filter(Memory.isResponse)
        assert.strictEqual(responses.length, serverRequests.size + 1 /* the barrier */)
      }),
    { fastCheck: { numRuns: 100 } }
  )

  // --- cancellation by interruption ------------------------------------------------------------------

  const interruptScenario = fc.array(fc.constantFrom("request" as const, "callTool" as const), {
    minLength: 1,
    maxLength: 8
  }).chain((vias) =>
    fc.record({
      vias: fc.constant(vias),
      stopped: fc.subarray(vias.map((_, i) => i), { minLength: 1 }),
      order: fc.shuffledSubarray(vias.map((_, i) => i), { minLength: vias.length, maxLength: vias.length }),
      lateFails: fc.boolean()
    })
  )

  it.effect.prop(
    "interrupting k in-flight tools/call requests sends exactly k notifications/cancelled; late answers are dropped with a warning",
    { s: interruptScenario },
    ({ s: { lateFails, order, stopped, vias } }) =>
      Effect.gen(function*() {
        const { lines, sink } = makeLogCapture()
        const stoppedIds: Array<JsonRpc.RequestId> = []
        const peer = yield* Effect.gen(function*() {
          const { client, peer } = yield* Memory.connect()
          const fibers = yield* Effect.forEach(vias, (via, i) =>
            Effect.fork(
              via === "request"
                ? client.request("tools/call", { name: "echo", arguments: { marker: `m${i}` } })
                : Effect.map(client.callTool("echo", { marker: `m${i}` }), (o) => o.wire)
            ))
          const requests = yield* collectCalls(peer, vias.length)
          const idOf = (i: number) => requests.get(`m${i}`)!.id

          for (const i of stopped) {
            stoppedIds.push(idOf(i))
            yield* Fiber.interrupt(fibers[i]!)
          }
          // Exactly one cancellation per interrupted request, with the stop reason and its id.
          const cancellations: Array<JsonRpc.Message> = []
          for (let j = 0; j < stopped.length; j++) cancellations.push(yield* peer.next)
          deepStrictEqual(
            cancellations,
            stoppedIds.map((id) =>
              JsonRpc.notification("notifications/cancelled", { requestId: id, reason: McpClient.STOP_REASON })
            )
          )

          // The peer answers everything, the stopped ones too (they crossed the cancellation).
          for (const i of order) {
            const id = idOf(i)
            yield* peer.push(
              stopped.includes(i) && lateFails
                ? JsonRpc.failure(id, -32800, "request cancelled")
                : JsonRpc.success(id, textResult(`echo:m${i}`))
            )
          }
          for (const [i, fiber] of fibers.entries()) {
            const exit = yield* Fiber.await(fiber)
            if (stopped.includes(i)) {
              assert.isTrue(Exit.isInterrupted(exit), `call ${i} was interrupted`)
            } else {
              deepStrictEqual(exit, Exit.succeed(textResult(`echo:m${i}`)))
            }
          }
          yield* barrier(peer)
          return peer
        }).pipe(Effect.scoped, Effect.provideService(McpLog.McpLogSink, sink))

        const warnings = lines.filter((l) => l.tag === "warning").map((l) => l.text)
        const late = order.filter((i) => stopped.includes(i)).map((i) => stoppedIds[stopped.indexOf(i)])
        deepStrictEqual(
          warnings,
          late.map((id) => `dropped a response to unknown request id ${JSON.stringify(id)}`)
        )
        assert.strictEqual(cancelledIn(peer.history()).length, stopped.length)
      }),
    { fastCheck: { numRuns: 100 } }
  )

  // A fiber's wait is built once and reused for each of its requests (internal/requests.ts,
  // `Waiter`): whatever it waited for before, an interruption abandons the request it waits for
  // now, and a request it makes afterwards (uninterruptibly, while unwinding) is its own again.
  const via = fc.constantFrom("request" as const, "callTool" as const)
  it.effect.prop(
    "one fiber's requests in turn: an interruption cancels the one it waits for, not an earlier one; later ones are answered",
    { before: fc.array(via, { maxLength: 4 }), stopped: via, after: fc.array(via, { maxLength: 3 }) },
    ({ after, before, stopped }) =>
      Effect.gen(function*() {
        const { sink } = makeLogCapture()
        yield* Effect.gen(function*() {
          const { client, peer } = yield* Memory.connect()
          const call = (v: "request" | "callTool", marker: string) =>
            v === "request"
              ? client.request("tools/call", { name: "echo", arguments: { marker } })
              : Effect.map(client.callTool("echo", { marker }), (o) => o.wire)
          const answered: Array<unknown> = []
          const fiber = yield* Effect.fork(Effect.uninterruptibleMask((restore) =>
            Effect.gen(function*() {
              for (const [i, v] of before.entries()) answered.push(yield* restore(call(v, `b${i}`)))
              answered.push(yield* Effect.exit(restore(call(stopped, "x"))))
              for (const [i, v] of after.entries()) answered.push(yield* call(v, `a${i}`))
            })
          ))
          /** The next request (a `tools/list` on the way is answered). */
          const nextRequest: Effect.Effect<JsonRpc.Request> = Effect.gen(function*() {
            while (true) {
              const m = yield* peer.next
              if (!Memory.isRequest(m)) return yield* Effect.dieMessage(`expected a request, got ${JSON.stringify(m)}`)
              if (m.method !== "tools/list") return m
              yield* answerToolsList(peer, m)
            }
          })
          const answerNext = (marker: string) =>
            Effect.gen(function*() {
              const m = yield* nextRequest
              assert.strictEqual(markerOf(m), marker)
              yield* peer.push(JsonRpc.success(m.id, textResult(`echo:${marker}`)))
            })
          for (let i = 0; i < before.length; i++) yield* answerNext(`b${i}`)
          const x = yield* nextRequest
          assert.strictEqual(markerOf(x), "x")
          yield* Fiber.interruptFork(fiber)
          deepStrictEqual(
            yield* peer.next,
            JsonRpc.notification("notifications/cancelled", { requestId: x.id, reason: McpClient.STOP_REASON })
          )
          for (let i = 0; i < after.length; i++) yield* answerNext(`a${i}`)
          assert.isTrue(Exit.isInterrupted(yield* Fiber.await(fiber)))
          deepStrictEqual(answered.length, before.length + 1 + after.length)
          before.forEach((_, i) => deepStrictEqual(answered[i], textResult(`echo:b${i}`)))
          const stoppedExit = answered[before.length] as Exit.Exit<unknown, unknown>
          assert.isTrue(Exit.isInterrupted(stoppedExit), "the stopped call ends interrupted")
          after.forEach((_, i) => deepStrictEqual(answered[before.length + 1 + i], textResult(`echo:a${i}`)))
          yield* barrier(peer)
          assert.strictEqual(cancelledIn(peer.history()).length, 1)
        }).pipe(Effect.scoped, Effect.provideService(McpLog.McpLogSink, sink))
      }),
    { fastCheck: { numRuns: 50 } }
  )

  it.effect("a fiber that called through connections does not keep them once they closed", () =>
    Effect.gen(function*() {
      // The engine observes each fiber that waits (to abandon a request its interruption left);
      // a long-lived fiber calling through many connections must not keep the closed ones alive.
      v8.setFlagsFromString("--expose-gc")
      const gc = vm.runInNewContext("gc") as () => void
      const { sink } = makeLogCapture()
      // The first connection is a warm-up: under the test runner something built once keeps it
      // (a plain node process frees it too). The eight after it must be collected.
      let freed = 0
      const registry = new FinalizationRegistry((i: number) => {
        if (i > 0) freed++
      })
      for (let i = 0; i < 9; i++) {
        yield* Effect.gen(function*() {
          // Connected in this fiber (not `Memory.connect`, whose join of the connecting fiber
          // leaves that fiber's context, transport and all, in this fiber's refs).
          const peer = yield* Memory.make()
          yield* Effect.forkScoped(Memory.answerInitialize(peer))
          const client = yield* McpClient.make().pipe(Effect.provideService(Transport, peer.transport))
          registry.register(peer.transport, i)
          yield* Effect.forkScoped(Effect.gen(function*() {
            const calls = yield* collectCalls(peer, 1)
            yield* peer.push(JsonRpc.success(calls.get("m")!.id, textResult("echo:m")))
          }))
          // This fiber — the test's own, which outlives every connection — makes the call.
          deepStrictEqual((yield* client.callTool("echo", { marker: "m" })).wire, textResult("echo:m"))
        }).pipe(Effect.scoped, Effect.provideService(McpLog.McpLogSink, sink))
      }
      const macrotask = Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      for (let i = 0; i < 20 && freed < 8; i++) {
        gc()
        yield* macrotask
      }
      deepStrictEqual(freed, 8)
    }))

  it.effect("a second answer to the same request is dropped with a warning", () =>
    Effect.gen(function*() {
      const { lines, sink } = makeLogCapture()
      let id: JsonRpc.RequestId | undefined
      yield* Effect.gen(function*() {
        const { client, peer } = yield* Memory.connect()
        const fiber = yield* Effect.fork(client.request("test/echo", { marker: "once" }))
        const [call] = (yield* collectCalls(peer, 1)).values()
        id = call!.id
        yield* peer.push(JsonRpc.success(id, { n: 1 }))
        yield* peer.push(JsonRpc.success(id, { n: 2 }))
        yield* peer.push(JsonRpc.failure(id, -32000, "late"))
        yield* barrier(peer)
        deepStrictEqual(yield* Fiber.join(fiber), { n: 1 })
        yield* peer.push(JsonRpc.success(12345, {}))
        yield* peer.push(JsonRpc.failure(null, JsonRpc.ErrorCode.ParseError, "parse error"))
        yield* barrier(peer)
        deepStrictEqual(cancelledIn(peer.history()), [])
      }).pipe(Effect.scoped, Effect.provideService(McpLog.McpLogSink, sink))
      deepStrictEqual(
        lines.filter((l) => l.tag === "warning").map((l) => l.text),
        [id, id, 12345, null].map((i) => `dropped a response to unknown request id ${JSON.stringify(i)}`)
      )
    }))

  // --- timeouts -------------------------------------------------------------------------------------

  it.effect("a call timeout fails with McpTimeout and sends one notifications/cancelled with reason timeout", () =>
    Effect.gen(function*() {
      const { lines, sink } = makeLogCapture()
      let callId: JsonRpc.RequestId | undefined
      const peer = yield* Effect.gen(function*() {
        const { client, peer } = yield* Memory.connect()
        const fiber = yield* Effect.fork(client.callTool("echo", { marker: "slow" }, { timeout: "1 second" }))
        const [call] = (yield* collectCalls(peer, 1)).values()
        callId = call!.id
        yield* awaitSleep((yield* TestClock.currentTimeMillis) + 1000)
        yield* TestClock.adjust("1 second")
        const exit = yield* Fiber.await(fiber)
        assertFailsWith(exit, new McpError.McpTimeout({ server: "memory", method: "tools/call", timeoutMillis: 1000 }))
        deepStrictEqual(
          yield* peer.next,
          JsonRpc.notification("notifications/cancelled", { requestId: call!.id, reason: McpClient.TIMEOUT_REASON })
        )
        // The answer that crosses the cancellation is dropped with a warning.
        yield* peer.push(JsonRpc.success(call!.id, textResult("late")))
        yield* barrier(peer)
        return peer
      }).pipe(Effect.scoped, Effect.provideService(McpLog.McpLogSink, sink))
      assert.strictEqual(cancelledIn(peer.history()).length, 1)
      deepStrictEqual(lines.filter((l) => l.tag === "warning").map((l) => l.text), [
        `dropped a response to unknown request id ${JSON.stringify(callId)}`
      ])
    }))

  it.effect("a request's timeout counts from when it was sent; an answer in time wins", () =>
    Effect.scoped(Effect.gen(function*() {
      const { client, peer } = yield* Memory.connect({ client: { callTimeout: "10 seconds" } })
      const fiber = yield* Effect.fork(client.request("test/echo", { marker: "a" }))
      const [call] = (yield* collectCalls(peer, 1)).values()
      yield* awaitSleep((yield* TestClock.currentTimeMillis) + 10_000)
      yield* TestClock.adjust("9999 millis")
      yield* peer.push(JsonRpc.success(call!.id, { ok: true }))
      deepStrictEqual(yield* Fiber.join(fiber), { ok: true })
      yield* TestClock.adjust("1 hour")
      yield* barrier(peer)
      deepStrictEqual(cancelledIn(peer.history()), [])
    })))

  // --- initialize --------------------------------------------------------------------------------------

  it.effect("initialize is never cancelled: not when interrupted", () =>
    Effect.gen(function*() {
      const peer = yield* Memory.make()
      yield* Effect.scoped(Effect.gen(function*() {
        const starting = yield* McpClient.make().pipe(Effect.provideService(Transport, peer.transport), Effect.fork)
        yield* Memory.expectRequest(peer, "initialize")
        yield* Fiber.interrupt(starting)
      }))
      const history = peer.history()
      assert.strictEqual(history.length, 1)
      deepStrictEqual(cancelledIn(history), [])
    }))

  it.effect("initialize is never cancelled: not when the start timeout fires", () =>
    Effect.gen(function*() {
      const peer = yield* Memory.make()
      yield* Effect.scoped(Effect.gen(function*() {
        const starting = yield* McpClient.make({ startTimeout: "1 second" }).pipe(
          Effect.provideService(Transport, peer.transport),
          Effect.fork
        )
        yield* Memory.expectRequest(peer, "initialize")
        yield* awaitSleep((yield* TestClock.currentTimeMillis) + 1000)
        yield* TestClock.adjust("1 second")
        assertFailsWith(
          yield* Fiber.await(starting),
          new McpError.McpTimeout({ server: "memory", method: "initialize", timeoutMillis: 1000 })
        )
      }))
      deepStrictEqual(cancelledIn(peer.history()), [])
      assert.strictEqual(peer.history().length, 1)
    }))

  it.effect("initialize sends our protocol version and the tasks marker, then notifications/initialized", () =>
    Effect.scoped(Effect.gen(function*() {
      const { client, initialize } = yield* Memory.connect({
        peer: { protocolVersion: "2025-06-18", capabilities: { tools: { listChanged: true } } }
      })
      const params = initialize.params as Record<string, unknown>
      assert.strictEqual(params.protocolVersion, Protocol.PROTOCOL_VERSION)
      deepStrictEqual(params.capabilities, { experimental: { tasks: {} } })
      assert.strictEqual(client.identity.protocolVersion, "2025-06-18")
      deepStrictEqual(client.identity.capabilities, { tools: { listChanged: true } })
    })))

  it.effect("McpClient.layer runs over the memory transport layer", () =>
    Effect.scoped(Effect.gen(function*() {
      const peer = yield* Memory.make()
      const building = yield* Effect.fork(Layer.build(McpClient.layer().pipe(Layer.provide(Memory.layer(peer)))))
      yield* Memory.answerInitialize(peer, { serverInfo: { name: "layered", version: "1" } })
      const client = Context.get(yield* Fiber.join(building), McpClient.McpClient)
      deepStrictEqual(client.identity.serverInfo, { name: "layered", version: "1" })
    })))

  // --- the connection goes away -----------------------------------------------------------------------

  const connectionError: fc.Arbitrary<McpError.McpConnectionError | "end"> = fc.oneof(
    fc.constant("end" as const),
    fc.constant(Memory.serverExited()),
    fc.integer({ min: 1, max: 1 << 30 }).map((limitBytes) =>
      new McpError.McpMessageTooLarge({ server: "memory", limitBytes })
    ),
    fc.string().map((detail) => new McpError.McpProtocolError({ server: "memory", detail }))
  )

  it.effect.prop(
    "when the connection fails every pending request fails with its error, and later requests fail at once",
    {
      vias: fc.array(fc.constantFrom("request" as const, "callTool" as const), { minLength: 1, maxLength: 6 }),
      answered: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
      error: connectionError
    },
    ({ answered, error, vias }) =>
      Effect.scoped(Effect.gen(function*() {
        const { client, peer } = yield* Memory.connect()
        const fibers = yield* Effect.forEach(vias, (via, i) =>
          Effect.fork(
            via === "request"
              ? client.request("test/echo", { marker: `m${i}` })
              : Effect.map(client.callTool("echo", { marker: `m${i}` }), (o) => o.wire)
          ))
        const requests = yield* collectCalls(peer, vias.length)
        // Answers already delivered when the connection fails are still routed.
        for (const [i, yes] of answered.slice(0, vias.length).entries()) {
          if (yes) yield* peer.push(JsonRpc.success(requests.get(`m${i}`)!.id, textResult(`m${i}`)))
        }
        yield* error === "end" ? peer.end : peer.fail(error)
        const expected = error === "end" ? new McpError.McpConnectionClosed({ server: "memory" }) : error
        for (const [i, fiber] of fibers.entries()) {
          const exit = yield* Fiber.await(fiber)
          if (answered[i] === true) deepStrictEqual(exit, Exit.succeed(textResult(`m${i}`)), `call ${i}`)
          else assertFailsWith(exit, expected, `call ${i}`)
        }
        const sent = peer.history().length
        assertFailsWith(yield* Effect.exit(client.request("test/echo", { marker: "after" })), expected, "request")
        assertFailsWith(yield* Effect.exit(client.callTool("echo", { marker: "after" })), expected, "callTool")
        assertFailsWith(yield* Effect.exit(client.refreshTools), expected, "refreshTools")
        yield* client.notify("notifications/roots/list_changed")
        assert.strictEqual(peer.history().length, sent, "nothing is sent after the connection failed")
        deepStrictEqual(cancelledIn(peer.history()), [])
      })),
    { fastCheck: { numRuns: 50 } }
  )
})
