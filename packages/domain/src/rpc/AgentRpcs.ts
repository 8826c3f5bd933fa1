/**
 * The agent over RPC: send a message (a stream of the turn's events), stop a turn, attach to a
 * running turn from an event index, and the sessions (list, history, delete).
 *
 * A turn's events are numbered from 0 (its `TurnStarted`) in the order every client receives
 * them. A turn begun by `Send` runs in the host: a client that goes away does not stop it; it
 * attaches again with `Attach(sessionId, n)` where `n` is the number of events it had received,
 * and gets the rest, missing nothing (within the host's per-turn buffer, docs/rpc.md).
 *
 * @since 0.1.0
 */
import * as Rpc from "@effect/rpc/Rpc"
import * as RpcGroup from "@effect/rpc/RpcGroup"
import * as Schema from "effect/Schema"
import { ResultKind } from "../ToolResult.js"
import { TurnEvent } from "../TurnEvent.js"
import * as RpcErrors from "./RpcErrors.js"

/** A chat session as listed. `running`: a turn is running in it now. */
export class SessionInfo extends Schema.Class<SessionInfo>("@skald/domain/rpc/SessionInfo")({
  id: Schema.String,
  agent: Schema.String,
  title: Schema.optionalWith(Schema.String, { exact: true }),
  /** A sub-agent's session: the session that dispatched it. */
  parent: Schema.optionalWith(Schema.String, { exact: true }),
  createdAt: Schema.String,
  updatedAt: Schema.String,
  running: Schema.Boolean
}) {}

/** How a stored tool call ended (`running` while it runs). */
export const CallStatus = Schema.Literal("running", "done", "error", "cancelled", "denied")

/** A tool call as stored: its result as the model read it, its type, its media links. */
export class StoredCall extends Schema.Class<StoredCall>("@skald/domain/rpc/StoredCall")({
  callId: Schema.String,
  name: Schema.String,
  arguments: Schema.Unknown,
  status: CallStatus,
  result: Schema.optionalWith(Schema.String, { exact: true }),
  /** `result_type`: `string`, or `json` (compact JSON text). */
  resultType: ResultKind,
  /** The `/api/mcp-media/…` links in the result. */
  mediaUrls: Schema.Array(Schema.String)
}) {}

/** A stored message of a session. */
export class StoredMessage extends Schema.Class<StoredMessage>("@skald/domain/rpc/StoredMessage")({
  seq: Schema.Number,
  role: Schema.Literal("system", "user", "assistant", "tool"),
  text: Schema.String,
  createdAt: Schema.String,
  calls: Schema.Array(StoredCall)
}) {}

/** A session with its messages. */
export class SessionHistory extends Schema.Class<SessionHistory>("@skald/domain/rpc/SessionHistory")({
  session: SessionInfo,
  messages: Schema.Array(StoredMessage),
  /** The sub-agent sessions it dispatched (the first first); absent when none. */
  subAgents: Schema.optionalWith(Schema.Array(SessionInfo), { exact: true })
}) {}

/** Why a turn could not begin (once begun, its events tell what happens). */
export const SendError = Schema.Union(
  RpcErrors.SessionNotFound,
  RpcErrors.SessionBusy,
  RpcErrors.AgentNotFound,
  RpcErrors.ModelUnavailable,
  RpcErrors.TurnEventsLost,
  RpcErrors.HostFailure
)

/** Starts a turn (in `sessionId`, else a new session of `agent`, default `main`): its events. */
export const Send = Rpc.make("Agent.Send", {
  payload: Schema.Struct({
    message: Schema.String,
    sessionId: Schema.optionalWith(Schema.String, { exact: true }),
    agent: Schema.optionalWith(Schema.String, { exact: true })
  }),
  success: TurnEvent,
  error: SendError,
  stream: true
})

/** Stops the session's running turn and waits until it has stopped; `stopped` is false when none ran. */
export const Stop = Rpc.make("Agent.Stop", {
  payload: { sessionId: Schema.String },
  success: Schema.Struct({ stopped: Schema.Boolean })
})

/** The events of the session's running (or last) turn from `fromIndex` on, live until it ends. */
export const Attach = Rpc.make("Agent.Attach", {
  payload: Schema.Struct({
    sessionId: Schema.String,
    fromIndex: Schema.optionalWith(Schema.NonNegativeInt, { exact: true })
  }),
  success: TurnEvent,
  error: Schema.Union(RpcErrors.TurnNotFound, RpcErrors.TurnEventsLost),
  stream: true
})

/** Every session, most recently updated first. */
export const Sessions = Rpc.make("Agent.Sessions", {
  success: Schema.Array(SessionInfo),
  error: RpcErrors.HostFailure
})

/** A session's messages with their tool calls. */
export const History = Rpc.make("Agent.History", {
  payload: { sessionId: Schema.String },
  success: SessionHistory,
  error: Schema.Union(RpcErrors.SessionNotFound, RpcErrors.HostFailure)
})

/** Deletes a session (its messages, calls and grants); refused while a turn runs in it. */
export const DeleteSession = Rpc.make("Agent.DeleteSession", {
  payload: { sessionId: Schema.String },
  error: Schema.Union(RpcErrors.SessionNotFound, RpcErrors.SessionBusy, RpcErrors.HostFailure)
})

/** What a chat command does: text to show, or the message to send as the user's turn. */
export const CommandOutcome = Schema.Union(
  Schema.TaggedStruct("Print", { text: Schema.String }),
  Schema.TaggedStruct("Send", { message: Schema.String })
)

/** A chat line starting with `/` (`/help`, `/SERVER:PROMPT name=value …`) run against the host's servers. */
export const Command = Rpc.make("Agent.Command", {
  payload: { line: Schema.String },
  success: CommandOutcome,
  error: RpcErrors.HostFailure
})

/** The agent's RPCs. */
export class AgentRpcs extends RpcGroup.make(Send, Stop, Attach, Sessions, History, DeleteSession, Command) {}
