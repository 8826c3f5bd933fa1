/**
 * MCP server administration over RPC: list (with status), show, add, enable/disable, remove,
 * restart, tools, logs (the tail, then followed as a stream) and the stored events. Changes take
 * effect live in the host, as the same operations do from any other client.
 *
 * @since 0.1.0
 */
import * as Rpc from "@effect/rpc/Rpc"
import * as RpcGroup from "@effect/rpc/RpcGroup"
import * as Schema from "effect/Schema"
import { ServerSummary } from "../McpServerEntry.js"
import { McpTool } from "../McpTool.js"
import { OAuthSigningAlgorithm } from "../ServerConfig.js"
import * as ServerName from "../ServerName.js"
import * as RpcErrors from "./RpcErrors.js"

/**
 * An HTTP server's OAuth client settings: a pre-registered client id, its secret or its
 * `private_key_jwt` key and algorithm, a Client ID Metadata Document's URL, the scope and grant to
 * ask for.
 */
export const OAuthSettings = Schema.Struct({
  clientId: Schema.optionalWith(Schema.String, { exact: true }),
  clientSecret: Schema.optionalWith(Schema.String, { exact: true }),
  privateKey: Schema.optionalWith(Schema.String, { exact: true }),
  signingAlgorithm: Schema.optionalWith(OAuthSigningAlgorithm, { exact: true }),
  clientMetadataUrl: Schema.optionalWith(Schema.String, { exact: true }),
  scope: Schema.optionalWith(Schema.String, { exact: true }),
  grant: Schema.optionalWith(Schema.Literal("authorization_code", "client_credentials"), { exact: true })
})

/** A registered server as it may be shown: `${NAME}` references as stored, never secret values. */
export class ServerDescription extends Schema.Class<ServerDescription>("@skald/domain/rpc/ServerDescription")({
  name: Schema.String,
  friendlyName: Schema.optionalWith(Schema.String, { exact: true }),
  description: Schema.optionalWith(Schema.String, { exact: true }),
  enabled: Schema.Boolean,
  /** The folders offered to the server as MCP roots (absolute). */
  roots: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  transport: Schema.Literal("stdio", "http"),
  command: Schema.optionalWith(Schema.String, { exact: true }),
  args: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  env: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true }),
  url: Schema.optionalWith(Schema.String, { exact: true }),
  /** A `${NAME}` reference, or a placeholder for a literal key. */
  apiKey: Schema.optionalWith(Schema.String, { exact: true }),
  /** The OAuth client settings; the secret as its `${NAME}` reference (or a placeholder). */
  oauth: Schema.optionalWith(OAuthSettings, { exact: true })
}) {}

const Env = Schema.Record({ key: Schema.String, value: Schema.String })

/** A stdio server: its command line and environment (`secretEnv` values are moved into the secret store). */
export const StdioTransport = Schema.TaggedStruct("stdio", {
  command: Schema.String,
  args: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  env: Schema.optionalWith(Env, { exact: true }),
  secretEnv: Schema.optionalWith(Env, { exact: true })
})

/** An HTTP server: its URL and api key (a `${NAME}` reference, or a literal moved into the store). */
export const HttpTransport = Schema.TaggedStruct("http", {
  url: Schema.String,
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey: Schema.optionalWith(Schema.String, { exact: true }),
  apiKeyVariable: Schema.optionalWith(Schema.String, { exact: true }),
  /**
   * OAuth client settings (`clientSecret`, `privateKey`: a `${NAME}` reference, or a literal moved
   * into the store).
   */
  oauth: Schema.optionalWith(OAuthSettings, { exact: true })
})

/** A registrable server name (the rule of `ServerName`, as a plain string). */
export const AddName = Schema.String.pipe(
  Schema.filter((name) =>
    ServerName.isValid(name) ||
    `the server name ${JSON.stringify(name)} is not valid: use 1-64 letters, digits, '-' and '_', ` +
      "never '__', and do not start or end with '_'"
  )
)

/** An environment variable's (or a stored secret's) name: a letter or `_`, then letters, digits and `_`. */
export const VariableName = Schema.String.pipe(
  Schema.filter((name) =>
    /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ||
    `${JSON.stringify(name)} is not a variable name: use letters, digits and '_', not starting with a digit`
  )
)

/**
 * A secret given by reference: exactly `${NAME}`, the name of a secret in the host's store (or of
 * an environment variable of the host). A client that should never hold a secret's value (the
 * web UI) accepts only this where a secret goes.
 */
export const SecretReference = Schema.String.pipe(
  Schema.filter((value) =>
    /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(value) ||
    "a secret is given as a reference to the secret store, ${NAME} (the name of a stored secret), never as its value"
  )
)

/** Environment variables, every key a variable name (a record's key schema would drop the others silently). */
const CheckedEnv = Env.pipe(
  Schema.filter((env) => {
    const bad = Object.keys(env).find((key) => !Schema.is(VariableName)(key))
    return bad === undefined ||
      `${JSON.stringify(bad)} is not a variable name: use letters, digits and '_', not starting with a digit`
  })
)

const CheckedStdio = Schema.TaggedStruct("stdio", {
  ...StdioTransport.fields,
  command: Schema.String.pipe(Schema.filter((c) => c.trim().length > 0 || "the command is empty")),
  env: Schema.optionalWith(CheckedEnv, { exact: true }),
  secretEnv: Schema.optionalWith(CheckedEnv, { exact: true })
})

const CheckedHttp = Schema.TaggedStruct("http", {
  ...HttpTransport.fields,
  url: Schema.String.pipe(
    Schema.filter((url) =>
      (URL.canParse(url) && /^https?:$/.test(new URL(url).protocol)) ||
      `the URL ${JSON.stringify(url)} is not an http:// or https:// address`
    )
  ),
  apiKeyVariable: Schema.optionalWith(VariableName, { exact: true })
})

/** A tool as an RPC client sees it: its qualified name (`mcp__<server>__<tool>`), its server, its definition. */
export class ToolInfo extends Schema.Class<ToolInfo>("@skald/domain/rpc/ToolInfo")({
  name: Schema.String,
  server: Schema.String,
  tool: McpTool,
  /** The tool exactly as the server sent it in `tools/list`. */
  wire: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { exact: true })
}) {}

/** An event a server pushed (an `event/*` notification), as stored. */
export class StoredEvent extends Schema.Class<StoredEvent>("@skald/domain/rpc/StoredEvent")({
  id: Schema.Number,
  server: Schema.String,
  method: Schema.String,
  params: Schema.Unknown,
  receivedAt: Schema.String,
  status: Schema.Literal("pending", "processed"),
  processedAt: Schema.optionalWith(Schema.String, { exact: true })
}) {}

const NameErrors = Schema.Union(RpcErrors.ServerNotFound, RpcErrors.HostFailure)

/** Every registered server with its status. */
export const List = Rpc.make("Mcp.List", {
  success: Schema.Array(ServerSummary),
  error: RpcErrors.HostFailure
})

/** One server's registration. */
export const Show = Rpc.make("Mcp.Show", {
  payload: { name: Schema.String },
  success: ServerDescription,
  error: NameErrors
})

/** Registers a server (refused when the name is taken, unless `replace`); it connects at once when enabled. */
export const Add = Rpc.make("Mcp.Add", {
  payload: Schema.Struct({
    name: Schema.String,
    transport: Schema.Union(StdioTransport, HttpTransport),
    description: Schema.optionalWith(Schema.String, { exact: true }),
    friendlyName: Schema.optionalWith(Schema.String, { exact: true }),
    enabled: Schema.optionalWith(Schema.Boolean, { exact: true }),
    /** Folders offered to the server as MCP roots: absolute paths (a relative one is the host's, not the client's). */
    roots: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
    replace: Schema.optionalWith(Schema.Boolean, { exact: true })
  }),
  success: Schema.Struct({
    replaced: Schema.Boolean,
    /** The names of the secrets literal values were moved into. */
    storedSecrets: Schema.Array(Schema.String),
    /** Replacing: the secrets moved in for the old registration that the new one no longer uses, removed. */
    droppedSecrets: Schema.Array(Schema.String)
  }),
  error: Schema.Union(RpcErrors.ServerExists, RpcErrors.InvalidServer, RpcErrors.HostFailure)
})

/**
 * `Add`'s payload with the host's rules as refinements (the name, a command, an http(s) URL,
 * variable names), each failure a message for a person: a client decodes what it is about to send
 * with it to show what is wrong before sending. The host checks the same (and more: a root folder
 * that exists) and answers `InvalidServer`; `Add` itself takes any strings, so a client that does
 * not check still gets that typed answer.
 */
export const AddRequest = Schema.Struct({
  ...Add.payloadSchema.fields,
  name: AddName,
  transport: Schema.Union(CheckedStdio, CheckedHttp)
})

/** Switches a server on or off, live. */
export const SetEnabled = Rpc.make("Mcp.SetEnabled", {
  payload: { name: Schema.String, enabled: Schema.Boolean },
  error: NameErrors
})

/** Unregisters a server (and the secrets moved in for it, named in `removedSecrets`) and disconnects it. */
export const Remove = Rpc.make("Mcp.Remove", {
  payload: { name: Schema.String },
  success: Schema.Struct({ removedSecrets: Schema.Array(Schema.String) }),
  error: NameErrors
})

/** Restarts a server now (a failed one is retried at once); a disabled one stays off (`enabled: false`). */
export const Restart = Rpc.make("Mcp.Restart", {
  payload: { name: Schema.String },
  success: Schema.Struct({ enabled: Schema.Boolean }),
  error: NameErrors
})

/** The tools of the connected servers, or of the one named. */
export const Tools = Rpc.make("Mcp.Tools", {
  payload: Schema.Struct({ name: Schema.optionalWith(Schema.String, { exact: true }) }),
  success: Schema.Array(ToolInfo),
  error: RpcErrors.ServerNotFound
})

/**
 * A server's log file as text: the last `tailBytes` of it (default 64 KiB; cut at a line start),
 * then, with `follow`, what is appended, as it comes. Without `follow` the stream ends. The log of
 * a server removed since is still given; a name with neither a registration nor a log is `ServerNotFound`.
 */
export const Logs = Rpc.make("Mcp.Logs", {
  payload: Schema.Struct({
    name: Schema.String,
    tailBytes: Schema.optionalWith(Schema.NonNegativeInt, { exact: true }),
    follow: Schema.optionalWith(Schema.Boolean, { exact: true })
  }),
  success: Schema.String,
  error: NameErrors,
  stream: true
})

/** The events servers pushed, oldest first: all, or only the pending ones; at most `limit`. */
export const Events = Rpc.make("Mcp.Events", {
  payload: Schema.Struct({
    pending: Schema.optionalWith(Schema.Boolean, { exact: true }),
    limit: Schema.optionalWith(Schema.Positive, { exact: true })
  }),
  success: Schema.Array(StoredEvent),
  error: RpcErrors.HostFailure
})

/** The MCP administration RPCs. */
/** A step of `Login`: the authorization URL to open in a browser, then the authorization done. */
export const LoginStep = Schema.Union(
  Schema.TaggedStruct("Open", { url: Schema.String }),
  Schema.TaggedStruct("Authorized", {})
)
export type LoginStep = typeof LoginStep.Type

/**
 * Authorizes a registered HTTP server with OAuth, run by the host: its old tokens are forgotten,
 * the URL to open in a browser on the host's machine comes first (the redirect goes to a listener
 * of the host on 127.0.0.1), then `Authorized` once the tokens are stored (the server reconnects
 * with them at once). Ending the stream gives up the authorization. At most 5 minutes.
 */
export const Login = Rpc.make("Mcp.Login", {
  payload: { name: Schema.String },
  success: LoginStep,
  error: Schema.Union(RpcErrors.ServerNotFound, RpcErrors.AuthorizationFailed, RpcErrors.HostFailure),
  stream: true
})

export class McpRpcs extends RpcGroup.make(List, Show, Add, SetEnabled, Remove, Restart, Tools, Logs, Events, Login) {}
