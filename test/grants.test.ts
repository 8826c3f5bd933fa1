/**
 * Tool grants (agent/Grants.ts) against a model of their state, on a real SQLite file: random
 * sequences of activations (the root session's or a stack frame's), servers disabled, enabled,
 * deleted and registered again, frames ending and the host restarting (the database closed and
 * opened again). After every step: each scope lists exactly the model's grants, an ended frame
 * lists none, a grant of a disabled or deleted server is kept and offers nothing, and the
 * session's grants never change through a frame's.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { McpServerRepo, ServerList, StatusRepo } from "@skald/server"
import { ChatStore } from "@skald/server/agent/ChatStore"
import * as Grants from "@skald/server/agent/Grants"
import * as Orphans from "@skald/server/host/Orphans"
import { Context, Effect, Exit, FastCheck as fc, Layer, Scope } from "effect"
import * as ChildProcess from "node:child_process"
import { fixtureEntry, servicesLayer, tempHome } from "./host-support.js"

const SERVERS = ["alpha", "beta", "gamma"] as const
const FRAMES = ["f1", "f2"] as const
const group = fc.constantFrom(...SERVERS, Grants.CONFIG_GROUP)

type Command =
  | { readonly _tag: "activate"; readonly frame: (typeof FRAMES)[number] | undefined; readonly groups: Array<string> }
  | { readonly _tag: "deactivate"; readonly frame: (typeof FRAMES)[number] | undefined; readonly group: string }
  | { readonly _tag: "enable" | "disable" | "delete" | "register"; readonly server: (typeof SERVERS)[number] }
  | { readonly _tag: "endFrame"; readonly frame: (typeof FRAMES)[number] }
  | { readonly _tag: "restart" }

const frame = fc.option(fc.constantFrom(...FRAMES), { nil: undefined })
const server = fc.constantFrom(...SERVERS)
const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ _tag: fc.constant("activate" as const), frame, groups: fc.array(group, { minLength: 1, maxLength: 3 }) }),
  fc.record({ _tag: fc.constant("deactivate" as const), frame, group }),
  fc.record({
    _tag: fc.constantFrom("enable" as const, "disable" as const, "delete" as const, "register" as const),
    server
  }),
  fc.record({ _tag: fc.constant("endFrame" as const), frame: fc.constantFrom(...FRAMES) }),
  fc.constant({ _tag: "restart" as const })
)

const hostLayer = (home: string) =>
  Layer.provideMerge(Layer.merge(Grants.Grants.Default, ChatStore.Default), servicesLayer(home))

describe("tool grants", () => {
  it.effect.prop(
    "grant state follows the model through activations, server changes, frame ends and restarts",
    { commands: fc.array(command, { minLength: 1, maxLength: 14 }) },
    ({ commands }) =>
      Effect.scoped(Effect.gen(function*() {
        const home = yield* tempHome
        let scope = yield* Scope.make()
        let context = yield* Layer.buildWithScope(hostLayer(home), scope)
        const session = (yield* Effect.provide(
          Effect.flatMap(ChatStore, (s) => s.createSession({ agent: "main" })),
          context
        )).id
        // The model.
        const root = new Set<string>()
        const frames = new Map<string, Set<string>>(FRAMES.map((f) => [f, new Set()]))
        const ended = new Set<string>()
        const servers = new Map<string, boolean>() // registered servers: enabled
        const scopeOf = (f: string | undefined) =>
          f === undefined ? Grants.sessionScope(session) : Grants.stackScope(session, f)
        const modelOf = (f: string | undefined) => f === undefined ? root : frames.get(f)!

        for (const s of SERVERS) {
          yield* Effect.provide(
            Effect.flatMap(McpServerRepo.McpServerRepo, (r) => r.upsert(fixtureEntry(s, "echo"))),
            context
          )
          servers.set(s, true)
        }

        for (const cmd of commands) {
          const run = <A, E>(eff: Effect.Effect<A, E, Grants.Grants | McpServerRepo.McpServerRepo>) =>
            Effect.provide(eff, context)
          switch (cmd._tag) {
            case "activate": {
              if (cmd.frame !== undefined && ended.has(cmd.frame)) break // an ended frame runs no more
              const added = yield* run(Effect.flatMap(Grants.Grants, (g) => g.activate(scopeOf(cmd.frame), cmd.groups)))
              const model = modelOf(cmd.frame)
              const expected = [...new Set(cmd.groups)].filter((g) => !model.has(g))
              assert.deepStrictEqual([...added].sort(), expected.sort())
              for (const g of cmd.groups) model.add(g)
              break
            }
            case "deactivate": {
              if (cmd.frame !== undefined && ended.has(cmd.frame)) break
              const was = yield* run(Effect.flatMap(Grants.Grants, (g) => g.deactivate(scopeOf(cmd.frame), cmd.group)))
              assert.strictEqual(was, modelOf(cmd.frame).delete(cmd.group))
              break
            }
            case "enable":
            case "disable": {
              const found = yield* run(
                Effect.flatMap(McpServerRepo.McpServerRepo, (r) =>
                  r.setEnabled(cmd.server as never, cmd._tag === "enable"))
              )
              assert.strictEqual(found, servers.has(cmd.server))
              if (found) {
                servers.set(cmd.server, cmd._tag === "enable")
              }
              break
            }
            case "delete": {
              yield* run(Effect.flatMap(McpServerRepo.McpServerRepo, (r) =>
                r.remove(cmd.server as never)))
              servers.delete(cmd.server)
              break
            }
            case "register": {
              yield* run(Effect.flatMap(McpServerRepo.McpServerRepo, (r) => r.upsert(fixtureEntry(cmd.server, "echo"))))
              servers.set(cmd.server, true)
              break
            }
            case "endFrame": {
              yield* run(Effect.flatMap(Grants.Grants, (g) => g.endFrame(cmd.frame)))
              frames.get(cmd.frame)!.clear()
              ended.add(cmd.frame)
              break
            }
            case "restart": {
              yield* Scope.close(scope, Exit.void)
              scope = yield* Scope.make()
              context = yield* Layer.buildWithScope(hostLayer(home), scope)
              break
            }
          }
          // The invariants, read back from the database.
          const summaries = yield* Effect.provide(
            ServerList.summaries().pipe(
              Effect.provideService(McpServerRepo.McpServerRepo, Context.get(context, McpServerRepo.McpServerRepo)),
              Effect.provideService(StatusRepo.StatusRepo, Context.get(context, StatusRepo.StatusRepo))
            ),
            context
          )
          for (const f of [undefined, ...FRAMES]) {
            const listed = yield* run(Effect.flatMap(Grants.Grants, (g) => g.list(scopeOf(f))))
            assert.deepStrictEqual([...listed], [...modelOf(f)].sort(), `grants of ${f ?? "the session"}`)
            const resolved = Grants.resolve(listed, summaries)
            // Kept, whatever the server's state.
            assert.deepStrictEqual(resolved.map((g) => g.name), [...listed])
            for (const g of resolved) {
              const expected = g.name === Grants.CONFIG_GROUP
                ? "config"
                : !servers.has(g.name)
                ? "not registered"
                : servers.get(g.name) === false
                ? "disabled"
                : g.state // enabled: connected or not (no manager runs here)
              assert.strictEqual(g.state, expected, `${g.name} in ${f ?? "the session"}`)
            }
            // Offers the enabled granted servers only (the manager narrows to the connected ones).
            assert.deepStrictEqual(
              [...Grants.offered(resolved)],
              [...modelOf(f)].filter((g) => servers.get(g) === true).sort()
            )
          }
        }
        yield* Scope.close(scope, Exit.void)
      })),
    { fastCheck: { numRuns: 25 } }
  )

  it.scoped("a frame cut short by a killed process: its grants go when the next process builds the service", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      // A process that ran a frame and was killed: its pid and start time, taken while it ran.
      const child = ChildProcess.spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" })
      const owner = yield* Effect.promise(() =>
        new Promise<Orphans.ProcessStat>((resolve, reject) =>
          child.once("spawn", () => {
            const stat = Orphans.stat(child.pid!)
            if (stat === undefined) reject(new Error("no /proc: this test needs Linux"))
            else resolve(stat)
          })
        )
      )
      child.kill("SIGKILL")
      yield* Effect.promise(() => new Promise((resolve) => child.once("exit", resolve)))

      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(hostLayer(home), scope)
      const { grants, session, sql } = yield* Effect.provide(
        Effect.gen(function*() {
          const session = (yield* (yield* ChatStore).createSession({ agent: "main" })).id
          return { grants: yield* Grants.Grants, session, sql: yield* SqlClient.SqlClient }
        }),
        context
      )
      // This process's frame (alive) and the killed one's; a row with no owner (no /proc) is left alone.
      yield* grants.activate(Grants.stackScope(session, "mine"), ["alpha"])
      yield* sql`INSERT INTO stack_mcp_grants (stack, session, name, granted_at, owner_pid, owner_start_time)
        VALUES ('killed', ${session}, 'alpha', '2026-01-01T00:00:00Z', ${owner.pid}, ${owner.startTime}),
               ('unknown', ${session}, 'beta', '2026-01-01T00:00:00Z', NULL, NULL)`
      // This process's own frame names it.
      const mine = yield* sql<{ owner_pid: number; owner_start_time: number }>`
        SELECT owner_pid, owner_start_time FROM stack_mcp_grants WHERE stack = 'mine'`
      assert.deepStrictEqual(mine.map((r) => [r.owner_pid, r.owner_start_time]), [
        [process.pid, Orphans.stat(process.pid)!.startTime]
      ])
      yield* Scope.close(scope, Exit.void)

      // The next process (here: the service built again) deletes the killed frame's grants only.
      const again = yield* Layer.build(hostLayer(home))
      const left = yield* Effect.provide(
        Effect.gen(function*() {
          const grants = yield* Grants.Grants
          return {
            mine: yield* grants.list(Grants.stackScope(session, "mine")),
            killed: yield* grants.list(Grants.stackScope(session, "killed")),
            unknown: yield* grants.list(Grants.stackScope(session, "unknown"))
          }
        }),
        again
      )
      assert.deepStrictEqual(left, { mine: ["alpha"], killed: [], unknown: ["beta"] })
    }))
})
