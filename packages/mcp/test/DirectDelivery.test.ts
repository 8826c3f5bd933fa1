/**
 * The side door between a transport and the engine (internal/directDelivery.ts), used as the
 * stdio and HTTP transports use it: a response offered while a message the transport queued
 * before it is still unprocessed is declined, and reaches its caller through `incoming`, after
 * that message; with nothing queued, the engine takes it at once.
 */
import { assert, describe, it } from "@effect/vitest"
import { JsonRpc, McpClient, McpLog } from "@skald/mcp"
import * as DirectDelivery from "@skald/mcp/internal/directDelivery"
import { Transport } from "@skald/mcp/Transport"
import { Effect, Exit, FastCheck as fc, Fiber } from "effect"
import { makeLogCapture } from "./utils/LogCapture.js"
import * as Memory from "./utils/MemoryTransport.js"

/** A memory transport with the door, connected; `receiver` is the engine's side of it. */
const connectWithDoor = Effect.gen(function*() {
  const peer = yield* Memory.make()
  let receiver: DirectDelivery.Receiver | undefined
  DirectDelivery.offer(peer.transport, (r) => {
    receiver = r
  })
  const starting = yield* McpClient.make().pipe(Effect.provideService(Transport, peer.transport), Effect.fork)
  yield* Memory.answerInitialize(peer)
  const client = yield* Fiber.join(starting)
  if (receiver === undefined) return yield* Effect.dieMessage("the engine did not connect the door")
  return { client, peer, receiver }
})

/**
 * What a transport does with a message it does not hand over directly: tell the engine first, then
 * offer it to `incoming`. Synchronous, as in a transport's read callback.
 */
const queueNow = (peer: Memory.MemoryTransport, receiver: DirectDelivery.Receiver, message: JsonRpc.Message) => {
  const classified = JsonRpc.classify(message)
  if (classified === undefined) throw new Error(`not a message: ${JSON.stringify(message)}`)
  receiver.queued()
  peer.offerNow(classified)
}

const log = (text: string) => JsonRpc.notification("notifications/message", { level: "info", data: text })

describe("the side door", () => {
  it.effect.prop(
    "a response never overtakes what was queued before it, and is taken at once when nothing is",
    // For each call: how many messages the transport queues just before its answer arrives.
    [fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 10 })],
    ([before]) => {
      const capture = makeLogCapture()
      const lines = () => capture.withTag("info").length
      return Effect.gen(function*() {
        const { client, peer, receiver } = yield* connectWithDoor
        let queued = 0
        for (const [i, n] of before.entries()) {
          const marker = `call ${i}`
          const call = yield* Effect.fork(client.request("test/echo", { marker }))
          const sent = yield* Memory.expectRequest(peer, "test/echo")
          const answer = JsonRpc.success(sent.id, { marker })
          // The transport's read callback: n messages, then the answer, with nothing in between.
          const taken = yield* Effect.sync(() => {
            for (let k = 0; k < n; k++) queueNow(peer, receiver, log(`call ${i}, line ${k}`))
            queued += n
            const taken = receiver.response(answer)
            if (!taken) queueNow(peer, receiver, answer)
            return taken
          })
          assert.strictEqual(taken, n === 0, `call ${i} after ${n} queued: taken directly`)
          assert.deepStrictEqual(yield* Effect.exit(Fiber.join(call)), Exit.succeed({ marker }))
          // Everything queued before the answer was handled before its caller went on.
          assert.strictEqual(lines(), queued, `call ${i}: lines handled when it returned`)
        }
      }).pipe(Effect.scoped, Effect.provideService(McpLog.McpLogSink, capture.sink))
    }
  )
})
