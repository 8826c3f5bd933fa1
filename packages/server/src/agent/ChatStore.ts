/**
 * The agent's sessions and their history: `chat_sessions`, `chat_messages` and `chat_llm_tools`
 * (migration 0006; appending through the triggers of 0015). Rows are read through row schemas (a bad row is a `CorruptRow`); a database
 * failure is the host's `DatabaseError` saying what could not be done. Timestamps come from `Clock`.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { ToolResult, TurnEvent } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Crypto from "node:crypto"
import type { CorruptRow, DatabaseError } from "../host/HostError.js"
import * as Rows from "../host/Rows.js"
import { nowIso } from "../host/Time.js"
import type { CallRow, CallStatus, MessageRow } from "./History.js"

/** A chat session. */
export class Session extends Schema.Class<Session>("@skald/server/ChatSession")({
  id: Schema.String,
  agent: Schema.String,
  title: Schema.optionalWith(Schema.String, { exact: true }),
  /** A sub-agent's session: the session that dispatched it. */
  parent: Schema.optionalWith(Schema.String, { exact: true }),
  createdAt: Schema.String,
  updatedAt: Schema.String
}) {}

/** A stored message with its row id and place in the session. */
export interface StoredMessage extends MessageRow {
  readonly id: number
  readonly seq: number
  readonly createdAt: string
}

const SessionRow = Schema.Struct({
  id: Schema.String,
  agent: Schema.String,
  title: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String,
  parent: Schema.NullOr(Schema.String)
})

const MessageRowSchema = Schema.Struct({
  id: Schema.Number,
  seq: Schema.Number,
  role: Schema.Literal("system", "user", "assistant", "tool"),
  text: Schema.String,
  created_at: Schema.String
})

const CallRowSchema = Schema.Struct({
  message: Schema.Number,
  call_id: Schema.String,
  tool_name: Schema.String,
  arguments: Schema.parseJson(),
  result: Schema.NullOr(Schema.String),
  result_type: ToolResult.ResultKind,
  status: Schema.Literal("running", ...TurnEvent.ToolStatus.literals)
})

const sessionOf = (r: typeof SessionRow.Type): Session =>
  Session.make({
    id: r.id,
    agent: r.agent,
    ...(r.title === null ? {} : { title: r.title }),
    ...(r.parent === null ? {} : { parent: r.parent }),
    createdAt: r.created_at,
    updatedAt: r.updated_at
  })

const callOf = (r: typeof CallRowSchema.Type): CallRow => ({
  callId: r.call_id,
  name: r.tool_name,
  arguments: r.arguments,
  status: r.status,
  result: r.result ?? undefined,
  resultType: r.result_type
})

/** A call's outcome, as recorded when it ends. */
export interface CallOutcome {
  readonly status: Exclude<CallStatus, "running">
  readonly result: string
  readonly resultType: ToolResult.ResultKind
}

const failWith = Rows.databaseError

/** The chat tables. */
export class ChatStore extends Effect.Service<ChatStore>()("@skald/server/ChatStore", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findSession = SqlSchema.findOne({
      Request: Schema.String,
      Result: SessionRow,
      execute: (id) => sql`SELECT * FROM chat_sessions WHERE id = ${id}`
    })
    const topSessions = SqlSchema.findAll({
      Request: Schema.Void,
      Result: SessionRow,
      execute: () => sql`SELECT * FROM chat_sessions WHERE parent IS NULL ORDER BY updated_at DESC, created_at DESC`
    })
    const childSessions = SqlSchema.findAll({
      Request: Schema.String,
      Result: SessionRow,
      execute: (parent) => sql`SELECT * FROM chat_sessions WHERE parent = ${parent} ORDER BY created_at, rowid`
    })
    const messagesOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: MessageRowSchema,
      execute: (session) =>
        sql`SELECT id, seq, role, text, created_at FROM chat_messages WHERE session = ${session} ORDER BY seq`
    })
    const callsOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: CallRowSchema,
      execute: (session) =>
        sql`SELECT message, call_id, tool_name, arguments, result, result_type, status
          FROM chat_llm_tools WHERE session = ${session} ORDER BY message, position`
    })

    /** Creates a session for `agent` (a sub-agent's: with the session that dispatched it). */
    const createSession = Effect.fn("ChatStore.createSession")(
      function*(
        input: { readonly agent: string; readonly title?: string | undefined; readonly parent?: string | undefined }
      ) {
        const at = yield* nowIso
        const id = Crypto.randomUUID()
        yield* sql`INSERT INTO chat_sessions (id, agent, title, created_at, updated_at, parent)
          VALUES (${id}, ${input.agent}, ${input.title ?? null}, ${at}, ${at}, ${input.parent ?? null})`.pipe(
          Effect.mapError(failWith("create a chat session"))
        )
        return Session.make({
          id,
          agent: input.agent,
          ...(input.title === undefined ? {} : { title: input.title }),
          ...(input.parent === undefined ? {} : { parent: input.parent }),
          createdAt: at,
          updatedAt: at
        })
      }
    )

    /** The session `id`, if it exists. */
    const getSession = (id: string): Effect.Effect<Option.Option<Session>, DatabaseError | CorruptRow> =>
      findSession(id).pipe(
        Effect.catchTag("ParseError", Rows.corrupt("chat_sessions", id)),
        Effect.catchTag("SqlError", (e) => Effect.fail(failWith("read a chat session")(e))),
        Effect.map(Option.map(sessionOf))
      )

    /** Every session a person started, the most recently active first (sub-agents' are under theirs). */
    const listSessions: Effect.Effect<ReadonlyArray<Session>, DatabaseError | CorruptRow> = topSessions(undefined)
      .pipe(
        Effect.catchTag("ParseError", Rows.corrupt("chat_sessions")),
        Effect.catchTag("SqlError", (e) => Effect.fail(failWith("list the chat sessions")(e))),
        Effect.map((rows) => rows.map(sessionOf))
      )

    /** The sub-agent sessions `id` dispatched, the first first. */
    const subSessions = (id: string): Effect.Effect<ReadonlyArray<Session>, DatabaseError | CorruptRow> =>
      childSessions(id).pipe(
        Effect.catchTag("ParseError", Rows.corrupt("chat_sessions")),
        Effect.catchTag("SqlError", (e) => Effect.fail(failWith("list a chat session's sub-agent sessions")(e))),
        Effect.map((rows) => rows.map(sessionOf))
      )

    /**
     * Deletes a session with its messages and calls, and its sub-agent sessions (theirs in turn);
     * false if there was none.
     */
    const removeSession = Effect.fn("ChatStore.removeSession")(function*(id: string) {
      return yield* sql.withTransaction(Effect.gen(function*() {
        const tree = yield* sql<{ id: string }>`WITH RECURSIVE tree(id) AS (
            SELECT id FROM chat_sessions WHERE id = ${id}
            UNION SELECT s.id FROM chat_sessions s JOIN tree t ON s.parent = t.id
          ) SELECT id FROM tree`
        if (tree.length === 0) return false
        const ids = tree.map((row) => row.id)
        yield* sql`DELETE FROM chat_llm_tools WHERE ${sql.in("session", ids)}`
        // Their tool grants (agent/Grants.ts) go with them.
        yield* sql`DELETE FROM session_mcp_grants WHERE ${sql.in("session", ids)}`
        yield* sql`DELETE FROM stack_mcp_grants WHERE ${sql.in("session", ids)}`
        yield* sql`DELETE FROM chat_messages WHERE ${sql.in("session", ids)}`
        yield* sql`DELETE FROM chat_sessions WHERE ${sql.in("id", ids)}`
        return true
      })).pipe(Effect.mapError(failWith("delete a chat session")))
    })

    /**
     * Appends a message (and, for an assistant message, its calls as given, `running` until they
     * end) at the end of the session; returns the message's id. One statement: the triggers of
     * migration 0015 write the calls' rows and the session's time within it (all or nothing).
     */
    const append = Effect.fn("ChatStore.append")(function*(session: string, row: MessageRow) {
      const at = yield* nowIso
      const calls = row.calls.length === 0 ? null : JSON.stringify(row.calls.map((call) => ({
        callId: call.callId,
        name: call.name,
        arguments: JSON.stringify(call.arguments ?? {}),
        result: call.result ?? null,
        resultType: call.resultType,
        status: call.status
      })))
      const [inserted] = yield* sql<{ id: number }>`INSERT INTO chat_messages
          (session, seq, role, text, created_at, new_calls)
        VALUES (${session},
          (SELECT COALESCE(MAX(seq), -1) + 1 FROM chat_messages WHERE session = ${session}),
          ${row.role}, ${row.text}, ${at}, ${calls})
        RETURNING id`.pipe(Effect.mapError(failWith("save a chat message")))
      return inserted!.id
    })

    /** Records how a running call ended (a call that already ended keeps its outcome). */
    const finishCall = Effect.fn("ChatStore.finishCall")(
      function*(message: number, callId: string, outcome: CallOutcome) {
        const at = yield* nowIso
        yield* sql`UPDATE chat_llm_tools
          SET status = ${outcome.status}, result = ${outcome.result}, result_type = ${outcome.resultType},
            finished_at = ${at}
          WHERE message = ${message} AND call_id = ${callId} AND status = 'running'`.pipe(
          Effect.mapError(failWith("record a tool call's result"))
        )
      }
    )

    /** Records every call of `message` still running as `cancelled` with `result`; returns their ids. */
    const cancelRunning = Effect.fn("ChatStore.cancelRunning")(function*(message: number, result: string) {
      const at = yield* nowIso
      const rows = yield* sql<{ call_id: string }>`UPDATE chat_llm_tools
        SET status = 'cancelled', result = ${result}, result_type = 'string', finished_at = ${at}
        WHERE message = ${message} AND status = 'running'
        RETURNING call_id`.pipe(Effect.mapError(failWith("record the cancelled tool calls")))
      return rows.map((r) => r.call_id)
    })

    /** The session's messages, in order, each assistant message with its calls in order. */
    const history = (session: string): Effect.Effect<ReadonlyArray<StoredMessage>, DatabaseError | CorruptRow> =>
      Effect.gen(function*() {
        const messages = yield* messagesOf(session).pipe(Effect.catchTag("ParseError", Rows.corrupt("chat_messages")))
        const calls = yield* callsOf(session).pipe(Effect.catchTag("ParseError", Rows.corrupt("chat_llm_tools")))
        const byMessage = new Map<number, Array<CallRow>>()
        for (const c of calls) {
          const list = byMessage.get(c.message) ?? []
          list.push(callOf(c))
          byMessage.set(c.message, list)
        }
        return messages.map((m): StoredMessage => ({
          id: m.id,
          seq: m.seq,
          role: m.role,
          text: m.text,
          createdAt: m.created_at,
          calls: byMessage.get(m.id) ?? []
        }))
      }).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(failWith("read a chat session's messages")(e))))

    return {
      createSession,
      getSession,
      listSessions,
      subSessions,
      removeSession,
      append,
      finishCall,
      cancelRunning,
      history
    } as const
  })
}) {}
