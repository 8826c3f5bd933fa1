/**
 * How the `skald` command ends: the exit status contract of DESIGN §5.
 *
 * @since 0.1.0
 */
import * as ServerName from "@skald/domain/ServerName"
import * as Data from "effect/Data"

/** Exit statuses. */
export const ExitStatus = {
  Ok: 0,
  /** The tool answered `isError`. */
  ToolError: 1,
  /** Usage, protocol, transport, timeout, unknown tool, … */
  Failure: 2,
  /** Interrupted by Ctrl-C (SIGINT). */
  Interrupted: 130
} as const

/** A usage error: what was wrong with the command line and how to fix it. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/** Ends the command with this status (after its output was printed). */
export class ExitWith extends Data.TaggedError("ExitWith")<{ readonly status: number }> {}

const field = (error: object, key: string): string => String((error as Record<string, unknown>)[key])

/**
 * What to run about an OAuth failure of `server`: `skald mcp login` for a registered server; a
 * server of `--http URL` (named by its host, never a valid server name) keeps no authorization.
 */
const loginHint = (server: string, again: "again " | ""): string =>
  ServerName.isValid(server)
    ? `skald: authorize it ${again}with \`skald mcp login ${server}\``
    : "skald: `--http URL` keeps no authorization: run the command again to authorize, or register the server " +
      "(`skald mcp add NAME --http URL`) and authorize it once with `skald mcp login NAME`"

/**
 * What to run when the authorization server refused a registered server's configured OAuth
 * client: its secret (or id) must be corrected; a login does not help.
 */
const clientHint = (server: string): string =>
  ServerName.isValid(server)
    ? `skald: \`skald mcp show ${server}\` shows the client id and where its secret comes from; store the right ` +
      "secret with `skald secret set VAR` (a ${VAR} reference), or give both again with " +
      `\`skald mcp add ${server} --replace … --oauth-client-id ID --oauth-client-secret @-\``
    : "skald: check the OAuth client id and secret"

/**
 * The command line's hint for a host or domain error (their messages never name a flag or a
 * command; the CLI says which of its own to use).
 */
export const hintFor = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null || !("_tag" in error)) return undefined
  switch (error._tag) {
    case "ServerAlreadyRegistered":
      return `skald: \`skald mcp add ${field(error, "name")} --replace …\` replaces it; \`skald mcp show ${
        field(error, "name")
      }\` shows it`
    case "InvalidServerEntry":
      return field(error, "reason").includes("carries a credential")
        ? "skald: pass the key with --api-key KEY (moved into the secret store) or --api-key-env VAR"
        : undefined
    case "ServerDisabled":
      return `skald: enable it with \`skald mcp enable ${field(error, "name")}\``
    case "UnknownSecretReference":
      return `skald: store it with \`skald secret set ${field(error, "variable")}\` (the value is read from stdin)`
    case "UnknownServer":
      return "skald: `skald mcp list` shows the registered servers"
    case "OAuthRefreshFailed":
      return loginHint(field(error, "server"), "again ")
    case "OAuthError":
      return (error as { readonly clientRefused?: unknown }).clientRefused === true
        ? clientHint(field(error, "server"))
        : loginHint(field(error, "server"), "again ")
    case "OAuthAuthorizationRequired":
      return loginHint(field(error, "server"), "")
    case "ServerNotConnected":
      return `skald: \`skald mcp list\` shows its status; \`skald mcp logs ${field(error, "server")}\` its log`
    case "StartTimeout":
      return "skald: the start timeout is SKALD_MCP_START_TIMEOUT (seconds, default 120)"
    case "ListenFailed":
      return "skald: set SKALD_PORT (0 picks a free port) or SKALD_HOST to listen elsewhere"
    case "NonLoopbackBind":
      return "skald: give the token with --token or SKALD_TOKEN (clients present the same one); `skald serve` " +
        "listens on SKALD_HOST (default 127.0.0.1)"
    case "McpHttpError": {
      // An OAuth server's login expired, is missing or failed: log in (again); no api key is involved.
      const oauth = (error as { readonly oauth?: unknown }).oauth
      if (oauth === "client") return clientHint(field(error, "server"))
      if (oauth !== undefined) return loginHint(field(error, "server"), oauth === "required" ? "" : "again ")
      const status = (error as { readonly status?: unknown }).status
      return status === 401 || status === 403
        ? "skald: pass the api key with --api-key-env VAR; a registered server is given a new one with " +
          "`skald mcp add NAME --replace --http URL --api-key-env VAR` (or --api-key KEY)"
        : undefined
    }
    case "McpTimeout":
      return field(error, "method") === "initialize"
        ? "skald: the start timeout is SKALD_MCP_START_TIMEOUT (seconds, default 120)"
        : "skald: set the timeout with --timeout S or SKALD_MCP_CALL_TIMEOUT (seconds, default 120)"
    default:
      return undefined
  }
}

/**
 * The hint for a server whose status records a failure (its `errorCause`), as a line naming the
 * server; `undefined` when the command line has none for that kind of error.
 */
export const statusHint = (summary: { readonly name: string; readonly errorCause?: unknown }): string | undefined => {
  const hint = summary.errorCause === undefined ? undefined : hintFor(summary.errorCause)
  return hint === undefined ? undefined : `skald: '${summary.name}': ${hint.replace(/^skald: /, "")}`
}
