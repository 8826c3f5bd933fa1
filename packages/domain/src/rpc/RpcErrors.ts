/**
 * The failures an RPC client can see, shared by the groups (AgentRpcs, McpRpcs, HostRpcs,
 * InboxRpcs). The host maps its services' errors to these in its handlers; each message says what
 * happened and what to do, in words for a person, never a command line's.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** No chat session has that id. */
export class SessionNotFound extends Schema.TaggedError<SessionNotFound>("@skald/domain/rpc/SessionNotFound")(
  "SessionNotFound",
  { sessionId: Schema.String }
) {
  override get message(): string {
    return `no chat session has the id ${this.sessionId}: list the sessions to find it, or start a new one`
  }
}

/** A turn is already running in that session. */
export class SessionBusy extends Schema.TaggedError<SessionBusy>("@skald/domain/rpc/SessionBusy")("SessionBusy", {
  sessionId: Schema.String
}) {
  override get message(): string {
    return `chat session ${this.sessionId} is busy with another turn: wait for it to end (or stop it), then try again`
  }
}

/** No agent of that name. */
export class AgentNotFound extends Schema.TaggedError<AgentNotFound>("@skald/domain/rpc/AgentNotFound")(
  "AgentNotFound",
  { agent: Schema.String, reason: Schema.String }
) {
  override get message(): string {
    return `no agent named '${this.agent}': ${this.reason}`
  }
}

/** The host has no usable model: none is configured, or its settings are wrong. */
export class ModelUnavailable extends Schema.TaggedError<ModelUnavailable>("@skald/domain/rpc/ModelUnavailable")(
  "ModelUnavailable",
  { problem: Schema.String }
) {
  override get message(): string {
    return `the host cannot run the agent: ${this.problem}`
  }
}

/** The session has no running (or recently ended) turn to attach to. */
export class TurnNotFound extends Schema.TaggedError<TurnNotFound>("@skald/domain/rpc/TurnNotFound")(
  "TurnNotFound",
  { sessionId: Schema.String }
) {
  override get message(): string {
    return `chat session ${this.sessionId} has no running or recent turn to attach to: read its history instead`
  }
}

/**
 * The events asked for are no longer kept: the client was further behind than the host keeps
 * (a bounded buffer per turn). `firstKept` is the earliest index still available.
 */
export class TurnEventsLost extends Schema.TaggedError<TurnEventsLost>("@skald/domain/rpc/TurnEventsLost")(
  "TurnEventsLost",
  { sessionId: Schema.String, fromIndex: Schema.Number, firstKept: Schema.Number }
) {
  override get message(): string {
    return `the events of session ${this.sessionId}'s turn from index ${this.fromIndex} are no longer kept ` +
      `(the earliest kept is ${this.firstKept}): attach from there, or read the session's history once the turn ends`
  }
}

/** No MCP server is registered under that name. */
export class ServerNotFound extends Schema.TaggedError<ServerNotFound>("@skald/domain/rpc/ServerNotFound")(
  "ServerNotFound",
  { name: Schema.String }
) {
  override get message(): string {
    return `no MCP server is registered as '${this.name}': list the servers to see their names`
  }
}

/** A server of that name is registered already. */
export class ServerExists extends Schema.TaggedError<ServerExists>("@skald/domain/rpc/ServerExists")(
  "ServerExists",
  { name: Schema.String }
) {
  override get message(): string {
    return `an MCP server named '${this.name}' is registered already: choose another name, or ask to replace it`
  }
}

/** A registration the host cannot take (a bad name, command or URL). */
export class InvalidServer extends Schema.TaggedError<InvalidServer>("@skald/domain/rpc/InvalidServer")(
  "InvalidServer",
  { name: Schema.String, problem: Schema.String }
) {
  override get message(): string {
    return `cannot register MCP server '${this.name}': ${this.problem}`
  }
}

/**
 * The authorization of an HTTP server could not be completed: the server is not an HTTP one, or
 * the flow failed (the reason says where; never a token or secret).
 */
export class AuthorizationFailed extends Schema.TaggedError<AuthorizationFailed>(
  "@skald/domain/rpc/AuthorizationFailed"
)("AuthorizationFailed", { name: Schema.String, reason: Schema.String }) {
  override get message(): string {
    return `could not authorize MCP server '${this.name}': ${this.reason}`
  }
}

/** The host failed at something of its own (its database, its files): what it tried, and why. */
export class HostFailure extends Schema.TaggedError<HostFailure>("@skald/domain/rpc/HostFailure")("HostFailure", {
  problem: Schema.String
}) {
  override get message(): string {
    return `the host failed: ${this.problem}`
  }
}
