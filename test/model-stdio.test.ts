/**
 * The cancellation part of the engine's model (packages/mcp/test/Model.test.ts), live, over the
 * real stdio transport: short random sequences of calls (`wait`, which runs until cancelled, with
 * or without a short timeout; `quick`, which the server answers at once), stops and pauses,
 * against the cancel fixture, which records every `notifications/cancelled` it receives. One
 * fixture process serves every sequence; each sequence reads only the records it caused.
 *
 * Invariants: every stopped `wait` got exactly one `notifications/cancelled` with its requestId and
 * the stop reason, every timed-out one exactly one with the timeout reason (whichever happened
 * first when the two race, as the call's outcome says), and the SDK aborted its handler with that
 * reason; answered calls got none; nothing names an unknown request.
 */
import { assert, layer } from "@effect/vitest"
import { McpClient } from "@skald/mcp"
import { Effect, Exit, FastCheck as fc, Fiber } from "effect"
import * as fs from "node:fs"
import { fixture } from "./fixtures/fixtures.js"
import { clientLayer, readRecords, tempFile } from "./support.js"

type Command =
  | { readonly _tag: "wait"; readonly timeout: number | undefined }
  | { readonly _tag: "quick"; readonly timeout: number | undefined }
  | { readonly _tag: "stop"; readonly pick: number }
  | { readonly _tag: "pause"; readonly millis: number }

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ _tag: fc.constant("wait" as const), timeout: fc.constantFrom(undefined, 50, 150) })
  },
  {
    weight: 2,
    arbitrary: fc.record({ _tag: fc.constant("quick" as const), timeout: fc.constantFrom(undefined, 30_000) })
  },
  { weight: 4, arbitrary: fc.record({ _tag: fc.constant("stop" as const), pick: fc.nat({ max: 7 }) }) },
  { weight: 3, arbitrary: fc.record({ _tag: fc.constant("pause" as const), millis: fc.constantFrom(0, 50, 150, 300) }) }
)

const file = tempFile("model-stdio")
type Record = { readonly [key: string]: unknown }
/** The records appended since `from` (a line count). */
const recordsFrom = (from: number): ReadonlyArray<Record> => readRecords(file).slice(from)

/** Polls `check` every 5 ms, at most `within` ms (a bound against a hang, not an assertion about time). */
const until = (check: () => boolean, what: string, within = 10_000) =>
  Effect.gen(function*() {
    for (const start = Date.now(); !check();) {
      if (Date.now() - start > within) return yield* Effect.dieMessage(`gave up waiting: ${what}`)
      yield* Effect.sleep("5 millis")
    }
  })

layer(clientLayer("model-stdio", fixture("cancel", { FIXTURE_RECORD: file })), { excludeTestServices: true })(
  "model over stdio",
  (it) => {
    it.effect.prop(
      "random call / stop / timeout sequences over stdio: one notifications/cancelled per abandoned call, with its reason",
      { commands: fc.array(command, { minLength: 3, maxLength: 10 }) },
      ({ commands }) =>
        Effect.gen(function*() {
          const client = yield* McpClient.McpClient
          const from = fs.existsSync(file) ? readRecords(file).length : 0
          const started = (tool?: string) =>
            recordsFrom(from).filter((r) => r.event === "started" && (tool === undefined || r.tool === tool))

          interface Call {
            readonly tool: "wait" | "quick"
            readonly timeout: number | undefined
            readonly fiber: Fiber.RuntimeFiber<McpClient.CallOutcome, unknown>
            readonly requestId: unknown
            stopped: boolean
          }
          const calls: Array<Call> = []
          for (const cmd of commands) {
            switch (cmd._tag) {
              case "wait":
              case "quick": {
                const before = started().length
                const fiber = yield* Effect.fork(
                  client.callTool(cmd._tag, {}, cmd.timeout === undefined ? {} : { timeout: cmd.timeout })
                )
                if (cmd._tag === "quick") yield* Fiber.await(fiber)
                // The server saw it: the records are in call order, so the new one is this call's.
                yield* until(() => started().length > before, `${cmd._tag} started`)
                const record = started()[before]!
                assert.strictEqual(record.tool, cmd._tag)
                calls.push({ tool: cmd._tag, timeout: cmd.timeout, fiber, requestId: record.requestId, stopped: false })
                break
              }
              case "stop": {
                const running = calls.filter((c) => c.fiber.unsafePoll() === null)
                const call = running[cmd.pick % Math.max(1, running.length)]
                if (call !== undefined) {
                  call.stopped = true
                  yield* Fiber.interrupt(call.fiber)
                }
                break
              }
              case "pause": {
                yield* Effect.sleep(cmd.millis)
                break
              }
            }
          }
          // Every timed `wait` times out by itself; then stop whatever still runs, and sync: once
          // `mark` answered, every earlier message was recorded.
          yield* until(
            () => calls.every((c) => c.tool !== "wait" || c.timeout === undefined || c.fiber.unsafePoll() !== null),
            "the timed calls time out"
          )
          for (const call of calls) yield* Fiber.interrupt(call.fiber)
          yield* client.callTool("mark")

          const records = recordsFrom(from)
          const cancelled = records.filter((r) => r.event === "cancelled")
          const aborted = records.filter((r) => r.event === "aborted")
          const known = new Set(calls.map((c) => c.requestId))
          for (const r of cancelled) {
            assert.isTrue(known.has(r.requestId), `cancelled an unknown request ${JSON.stringify(r)}`)
          }
          for (const [i, call] of calls.entries()) {
            const exit = call.fiber.unsafePoll()
            assert.isNotNull(exit, `call ${i} settled`)
            const mine = cancelled.filter((r) => r.requestId === call.requestId).map((r) => r.reason)
            if (call.tool === "quick") {
              assert.isTrue(exit !== null && Exit.isSuccess(exit), `quick call ${i} answered`)
              assert.deepStrictEqual(mine, [], `quick call ${i}: no cancellation`)
              continue
            }
            // A `wait` never answers: it was either stopped or timed out, and says which.
            const reason = exit !== null && Exit.isInterrupted(exit)
              ? McpClient.STOP_REASON
              : exit !== null && Exit.isFailure(exit) && exit.cause._tag === "Fail" &&
                  (exit.cause.error as { _tag?: unknown })._tag === "McpTimeout"
              ? McpClient.TIMEOUT_REASON
              : assert.fail(`wait call ${i} ended ${JSON.stringify(exit)}`)
            // Not stopped by a command: a timed one timed out, an untimed one was stopped at the end.
            if (!call.stopped) {
              assert.strictEqual(reason, call.timeout === undefined ? McpClient.STOP_REASON : McpClient.TIMEOUT_REASON)
            }
            assert.deepStrictEqual(mine, [reason], `wait call ${i} (request ${JSON.stringify(call.requestId)})`)
            assert.deepStrictEqual(
              aborted.filter((r) => r.requestId === call.requestId).map((r) => r.reason),
              [reason],
              `the server aborted wait call ${i} with its reason`
            )
          }
        }),
      { fastCheck: { numRuns: 20 } }
    )
  }
)
