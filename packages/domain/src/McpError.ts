/**
 * Typed errors of MCP connections and calls. Each message says what happened and what to do.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const tail = (lines: ReadonlyArray<string>): string =>
  lines.length === 0 ? "" : `; last stderr lines:\n  ${lines.join("\n  ")}`

/** The server process could not be started. */
export class McpSpawnError extends Schema.TaggedError<McpSpawnError>("@skald/domain/McpSpawnError")("McpSpawnError", {
  server: Schema.String,
  command: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `MCP server '${this.server}' could not be started (${this.command}): ${this.reason}. ` +
      "Check that the command exists and is executable."
  }
}

/** The server process exited (or closed its output) while the connection was open. */
export class McpServerExited extends Schema.TaggedError<McpServerExited>("@skald/domain/McpServerExited")(
  "McpServerExited",
  {
    server: Schema.String,
    code: Schema.NullOr(Schema.Number),
    signal: Schema.NullOr(Schema.String),
    stderrTail: Schema.Array(Schema.String)
  }
) {
  override get message(): string {
    const how = this.signal !== null ? `was killed by ${this.signal}` : `exited with code ${this.code}`
    return `MCP server '${this.server}' ${how}${tail(this.stderrTail)}`
  }
}

/** The connection was closed on our side (its scope closed) before the request finished. */
export class McpConnectionClosed extends Schema.TaggedError<McpConnectionClosed>("@skald/domain/McpConnectionClosed")(
  "McpConnectionClosed",
  { server: Schema.String }
) {
  override get message(): string {
    return `the connection to MCP server '${this.server}' is closed; reconnect to use it again`
  }
}

/** A message from the server exceeded the size limit; the connection was closed. */
export class McpMessageTooLarge extends Schema.TaggedError<McpMessageTooLarge>("@skald/domain/McpMessageTooLarge")(
  "McpMessageTooLarge",
  { server: Schema.String, limitBytes: Schema.Number }
) {
  override get message(): string {
    return `MCP server '${this.server}' sent a message larger than ${this.limitBytes} bytes; the connection ` +
      "was closed. Raise the message size limit if the server is trusted to send such results."
  }
}

/** The server broke the protocol in a way the client cannot work around. */
export class McpProtocolError extends Schema.TaggedError<McpProtocolError>("@skald/domain/McpProtocolError")(
  "McpProtocolError",
  { server: Schema.String, detail: Schema.String }
) {
  override get message(): string {
    return `MCP server '${this.server}' broke the protocol: ${this.detail}`
  }
}

/** The server answered `initialize` with a protocol version the client does not speak. */
export class McpUnsupportedProtocolVersion
  extends Schema.TaggedError<McpUnsupportedProtocolVersion>("@skald/domain/McpUnsupportedProtocolVersion")(
    "McpUnsupportedProtocolVersion",
    { server: Schema.String, requested: Schema.String, received: Schema.String, supported: Schema.Array(Schema.String) }
  )
{
  override get message(): string {
    return `MCP server '${this.server}' answered protocol version ${this.received}, but Skald asked for ` +
      `${this.requested} and speaks only ${this.supported.join(", ")}; upgrade the server or Skald.`
  }
}

/** The server answered a request with a JSON-RPC error. */
export class McpRequestError extends Schema.TaggedError<McpRequestError>("@skald/domain/McpRequestError")(
  "McpRequestError",
  {
    server: Schema.String,
    method: Schema.String,
    code: Schema.Number,
    reason: Schema.String,
    data: Schema.optionalWith(Schema.Unknown, { exact: true })
  }
) {
  override get message(): string {
    return `MCP server '${this.server}' rejected ${this.method} (error ${this.code}): ${this.reason}`
  }
}

/**
 * A request did not finish within its timeout (a `tools/call`: since its last progress report),
 * or within the longest total time while its progress kept it going (`totalMillis`); a
 * `tools/call` was cancelled on the server.
 */
export class McpTimeout extends Schema.TaggedError<McpTimeout>("@skald/domain/McpTimeout")("McpTimeout", {
  server: Schema.String,
  method: Schema.String,
  timeoutMillis: Schema.Number,
  totalMillis: Schema.optionalWith(Schema.Number, { exact: true })
}) {
  override get message(): string {
    if (this.totalMillis !== undefined) {
      return `MCP server '${this.server}' did not finish ${this.method} within ${this.totalMillis / 1000} s, the ` +
        "longest a call may run while it reports progress; raise that limit if the tool is just slow."
    }
    return `MCP server '${this.server}' did not answer ${this.method} within ${this.timeoutMillis / 1000} s; ` +
      "raise the timeout if the server is just slow."
  }
}

/** The tool is not offered by the server, even after a fresh `tools/list`. */
export class McpUnknownTool extends Schema.TaggedError<McpUnknownTool>("@skald/domain/McpUnknownTool")(
  "McpUnknownTool",
  { server: Schema.String, tool: Schema.String, available: Schema.Array(Schema.String) }
) {
  override get message(): string {
    const some = this.available.slice(0, 20).join(", ")
    const more = this.available.length > 20 ? `, … (${this.available.length} in all)` : ""
    return `MCP server '${this.server}' has no tool '${this.tool}'` +
      (this.available.length === 0 ? " (it offers no tools)" : `; it offers: ${some}${more}`)
  }
}

/** The tool must run as a task, but the server did not declare task-augmented `tools/call`. */
export class McpTaskUnsupported extends Schema.TaggedError<McpTaskUnsupported>("@skald/domain/McpTaskUnsupported")(
  "McpTaskUnsupported",
  { server: Schema.String, tool: Schema.String }
) {
  override get message(): string {
    return `MCP tool '${this.tool}' of server '${this.server}' requires task execution, but the server does not ` +
      "declare tasks.requests.tools.call; the server is inconsistent — report it to its authors."
  }
}

/** A task ended in `failed` without a result to show. */
export class McpTaskFailed extends Schema.TaggedError<McpTaskFailed>("@skald/domain/McpTaskFailed")("McpTaskFailed", {
  server: Schema.String,
  tool: Schema.String,
  taskId: Schema.String,
  statusMessage: Schema.optionalWith(Schema.String, { exact: true })
}) {
  override get message(): string {
    return `task ${this.taskId} (tool '${this.tool}' of MCP server '${this.server}') failed` +
      (this.statusMessage !== undefined ? `: ${this.statusMessage}` : " without saying why")
  }
}

/** A task was cancelled (by the server, or by someone else). */
export class McpTaskCancelled extends Schema.TaggedError<McpTaskCancelled>("@skald/domain/McpTaskCancelled")(
  "McpTaskCancelled",
  {
    server: Schema.String,
    tool: Schema.String,
    taskId: Schema.String,
    statusMessage: Schema.optionalWith(Schema.String, { exact: true })
  }
) {
  override get message(): string {
    return `task ${this.taskId} (tool '${this.tool}' of MCP server '${this.server}') was cancelled` +
      (this.statusMessage !== undefined ? `: ${this.statusMessage}` : "")
  }
}

/** A task did not finish within its ttl (or the client's longest wait); it was cancelled. */
export class McpTaskExpired extends Schema.TaggedError<McpTaskExpired>("@skald/domain/McpTaskExpired")(
  "McpTaskExpired",
  { server: Schema.String, tool: Schema.String, taskId: Schema.String, waitedMillis: Schema.Number }
) {
  override get message(): string {
    return `task ${this.taskId} (tool '${this.tool}' of MCP server '${this.server}') did not finish within ` +
      `${Math.round(this.waitedMillis / 1000)} s (its ttl or the longest task wait); it was given up` +
      " — raise the task wait if the server is just slow."
  }
}

/** One URL the user must visit (from a `-32042` URL-elicitation-required error). */
export const RequiredUrl = Schema.Struct({
  url: Schema.String,
  message: Schema.optionalWith(Schema.String, { exact: true }),
  elicitationId: Schema.optionalWith(Schema.String, { exact: true })
})

/** The server needs the user to complete a URL flow first (error `-32042`); retry afterwards. */
export class McpUrlElicitationRequired
  extends Schema.TaggedError<McpUrlElicitationRequired>("@skald/domain/McpUrlElicitationRequired")(
    "McpUrlElicitationRequired",
    { server: Schema.String, method: Schema.String, reason: Schema.String, urls: Schema.Array(RequiredUrl) }
  )
{
  override get message(): string {
    const list = this.urls.map((u) => `  ${u.url}${u.message !== undefined ? ` — ${u.message}` : ""}`).join("\n")
    return `MCP server '${this.server}' needs you to open ${this.urls.length === 1 ? "a URL" : "these URLs"} ` +
      `before ${this.method} can go on (${this.reason}); open it, then retry:\n${list}`
  }
}

/**
 * Why an OAuth-authorized server refused the request (`McpHttpError.oauth`): `expired` — the
 * stored login could not be renewed (the refresh token was refused); `required` — no login yet,
 * and no one to ask here; `failed` — the authorization itself failed (`reason` says why);
 * `client` — the authorization server refused the configured client's id or secret.
 */
export const OAuthFailure = Schema.Literal("expired", "required", "failed", "client")
export type OAuthFailure = typeof OAuthFailure.Type

/** What a refused pre-registered OAuth client means for its user (`McpHttpError`, `OAuthError`). */
export const OAUTH_CLIENT_REFUSED =
  "the authorization server refused the configured OAuth client id or secret: correct them (authorizing again does not help)"

/** An HTTP exchange with a remote server failed (status, body, content type, or the network). */
export class McpHttpError extends Schema.TaggedError<McpHttpError>("@skald/domain/McpHttpError")("McpHttpError", {
  server: Schema.String,
  url: Schema.String,
  status: Schema.optionalWith(Schema.Number, { exact: true }),
  reason: Schema.String,
  /** Set when the server's OAuth authorization is what failed (then no api key is involved). */
  oauth: Schema.optionalWith(OAuthFailure, { exact: true })
}) {
  override get message(): string {
    const status = this.status === undefined ? "" : ` (HTTP ${this.status})`
    const at = `MCP server '${this.server}' at ${this.url}`
    switch (this.oauth) {
      case "expired":
        return `${at}: its login expired and could not be renewed (${this.reason})${status}; authorize it again`
      case "required":
        return `${at} needs authorization, which cannot be asked for here${status}; authorize it first`
      case "failed":
        return `${at}: authorization failed: ${this.reason}${status}`
      case "client":
        return `${at}: authorization failed: ${this.reason}${status}; ${OAUTH_CLIENT_REFUSED}`
    }
    const hint = this.status === 401 || this.status === 403
      ? "; the api key is missing or wrong — check the api key the server is given"
      : this.status === undefined
      ? "; check the URL and that the server is running"
      : ""
    return `${at}: ${this.reason}${status}${hint}`
  }
}

/**
 * The server did not declare the capability a request needs (`resources`, `resources.subscribe`,
 * `prompts`, `completions`, `logging`): nothing was sent.
 */
export class McpCapabilityUnsupported
  extends Schema.TaggedError<McpCapabilityUnsupported>("@skald/domain/McpCapabilityUnsupported")(
    "McpCapabilityUnsupported",
    { server: Schema.String, capability: Schema.String, method: Schema.String }
  )
{
  override get message(): string {
    const what = this.capability === "resources.subscribe"
      ? "resource subscriptions"
      : this.capability === "logging"
      ? "log levels"
      : this.capability
    return `MCP server '${this.server}' does not offer ${what} (it did not declare the '${this.capability}' ` +
      `capability), so ${this.method} was not sent`
  }
}

/** Every error an MCP connection or call can fail with. */
export type McpError =
  | McpSpawnError
  | McpServerExited
  | McpConnectionClosed
  | McpMessageTooLarge
  | McpProtocolError
  | McpUnsupportedProtocolVersion
  | McpRequestError
  | McpTimeout
  | McpUnknownTool
  | McpTaskUnsupported
  | McpTaskFailed
  | McpTaskCancelled
  | McpTaskExpired
  | McpUrlElicitationRequired
  | McpHttpError
  | McpCapabilityUnsupported

/**
 * The same error naming another server: for a client that learned the server's own name (its
 * `serverInfo.name`) after the transport had named it by its command line or URL.
 */
export const withServer = <E extends McpError>(error: E, server: string): E =>
  error.server === server ? error : new (error.constructor as new(fields: E) => E)({ ...error, server })

/** Errors that end a connection: every pending request fails with one of these. */
export type McpConnectionError =
  | McpHttpError
  | McpSpawnError
  | McpServerExited
  | McpConnectionClosed
  | McpMessageTooLarge
  | McpProtocolError
