/**
 * How to reach an MCP server: a local process (stdio) or a remote URL (streamable HTTP).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * The folders the server is offered as MCP roots (absolute paths; the client sends them as
 * `file://` URIs). Absent or empty: no roots are declared.
 */
const roots = Schema.optionalWith(Schema.Array(Schema.String), { exact: true })

/** A server started as a child process speaking newline-delimited JSON-RPC on stdin/stdout. */
export class StdioServerConfig extends Schema.TaggedClass<StdioServerConfig>("@skald/domain/StdioServerConfig")(
  "stdio",
  {
    command: Schema.NonEmptyString,
    args: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
    /** Extra environment variables, merged over the parent's. Values may be `${VAR}` templates. */
    env: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { default: () => ({}) }),
    roots
  }
) {}

/** The JWS algorithms a `private_key_jwt` client key may sign with. */
export const OAuthSigningAlgorithm = Schema.Literal(
  "ES256",
  "ES384",
  "ES512",
  "PS256",
  "PS384",
  "PS512",
  "RS256",
  "RS384",
  "RS512"
)
export type OAuthSigningAlgorithm = typeof OAuthSigningAlgorithm.Type

/**
 * How an HTTP server's OAuth client is set up, when not by discovery and registration alone: a
 * pre-registered client (its id; its secret or its `private_key_jwt` key as a `${VAR}` reference,
 * never the value), a Client ID Metadata Document's URL (used where the authorization server
 * supports them, instead of registering), the scope to ask for, and the grant
 * (`client_credentials` for a machine client: no user, no login).
 */
export const HttpOAuthConfig = Schema.Struct({
  clientId: Schema.optionalWith(Schema.NonEmptyString, { exact: true }),
  /** A `${VAR}` template (the value lives in the secret store). */
  clientSecret: Schema.optionalWith(Schema.String, { exact: true }),
  /** The `private_key_jwt` key (a PKCS#8 PEM) as a `${VAR}` template (the value lives in the secret store). */
  privateKey: Schema.optionalWith(Schema.String, { exact: true }),
  /** The key's algorithm (default ES256). */
  signingAlgorithm: Schema.optionalWith(OAuthSigningAlgorithm, { exact: true }),
  /** The URL of this client's Client ID Metadata Document: its client id where the server supports them. */
  clientMetadataUrl: Schema.optionalWith(Schema.NonEmptyString, { exact: true }),
  scope: Schema.optionalWith(Schema.NonEmptyString, { exact: true }),
  grant: Schema.optionalWith(Schema.Literal("authorization_code", "client_credentials"), { exact: true })
})
export type HttpOAuthConfig = typeof HttpOAuthConfig.Type

/** A remote server speaking streamable HTTP. */
export class HttpServerConfig extends Schema.TaggedClass<HttpServerConfig>("@skald/domain/HttpServerConfig")(
  "http",
  {
    url: Schema.NonEmptyString,
    /** Sent as `Authorization: Bearer <apiKey>`. May be a `${VAR}` template. */
    apiKey: Schema.optionalWith(Schema.String, { exact: true }),
    roots,
    /** OAuth client settings (used only without an api key). */
    oauth: Schema.optionalWith(HttpOAuthConfig, { exact: true })
  }
) {}

/** The transport names accepted in configs; `sse` is the seed's alias of `http`. */
export const TransportName = Schema.Literal("stdio", "http", "sse")

const StdioWire = Schema.Struct({
  transport: Schema.Literal("stdio"),
  command: Schema.NonEmptyString,
  args: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
  env: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { exact: true }),
  roots
})

const HttpWire = Schema.Struct({
  transport: Schema.Literal("http", "sse"),
  url: Schema.NonEmptyString,
  apiKey: Schema.optionalWith(Schema.String, { exact: true }),
  roots,
  oauth: Schema.optionalWith(HttpOAuthConfig, { exact: true })
})

/**
 * A server config in its stored JSON form, `{ "transport": "stdio" | "http" | "sse", … }`.
 * `sse` decodes as `http`; encoding always writes `http`.
 */
export const ServerConfig = Schema.Union(
  Schema.transform(StdioWire, Schema.typeSchema(StdioServerConfig), {
    strict: true,
    decode: (w) =>
      StdioServerConfig.make({
        command: w.command,
        args: w.args ?? [],
        env: w.env ?? {},
        ...(w.roots === undefined ? {} : { roots: w.roots })
      }),
    encode: (c) => ({
      transport: "stdio" as const,
      command: c.command,
      args: c.args,
      env: c.env,
      ...(c.roots === undefined ? {} : { roots: c.roots })
    })
  }),
  Schema.transform(HttpWire, Schema.typeSchema(HttpServerConfig), {
    strict: true,
    decode: (w) =>
      HttpServerConfig.make({
        url: w.url,
        ...(w.apiKey === undefined ? {} : { apiKey: w.apiKey }),
        ...(w.roots === undefined ? {} : { roots: w.roots }),
        ...(w.oauth === undefined ? {} : { oauth: w.oauth })
      }),
    encode: (c) => ({
      transport: "http" as const,
      url: c.url,
      ...(c.apiKey === undefined ? {} : { apiKey: c.apiKey }),
      ...(c.roots === undefined ? {} : { roots: c.roots }),
      ...(c.oauth === undefined ? {} : { oauth: c.oauth })
    })
  })
)

/** A decoded server config. */
export type ServerConfig = StdioServerConfig | HttpServerConfig
