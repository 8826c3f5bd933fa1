/**
 * Tool grants (lazy MCP tool loading, docs/agent.md): the tool groups an agent activated with
 * `activate_tools` — MCP server names or the reserved `config`. A root agent's grants belong to
 * its session (`session_mcp_grants`: they survive turns and restarts); a sub-agent's belong to its
 * stack frame (`stack_mcp_grants`: deleted when the frame ends), and a frame starts with none. A
 * frame's grants name the process running it (pid and start time, from `/proc`): a frame cut short
 * by a killed process runs no finalizer, so the next process to build this service deletes the
 * grants of every frame whose process is gone (frames are never resumed). A grant names a group, not a server row: the grant of a server that is
 * disabled or deleted is kept and offers nothing until the server is back (`resolve`).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { McpServerEntry } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Orphans from "../host/Orphans.js"
import { nowIso } from "../host/Time.js"

/** The reserved group of the configuration tools (agent/tools/ConfigTools.ts). */
export const CONFIG_GROUP = "config"

/** Whose grants: a root agent's session, or a sub-agent's stack frame (within its session). */
export type Scope =
  | { readonly _tag: "session"; readonly session: string }
  | { readonly _tag: "stack"; readonly session: string; readonly stack: string }

/** A root agent's scope. */
export const sessionScope = (session: string): Scope => ({ _tag: "session", session })

/** A sub-agent's scope. */
export const stackScope = (session: string, stack: string): Scope => ({ _tag: "stack", session, stack })

/** How a scope is named to the model: `session` or `stack <id>`. */
export const describeScope = (scope: Scope): string => scope._tag === "session" ? "session" : `stack ${scope.stack}`

/** The database could not read or write grants. */
export class GrantsError extends Schema.TaggedError<GrantsError>("@skald/server/GrantsError")(
  "GrantsError",
  { operation: Schema.String, reason: Schema.String }
) {
  override get message(): string {
    return `could not ${this.operation}: ${this.reason}. Check that the data folder is writable and the disk not full.`
  }
}

/** What the database said. */
const reasonOf = (error: SqlError): string => String((error.cause as Error | undefined)?.message ?? error.message)

const failWith = (operation: string) => (error: SqlError) => new GrantsError({ operation, reason: reasonOf(error) })

/** What a granted group offers now. */
export type GrantState =
  /** The `config` group: the configuration tools. */
  | "config"
  /** A connected server: its tools. */
  | "active"
  /** Enabled but not connected (starting, failed, …): nothing until it connects. */
  | "unavailable"
  /** Disabled: nothing; the grant is kept for when it is enabled again. */
  | "disabled"
  /** No server of that name (deleted): nothing; the grant is kept if it is registered again. */
  | "not registered"

/** A grant with what it offers now. */
export interface ResolvedGrant {
  readonly name: string
  readonly state: GrantState
  /** The server, when registered. */
  readonly server?: McpServerEntry.ServerSummary | undefined
}

/** What each grant offers, given the registered servers (pure). */
export const resolve = (
  grants: Iterable<string>,
  servers: ReadonlyArray<McpServerEntry.ServerSummary>
): ReadonlyArray<ResolvedGrant> => {
  const byName = new Map(servers.map((s) => [s.name as string, s]))
  return [...new Set(grants)].sort().map((name): ResolvedGrant => {
    if (name === CONFIG_GROUP) return { name, state: "config" }
    const server = byName.get(name)
    if (server === undefined) return { name, state: "not registered" }
    const state: GrantState = !server.enabled ? "disabled" : server.state === "connected" ? "active" : "unavailable"
    return { name, state, server }
  })
}

/**
 * The server names whose tools a round asks the manager for: the granted servers that are
 * registered and enabled (pure). The manager's `toolsFor` narrows them to the connected ones.
 */
export const offered = (grants: ReadonlyArray<ResolvedGrant>): ReadonlyArray<string> =>
  grants.filter((g) => g.state === "active" || g.state === "unavailable").map((g) => g.name)

/** The grants repository. */
export class Grants extends Effect.Service<Grants>()("@skald/server/Grants", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    /** This process, as its frames' grants name it (undefined without `/proc`: no owner recorded). */
    const self = Orphans.stat(process.pid)

    // The grants of frames whose process is gone (killed mid-frame): never used again, deleted.
    yield* Effect.gen(function*() {
      const owners = yield* sql<{ stack: string; owner_pid: number; owner_start_time: number }>`
        SELECT DISTINCT stack, owner_pid, owner_start_time FROM stack_mcp_grants WHERE owner_pid IS NOT NULL`
      const gone = owners.filter((o) => {
        const owner = Orphans.stat(o.owner_pid)
        return owner === undefined || owner.startTime !== o.owner_start_time || owner.state === "Z"
      })
      if (gone.length === 0) return
      yield* sql`DELETE FROM stack_mcp_grants WHERE ${sql.in("stack", gone.map((o) => o.stack))}`
      yield* Effect.logDebug(`deleted the tool grants of ${gone.length} stack frame(s) a killed process left`)
    }).pipe(
      Effect.catchAll((error) =>
        Effect.logWarning(`could not look for tool grants a killed process left: ${reasonOf(error)}`)
      )
    )

    /** The groups granted in `scope`, sorted. */
    const list = (scope: Scope): Effect.Effect<ReadonlyArray<string>, GrantsError> =>
      (scope._tag === "session"
        ? sql<{ name: string }>`SELECT name FROM session_mcp_grants WHERE session = ${scope.session} ORDER BY name`
        : sql<{ name: string }>`SELECT name FROM stack_mcp_grants WHERE stack = ${scope.stack} ORDER BY name`).pipe(
          Effect.map((rows) => rows.map((r) => r.name)),
          Effect.mapError(failWith("read the tool grants"))
        )

    /** Grants `groups` in `scope` (granting one twice is a no-op); returns the groups newly granted. */
    const activate = Effect.fn("Grants.activate")(function*(scope: Scope, groups: ReadonlyArray<string>) {
      const at = yield* nowIso
      const added: Array<string> = []
      yield* sql.withTransaction(Effect.forEach(
        [...new Set(groups)],
        (name) =>
          (scope._tag === "session"
            ? sql<{ name: string }>`INSERT INTO session_mcp_grants (session, name, granted_at)
                VALUES (${scope.session}, ${name}, ${at}) ON CONFLICT DO NOTHING RETURNING name`
            : sql<{ name: string }>`INSERT INTO stack_mcp_grants
                (stack, session, name, granted_at, owner_pid, owner_start_time)
                VALUES (${scope.stack}, ${scope.session}, ${name}, ${at}, ${self?.pid ?? null},
                  ${self?.startTime ?? null}) ON CONFLICT DO NOTHING RETURNING name`)
            .pipe(Effect.tap((rows) => Effect.sync(() => rows.forEach((r) => added.push(r.name))))),
        { discard: true }
      )).pipe(Effect.mapError(failWith("store the tool grants")))
      return added as ReadonlyArray<string>
    })

    /** Removes a group from `scope`; true if it was granted. */
    const deactivate = Effect.fn("Grants.deactivate")(function*(scope: Scope, name: string) {
      const rows = yield* (scope._tag === "session"
        ? sql`DELETE FROM session_mcp_grants WHERE session = ${scope.session} AND name = ${name} RETURNING name`
        : sql`DELETE FROM stack_mcp_grants WHERE stack = ${scope.stack} AND name = ${name} RETURNING name`).pipe(
          Effect.mapError(failWith("remove a tool grant"))
        )
      return rows.length > 0
    })

    /** A stack frame ended: its grants go (its parent's stay). */
    const endFrame = Effect.fn("Grants.endFrame")(function*(stack: string) {
      yield* sql`DELETE FROM stack_mcp_grants WHERE stack = ${stack}`.pipe(
        Effect.mapError(failWith("remove a stack frame's tool grants"))
      )
    })

    return { list, activate, deactivate, endFrame } as const
  })
}) {}
