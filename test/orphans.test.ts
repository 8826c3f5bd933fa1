/**
 * Shutdown over stdio: closing the scope runs close stdin → SIGTERM → SIGKILL on the server's
 * whole process group, so a server that ignores SIGTERM and stdin EOF goes, and so does the
 * grandchild it spawned (which ignores SIGTERM too). Then 200 connect/close cycles leave nothing
 * behind.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { fixture, fixturePath } from "./fixtures/fixtures.js"
import { connect, eventually, isAlive, makeLogCapture, processesMatching } from "./support.js"
import type { TransportTuning } from "./support.js"

const marker = `skald-orphan-marker-${process.pid}-${Date.now()}`
const stubborn = fixture("grandchild", undefined, [marker])
const fast: TransportTuning = { stdinGrace: "100 millis", termGrace: "100 millis" }

/** Connects to the stubborn fixture and asks it for its pids. */
const connectAndGetPids = (server: string, transport: TransportTuning) =>
  Effect.gen(function*() {
    const client = yield* connect(server, stubborn, { transport })
    const outcome = yield* client.callTool("pids")
    const pids = outcome.wire.structuredContent as { child: number; grandchild: number }
    assert.isNumber(pids.child)
    assert.isNumber(pids.grandchild)
    return pids
  })

describe("shutdown", () => {
  it.live("closing the scope kills a server that ignores SIGTERM and stdin EOF, and its grandchild", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      let seen: { child: number; grandchild: number } | undefined
      yield* Effect.scoped(
        Effect.gen(function*() {
          const pids = yield* connectAndGetPids("stubborn", fast)
          seen = pids
          assert.isTrue(isAlive(pids.child), "the server runs")
          assert.isTrue(isAlive(pids.grandchild), "the grandchild runs")
          assert.include(processesMatching([marker]).map((p) => p.pid), pids.grandchild)
        })
      ).pipe(logs.provide)
      const pids = seen!
      // The scope waited for the server's exit; the group's SIGKILL is on its way to the grandchild.
      assert.isFalse(isAlive(pids.child), "the server is gone")
      yield* eventually(() => !isAlive(pids.grandchild), `grandchild ${pids.grandchild} gone`)
      assert.deepStrictEqual(processesMatching([marker]), [])

      assert.include(logs.withTag("stderr"), `grandchild pid ${pids.grandchild}`)
      const lifecycle = logs.withTag("lifecycle")
      assert.includeMembers(lifecycle, [
        "did not exit 100ms after stdin closed; sending SIGTERM",
        "did not exit 100ms after SIGTERM; sending SIGKILL"
      ])
    }))

  // ENGINE BUG (StdioTransport log pump): fails today. The child's exit line is offered to the
  // log queue in the same turn that resumes the shutdown; the scope then interrupts the pump
  // fiber, which has already been handed the line by `Queue.take` but not emitted it, so the
  // line is lost (the final `Queue.takeAll` drain finds the queue empty).
  it.live("the exit line of a server killed at shutdown reaches the log sink", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* Effect.scoped(connectAndGetPids("stubborn-exit-line", fast)).pipe(logs.provide)
      assert.include(logs.withTag("lifecycle"), "killed by SIGKILL", logs.withTag("lifecycle").join("\n"))
    }))

  it.live("a server that exits on stdin EOF is not signalled", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* Effect.scoped(connect("polite", fixture("hostile", undefined, ["silent"]), { transport: fast })).pipe(
        logs.provide
      )
      const lifecycle = logs.withTag("lifecycle")
      assert.include(lifecycle, "exited with code 0")
      assert.isFalse(lifecycle.some((l) => l.includes("SIGTERM") || l.includes("SIGKILL")), lifecycle.join("\n"))
    }))

  it.live("200 connect/close cycles leave no process behind", () =>
    Effect.gen(function*() {
      const cycles = 200
      const tuning: TransportTuning = { stdinGrace: "50 millis", termGrace: "50 millis" }
      // A quiet sink: 200 cycles of lifecycle lines are noise.
      const logs = makeLogCapture()
      const all = yield* Effect.forEach(
        Array.from({ length: cycles }, (_, i) => i),
        (i) => Effect.scoped(connectAndGetPids(`cycle-${i}`, tuning)),
        { concurrency: 8 }
      ).pipe(logs.provide)
      assert.strictEqual(all.length, cycles)
      assert.strictEqual(new Set(all.map((p) => p.grandchild)).size, cycles)
      assert.strictEqual(
        logs.withTag("lifecycle").filter((l) => l.endsWith("after SIGTERM; sending SIGKILL")).length,
        cycles
      )

      const needles = [marker, fixturePath("grandchild")]
      yield* eventually(() => processesMatching(needles).length === 0, "every cycle's processes gone")
      assert.deepStrictEqual(processesMatching(needles), [])
      assert.deepStrictEqual(all.filter((p) => isAlive(p.child) || isAlive(p.grandchild)), [])
    }))
})
