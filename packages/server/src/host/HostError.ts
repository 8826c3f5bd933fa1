/**
 * Errors of the host (registry, secrets, manager). Each message says what happened and what to do.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** A `${NAME}` in a server's config names neither a stored secret nor an environment variable. */
export class UnknownSecretReference extends Schema.TaggedError<UnknownSecretReference>(
  "@skald/server/UnknownSecretReference"
)("UnknownSecretReference", { server: Schema.String, variable: Schema.String }) {
  override get message(): string {
    return `MCP server '${this.server}' refers to \${${this.variable}}, which is neither a stored secret nor an ` +
      `environment variable. Store a value for ${this.variable} in the secret store, or set it in the host's ` +
      "environment."
  }
}

/** A secret name that is not `[A-Za-z_][A-Za-z0-9_]*`. */
export class InvalidSecretName extends Schema.TaggedError<InvalidSecretName>("@skald/server/InvalidSecretName")(
  "InvalidSecretName",
  { name: Schema.String }
) {
  override get message(): string {
    return `invalid secret name ${JSON.stringify(this.name)}: use letters, digits and '_', not starting with a digit`
  }
}

/** Reading or writing the secrets folder failed. */
export class SecretStoreError extends Schema.TaggedError<SecretStoreError>("@skald/server/SecretStoreError")(
  "SecretStoreError",
  { operation: Schema.String, path: Schema.String, reason: Schema.String }
) {
  override get message(): string {
    return `could not ${this.operation} ${this.path}: ${this.reason}. Check the secrets folder's permissions.`
  }
}

/** No server of that name is registered. */
export class UnknownServer extends Schema.TaggedError<UnknownServer>("@skald/server/UnknownServer")("UnknownServer", {
  name: Schema.String
}) {
  override get message(): string {
    return `no MCP server named '${this.name}' is registered; check the name against the registered servers`
  }
}

/** A server entry that cannot be registered as given. */
export class InvalidServerEntry extends Schema.TaggedError<InvalidServerEntry>("@skald/server/InvalidServerEntry")(
  "InvalidServerEntry",
  { reason: Schema.String }
) {
  override get message(): string {
    return `invalid MCP server: ${this.reason}`
  }
}

/** A call to a server that is not connected (starting, failed, disabled, or not registered). */
export class ServerNotConnected extends Schema.TaggedError<ServerNotConnected>("@skald/server/ServerNotConnected")(
  "ServerNotConnected",
  { server: Schema.String, state: Schema.String, reason: Schema.optionalWith(Schema.String, { exact: true }) }
) {
  override get message(): string {
    const why = this.reason === undefined ? "" : `: ${this.reason}`
    return `MCP server '${this.server}' is not connected (${this.state})${why}. Its status says why; its ` +
      "tools can be called once it is connected."
  }
}

/** A server that did not finish connecting within the start timeout. */
export class StartTimeout extends Schema.TaggedError<StartTimeout>("@skald/server/StartTimeout")("StartTimeout", {
  server: Schema.String,
  seconds: Schema.Number
}) {
  override get message(): string {
    return `MCP server '${this.server}' did not start within ${this.seconds} s; raise the start timeout if it ` +
      "is just slow"
  }
}

/** A tool name that is not `mcp__<server>__<tool>`. */
export class InvalidToolName extends Schema.TaggedError<InvalidToolName>("@skald/server/InvalidToolName")(
  "InvalidToolName",
  { name: Schema.String }
) {
  override get message(): string {
    return `${JSON.stringify(this.name)} is not an MCP tool name of the form mcp__<server>__<tool>`
  }
}

/** Another host is running on this database. */
export class HostAlreadyRunning extends Schema.TaggedError<HostAlreadyRunning>("@skald/server/HostAlreadyRunning")(
  "HostAlreadyRunning",
  { pid: Schema.Number }
) {
  override get message(): string {
    return `another skald host (pid ${this.pid}) is already running on this database; stop it first`
  }
}

/** A registration under a name that is already registered (and not asked to replace it). */
export class ServerAlreadyRegistered extends Schema.TaggedError<ServerAlreadyRegistered>(
  "@skald/server/ServerAlreadyRegistered"
)("ServerAlreadyRegistered", { name: Schema.String }) {
  override get message(): string {
    return `an MCP server named '${this.name}' is already registered; remove it first or ask to replace it`
  }
}

/** A one-off connection to a server that is registered but disabled. */
export class ServerDisabled extends Schema.TaggedError<ServerDisabled>("@skald/server/ServerDisabled")(
  "ServerDisabled",
  { name: Schema.String }
) {
  override get message(): string {
    return `MCP server '${this.name}' is disabled; enable it first`
  }
}

/**
 * A database row a repository cannot read (a column that is not what the schema says: `env` that
 * is not JSON, an unknown status, …), e.g. written by hand or by a newer version. The values are
 * never quoted: a row may hold secrets.
 */
export class CorruptRow extends Schema.TaggedError<CorruptRow>("@skald/server/CorruptRow")("CorruptRow", {
  table: Schema.String,
  /** The row's key (a server name, an event id) when known. */
  key: Schema.optional(Schema.String),
  columns: Schema.Array(Schema.String)
}) {
  override get message(): string {
    const row = this.key === undefined ? "a row" : `the row ${JSON.stringify(this.key)}`
    return `${row} of table ${this.table} cannot be read (column ${this.columns.join(", ")} is malformed). ` +
      `Correct or delete that row, or re-register what it describes.`
  }
}

/**
 * The database failed a statement (busy past its timeout, read-only, full, locked, damaged, …):
 * what a repository turns a `SqlError` into at its boundary, so no caller sees the SQL layer.
 * `operation` says what was being done ("read the server registry"), `reason` what SQLite said.
 */
export class DatabaseError extends Schema.TaggedError<DatabaseError>("@skald/server/DatabaseError")(
  "DatabaseError",
  {
    operation: Schema.String,
    reason: Schema.String,
    /** SQLite's result code (`SQLITE_BUSY`, `SQLITE_READONLY`, …) when it gave one. */
    code: Schema.optionalWith(Schema.String, { exact: true })
  }
) {
  override get message(): string {
    const advice = this.code?.startsWith("SQLITE_BUSY") === true || this.code?.startsWith("SQLITE_LOCKED") === true
      ? "another process holds the database busy; try again"
      : this.code?.startsWith("SQLITE_READONLY") === true || this.code?.startsWith("SQLITE_CANTOPEN") === true
      ? "check that the data folder and the database file are writable by this user"
      : this.code?.startsWith("SQLITE_FULL") === true
      ? "the disk is full; free some space and try again"
      : "check that the data folder is writable and the disk not full, then try again"
    return `could not ${this.operation}: ${this.reason}; ${advice}`
  }
}
