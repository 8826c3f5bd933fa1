/**
 * Model-based property test of the MCP manager: random sequences of register / enable / disable /
 * unregister / restart / crash / host restart / writes from a second database connection (what
 * another process's `skald mcp …` does, a restart as a `host_requests` row), run against real server processes on a real SQLite file. After
 * every step the registry rows, the manager's running connections, the status table and the
 * live processes must agree with a plain model — and no process may outlive its server.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import { McpServerRepo, StatusRepo } from "@skald/server"
import { Context, Effect, Exit, FastCheck as fc, Layer, Schedule, Scope } from "effect"
import * as Crypto from "node:crypto"
import { fixture } from "./fixtures/fixtures.js"
import { servicesLayer, startManager, tempHome } from "./host-support.js"
import { isAlive, processesMatching } from "./support.js"

const names = ["alpha", "beta", "gamma"] as const
type Name = (typeof names)[number]
type Variant = "good" | "bad"

type Command =
  | { readonly _tag: "Register"; readonly name: Name; readonly variant: Variant; readonly external: boolean }
  | { readonly _tag: "SetEnabled"; readonly name: Name; readonly enabled: boolean; readonly external: boolean }
  | { readonly _tag: "Unregister"; readonly name: Name; readonly external: boolean }
  | { readonly _tag: "Restart"; readonly name: Name; readonly external: boolean }
  | { readonly _tag: "Crash"; readonly name: Name }
  | { readonly _tag: "RestartHost" }

const name = fc.constantFrom(...names)
const external = fc.boolean()
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    arbitrary: fc.record({
      _tag: fc.constant("Register" as const),
      name,
      variant: fc.constantFrom<Variant>("good", "good", "bad"),
      external
    }),
    weight: 6
  },
  {
    arbitrary: fc.record({ _tag: fc.constant("SetEnabled" as const), name, enabled: fc.boolean(), external }),
    weight: 3
  },
  { arbitrary: fc.record({ _tag: fc.constant("Unregister" as const), name, external }), weight: 2 },
  { arbitrary: fc.record({ _tag: fc.constant("Restart" as const), name, external }), weight: 2 },
  { arbitrary: fc.record({ _tag: fc.constant("Crash" as const), name }), weight: 2 },
  { arbitrary: fc.constant({ _tag: "RestartHost" as const }), weight: 1 }
)

interface ModelEntry {
  readonly variant: Variant
  readonly enabled: boolean
}

const expectedState = (entry: ModelEntry): McpServerEntry.ServerState =>
  !entry.enabled ? "disabled" : entry.variant === "good" ? "connected" : "failed"

describe("McpManager model", () => {
  it.scopedLive.prop(
    "rows, connections, statuses and processes follow the model under any sequence of operations",
    [fc.array(command, { minLength: 4, maxLength: 12 })],
    ([commands]) =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const marker = `model-${Crypto.randomUUID()}`
        const entryFor = (n: Name, variant: Variant) => {
          const good = fixture("hostile", undefined, ["silent", marker])
          return McpServerEntry.McpServerEntry.make({
            name: ServerName.make(n),
            config: variant === "good"
              ? ServerConfig.StdioServerConfig.make({ command: good.command, args: good.args, env: {} })
              : ServerConfig.StdioServerConfig.make({ command: `/nonexistent/${marker}`, args: [], env: {} }),
            enabled: true
          })
        }

        // The "other process": its own connection to the same database file.
        const otherContext = yield* Layer.build(servicesLayer(home))
        const other = Context.get(otherContext, McpServerRepo.McpServerRepo)
        const otherStatuses = Context.get(otherContext, StatusRepo.StatusRepo)

        let hostScope = yield* Scope.make()
        const start = Effect.suspend(() => Scope.extend(startManager(home), hostScope)).pipe(
          Effect.map(({ manager }) => manager)
        )
        yield* Effect.addFinalizer(() => Effect.suspend(() => Scope.close(hostScope, Exit.void)))
        let manager = yield* start

        const model = new Map<Name, ModelEntry>()
        /** Servers whose next connection must be a new process (restarted, replaced, crashed): the old pid. */
        const mustChange = new Map<Name, number>()
        const log: Array<string> = []

        const currentPid = (n: Name) => Effect.map(manager.pids, (pids) => pids.get(n))

        /** Waits until everything agrees with the model; fails with what still disagrees. */
        const settled = Effect.gen(function*() {
          const rows = yield* Effect.orDie(other.list)
          const problems: Array<string> = []
          const rowNames = rows.map((r) => r.name as string).sort()
          const modelNames = [...model.keys()].sort()
          if (JSON.stringify(rowNames) !== JSON.stringify(modelNames)) {
            problems.push(`rows ${rowNames} ≠ model ${modelNames}`)
          }
          for (const row of rows) {
            const m = model.get(row.name as Name)
            if (m !== undefined && row.enabled !== m.enabled) problems.push(`${row.name} enabled=${row.enabled}`)
          }
          const summaries = yield* Effect.orDie(manager.list)
          const pids = yield* manager.pids
          for (const [n, m] of model) {
            const s = summaries.find((x) => x.name === n)
            if (s?.state !== expectedState(m)) {
              problems.push(`${n} is ${s?.state} (${s?.error ?? ""}), expected ${expectedState(m)}`)
            }
            const running = m.enabled && m.variant === "good"
            const pid = pids.get(n)
            if (running !== (pid !== undefined)) problems.push(`${n} running=${pid !== undefined}, expected ${running}`)
            if (pid !== undefined && s?.pid !== pid) problems.push(`${n}: status pid ${s?.pid} ≠ connection pid ${pid}`)
            if (pid !== undefined && mustChange.get(n) === pid) problems.push(`${n} still runs the old process ${pid}`)
          }
          for (const n of pids.keys()) if (!model.has(n as Name)) problems.push(`${n} runs but is not in the model`)
          for (const s of summaries) {
            if (!model.has(s.name as Name)) problems.push(`${s.name} is listed but not in the model`)
          }
          // Live processes of this run are exactly the running connections' processes.
          const live = processesMatching([marker]).map((p) => p.pid).sort()
          const expected = [...pids.values()].sort()
          if (JSON.stringify(live) !== JSON.stringify(expected)) {
            problems.push(`live processes ${live} ≠ connections ${expected}`)
          }
          for (const pid of expected) if (!isAlive(pid)) problems.push(`process ${pid} is dead`)
          if (problems.length > 0) return yield* Effect.fail(problems.join("; "))
          mustChange.clear()
        }).pipe(
          Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("30 seconds"))),
          Effect.catchAll((problems) => Effect.dieMessage(`after ${log.join(" → ")}: ${problems}`))
        )

        for (const cmd of commands) {
          log.push(JSON.stringify(cmd))
          switch (cmd._tag) {
            case "Register": {
              const before = yield* currentPid(cmd.name)
              const entry = entryFor(cmd.name, cmd.variant)
              if (cmd.external) {
                yield* Effect.orDie(other.upsert(entry))
                // Another process's identical write need not restart a server; a changed one must.
                const prev = model.get(cmd.name)
                if (before !== undefined && prev !== undefined && prev.variant !== cmd.variant) {
                  mustChange.set(cmd.name, before)
                }
              } else {
                yield* Effect.orDie(manager.register(entry))
                if (before !== undefined) {
                  mustChange.set(cmd.name, before)
                }
              }
              model.set(cmd.name, { variant: cmd.variant, enabled: true })
              break
            }
            case "SetEnabled": {
              const m = model.get(cmd.name)
              if (cmd.external) {
                const found = yield* Effect.orDie(other.setEnabled(ServerName.make(cmd.name), cmd.enabled))
                assert.strictEqual(found, m !== undefined)
              } else {
                const exit = yield* Effect.exit(manager.setEnabled(ServerName.make(cmd.name), cmd.enabled))
                assert.strictEqual(Exit.isSuccess(exit), m !== undefined)
              }
              if (m !== undefined) model.set(cmd.name, { ...m, enabled: cmd.enabled })
              break
            }
            case "Unregister": {
              const m = model.get(cmd.name)
              if (cmd.external) {
                assert.strictEqual(yield* Effect.orDie(other.remove(ServerName.make(cmd.name))), m !== undefined)
              } else {
                const exit = yield* Effect.exit(manager.unregister(ServerName.make(cmd.name)))
                assert.strictEqual(Exit.isSuccess(exit), m !== undefined)
              }
              model.delete(cmd.name)
              break
            }
            case "Restart": {
              const m = model.get(cmd.name)
              const before = yield* currentPid(cmd.name)
              if (cmd.external) {
                // What `skald mcp restart` writes while a host runs.
                yield* Effect.orDie(otherStatuses.request("restart", cmd.name, new Date().toISOString()))
              } else {
                const exit = yield* Effect.exit(manager.restart(ServerName.make(cmd.name)))
                assert.strictEqual(Exit.isSuccess(exit), m !== undefined)
              }
              if (before !== undefined) mustChange.set(cmd.name, before)
              break
            }
            case "Crash": {
              const pid = yield* currentPid(cmd.name)
              if (pid !== undefined) {
                process.kill(pid, "SIGKILL")
                mustChange.set(cmd.name, pid)
              }
              break
            }
            case "RestartHost": {
              yield* Scope.close(hostScope, Exit.void)
              // Every server stopped with the host.
              assert.deepStrictEqual(processesMatching([marker]), [])
              hostScope = yield* Scope.make()
              manager = yield* start
              break
            }
          }
          yield* settled
        }
        yield* Scope.close(hostScope, Exit.void)
        assert.deepStrictEqual(processesMatching([marker]), [], "no server outlives the host")
      }),
    { timeout: 600_000, fastCheck: { numRuns: 15 } }
  )
})
