/**
 * The conformance client: what the official MCP conformance suite runs for each client scenario,
 * as `node build/root/test/conformance/client.js <server-url>` with MCP_CONFORMANCE_SCENARIO set.
 * It is Skald's HTTP client doing what each scenario asks; it exits non-zero on any failure.
 */
import { Elicitation, HttpTransport, McpClient, OAuth } from "@skald/mcp"
import { Effect, Logger, LogLevel } from "effect"

const url = process.argv.at(-1) ?? ""
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ""
/** What some auth scenarios hand the client: credentials, a key, an identity provider's token. */
const context: Record<string, string> = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}")

/** The suite's Client ID Metadata Document URL (what a client that publishes one would use). */
const CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"

/** The OAuth configuration each auth scenario calls for (the same flow `skald mcp login` runs). */
const oauthConfig = (): OAuth.Config => ({
  clientMetadataUrl: CLIENT_METADATA_URL,
  clientId: context.client_id,
  clientSecret: context.client_secret,
  privateKeyPem: context.private_key_pem,
  signingAlgorithm: context.signing_algorithm,
  grant: scenario.startsWith("auth/client-credentials")
    ? "client_credentials"
    : scenario === "auth/cross-app-access-complete-flow"
    ? "cross_app"
    : "authorization_code",
  ...(context.idp_id_token !== undefined
    ? {
      crossApp: {
        idpIdToken: context.idp_id_token,
        idpTokenEndpoint: context.idp_token_endpoint ?? "",
        idpIssuer: context.idp_issuer ?? "",
        idpClientId: context.idp_client_id ?? ""
      }
    }
    : {})
})

// Accept every elicitation with no content: the client fills in the form's defaults (SEP-1034).
const acceptWithDefaults: Elicitation.Handler = { url: true, elicit: () => Effect.succeed({ action: "accept" }) }

const program = Effect.gen(function*() {
  // The suite's authorization server approves at once: the headless authorizer follows its redirect.
  const auth = yield* OAuth.makeSession(
    "conformance",
    url,
    oauthConfig(),
    OAuth.headlessAuthorizer("http://127.0.0.1:0/callback", "conformance")
  )
  const client = yield* HttpTransport.client({ server: "conformance", url, auth }, { callTimeout: "20 seconds" })
  const tools = yield* client.tools
  const call = (name: string, args: McpClient.JsonObject = {}) =>
    client.callTool(name, args).pipe(Effect.tap((o) => Effect.logInfo(`${name}: ${o.result._tag}`)))
  switch (scenario) {
    case "initialize":
      return
    case "tools_call":
      return yield* call("add_numbers", { a: 2, b: 3 })
    case "elicitation-sep1034-client-defaults":
      return yield* call("test_client_elicitation_defaults")
    default:
      // sse-retry and anything new: call every tool with no arguments.
      for (const tool of tools) yield* call(tool.name)
  }
})

program.pipe(
  Effect.scoped,
  Effect.provideService(Elicitation.ElicitationHandler, acceptWithDefaults),
  Effect.provide(OAuth.layerMemoryTokenStore),
  Logger.withMinimumLogLevel(LogLevel.Info),
  Effect.runPromise
).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`conformance client (${scenario}): ${error}\n`)
    process.exit(1)
  }
)
