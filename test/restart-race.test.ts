/**
 * A server restarted while it is still starting: the restart interrupts the runner right after the
 * process was spawned, so the transport's release runs before the rest of its setup did. The first
 * process must be reaped all the same (it once outlived its scope: the release threw on a `flush`
 * declared further down, found by the manager's model-based test).
 */
import { assert, describe, it } from "@effect/vitest"
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import { StatusRepo } from "@skald/server"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as Crypto from "node:crypto"
import { fixture } from "./fixtures/fixtures.js"
import { servicesLayer, startManager, tempHome } from "./host-support.js"
import { processesMatching } from "./support.js"

describe("a restart of a starting server", () => {
  it.scopedLive(
    "leaves exactly the new process running (another process's restart request, then a register)",
    () =>
      Effect.gen(function*() {
        for (let round = 0; round < 3; round++) {
          const home = yield* tempHome
          const marker = `restart-race-${Crypto.randomUUID()}`
          const good = fixture("hostile", undefined, ["silent", marker])
          const entry = McpServerEntry.McpServerEntry.make({
            name: ServerName.make("beta"),
            config: ServerConfig.StdioServerConfig.make({ command: good.command, args: good.args, env: {} }),
            enabled: true
          })
          const other = Context.get(yield* Layer.build(servicesLayer(home)), StatusRepo.StatusRepo)
          const hostScope = yield* Scope.make()
          const { manager } = yield* Scope.extend(startManager(home), hostScope)
          // What `skald mcp restart beta` writes from another process, picked up by the host's watcher
          // just after the register below has started beta.
          yield* Effect.orDie(other.request("restart", "beta", new Date().toISOString()))
          yield* Effect.orDie(manager.register(entry))
          const settled = Effect.gen(function*() {
            const live = processesMatching([marker]).map((p) => p.pid).sort()
            const pids = [...(yield* manager.pids).values()].sort()
            if (pids.length !== 1 || JSON.stringify(live) !== JSON.stringify(pids)) {
              return yield* Effect.fail(`live ${live}, connections ${pids}`)
            }
          })
          // Long enough for the first process's whole shutdown sequence (its graces are short here).
          yield* Effect.sleep("3 seconds")
          yield* Effect.orDie(settled.pipe(Effect.mapError((e) => new Error(`round ${round}: ${e}`))))
          yield* Scope.close(hostScope, Exit.void)
          assert.deepStrictEqual(processesMatching([marker]), [], "nothing outlives the host")
        }
      }),
    { timeout: 120_000 }
  )
})
