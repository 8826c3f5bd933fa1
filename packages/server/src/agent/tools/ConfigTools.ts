/**
 * The `config` tool group (lazy MCP tool loading, docs/agent.md): `register_mcp`, `delete_mcp`,
 * `toggle_item`, `list_items`, `set_secret`, `list_secrets`. Hidden until
 * `activate_tools(["config"])`; every call of one passes the approval gate like any tool's
 * (inbox/Approvals.ts): with no rule, `list_items` and `list_secrets` (marked read-only) run and
 * the others ask the person (docs/inbox.md, *Approvals*). Every rule lives in the services
 * they call: `register_mcp` goes through `Registration` (literal secrets moved to the store) and
 * then connects the server at once; `toggle_item` and `delete_mcp` are live (the manager
 * reconciles). A secret's value never comes back to the model: `set_secret` answers with the name,
 * `list_secrets` gives names only.
 *
 * @since 0.1.0
 */
import { ServerName } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { McpManager } from "../../host/McpManager.js"
import { Registration, type Request as RegistrationRequest } from "../../host/Registration.js"
import { SecretStore } from "../../host/SecretStore.js"
import { decode, type Definition, ToolInputError } from "./ToolInput.js"

const str = (description: string) => ({ type: "string", description })

/** The group's definitions. */
export const definitions: ReadonlyArray<Definition> = [
  {
    name: "register_mcp",
    description: "Register an MCP server and connect it now.",
    inputSchema: {
      type: "object",
      properties: {
        name: str("Unique name for this MCP server (used to reference it in tool calls)"),
        transport: { type: "string", enum: ["stdio", "http", "sse"] },
        command: str("stdio only: executable to spawn"),
        args: { type: "array", items: { type: "string" }, description: "stdio only: command-line arguments" },
        env: {
          type: "object",
          additionalProperties: { type: "string" },
          description: "stdio only: extra environment variables (values are kept in the secret store)"
        },
        url: str("http/sse only: base URL of the remote server"),
        api_key: str("http/sse only: API key (sent as Authorization: Bearer <key>)"),
        description: str("Short description of what the server provides"),
        friendly_name: str("Human-readable display name")
      },
      required: ["name", "transport"],
      additionalProperties: false
    }
  },
  {
    name: "delete_mcp",
    description: "Delete an MCP server and its configuration (irreversible; to turn it off use toggle_item).",
    inputSchema: {
      type: "object",
      properties: { name: { type: "string" } },
      required: ["name"],
      additionalProperties: false
    }
  },
  {
    name: "toggle_item",
    description: "Enable or disable an item (kind \"mcp\": an MCP server), live.",
    inputSchema: {
      type: "object",
      properties: { kind: { type: "string", enum: ["mcp"] }, id: { type: "string" }, enabled: { type: "boolean" } },
      required: ["kind", "id", "enabled"],
      additionalProperties: false
    }
  },
  {
    name: "list_items",
    description: "List items (type \"mcp\": the MCP servers with their status, description and tool count).",
    inputSchema: {
      type: "object",
      properties: { type: { type: "string", enum: ["mcp"] } },
      required: ["type"],
      additionalProperties: false
    },
    annotations: { readOnlyHint: true }
  },
  {
    name: "set_secret",
    description: "Store a secret; reference it as ${NAME} in a server's env or api_key.",
    inputSchema: {
      type: "object",
      properties: { name: str("Letters, digits and '_', not starting with a digit"), value: { type: "string" } },
      required: ["name", "value"],
      additionalProperties: false
    }
  },
  {
    name: "list_secrets",
    description: "List the names of the stored secrets (never their values).",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    annotations: { readOnlyHint: true }
  }
]

/** The group's tool names. */
export const NAMES: ReadonlySet<string> = new Set(definitions.map((d) => d.name))

const RegisterArgs = Schema.Struct({
  name: Schema.String,
  transport: Schema.Literal("stdio", "http", "sse"),
  command: Schema.optional(Schema.String),
  args: Schema.optional(Schema.Array(Schema.String)),
  env: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  url: Schema.optional(Schema.String),
  api_key: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  friendly_name: Schema.optional(Schema.String)
})
const NameArgs = Schema.Struct({ name: Schema.String })
const ToggleArgs = Schema.Struct({ kind: Schema.Literal("mcp"), id: Schema.String, enabled: Schema.Boolean })
const ListArgs = Schema.Struct({ type: Schema.Literal("mcp") })
const SecretArgs = Schema.Struct({ name: Schema.String, value: Schema.String })
const NoArgs = Schema.Struct({})

const serverName = (tool: string, name: string) =>
  ServerName.isValid(name)
    ? Effect.succeed(ServerName.make(name))
    : Effect.fail(new ToolInputError({ tool, reason: `no MCP server can be named ${JSON.stringify(name)}` }))

const registerMcp = Effect.fn("register_mcp")(function*(args: unknown) {
  const a = yield* decode("register_mcp", RegisterArgs, args)
  const wrong = (fields: ReadonlyArray<keyof typeof a>) => fields.filter((f) => a[f] !== undefined)
  let transport: RegistrationRequest["transport"]
  if (a.transport === "stdio") {
    const extra = wrong(["url", "api_key"])
    if (a.command === undefined || extra.length > 0) {
      return yield* new ToolInputError({
        tool: "register_mcp",
        reason: a.command === undefined
          ? "a stdio server needs `command`"
          : `${extra.join(", ")} apply to http/sse servers, not stdio`
      })
    }
    // Every env value the model gives is kept in the secret store (the registry keeps references).
    transport = { _tag: "stdio", command: a.command, args: a.args ?? [], env: {}, secretEnv: a.env ?? {} }
  } else {
    const extra = wrong(["command", "args", "env"])
    if (a.url === undefined || extra.length > 0) {
      return yield* new ToolInputError({
        tool: "register_mcp",
        reason: a.url === undefined
          ? `an ${a.transport} server needs \`url\``
          : `${extra.join(", ")} apply to stdio servers, not ${a.transport}`
      })
    }
    // `sse`: the http transport falls back to the legacy HTTP+SSE one (docs/transports.md).
    transport = { _tag: "http", url: a.url, apiKey: a.api_key }
  }
  const registered = yield* (yield* Registration).register({
    name: a.name,
    transport,
    description: a.description,
    friendlyName: a.friendly_name
  })
  // Connect it now (the manager would also see the row on its next reconciliation).
  yield* (yield* McpManager).restart(registered.entry.name)
  return `Registered the MCP server ${registered.entry.name}; it is connecting now. ` +
    `Call activate_tools(["${registered.entry.name}"]) to use its tools.`
})

const deleteMcp = Effect.fn("delete_mcp")(function*(args: unknown) {
  const { name } = yield* decode("delete_mcp", NameArgs, args)
  yield* (yield* McpManager).unregister(yield* serverName("delete_mcp", name))
  return `Deleted the MCP server ${name}.`
})

const toggleItem = Effect.fn("toggle_item")(function*(args: unknown) {
  const a = yield* decode("toggle_item", ToggleArgs, args)
  yield* (yield* McpManager).setEnabled(yield* serverName("toggle_item", a.id), a.enabled)
  return `The MCP server ${a.id} is ${a.enabled ? "enabled: it is connecting now" : "disabled: it is stopped"}.`
})

const listItems = Effect.fn("list_items")(function*(args: unknown) {
  yield* decode("list_items", ListArgs, args)
  const servers = yield* (yield* McpManager).list
  return JSON.stringify(servers.map((s) => ({
    name: s.name,
    status: s.state,
    enabled: s.enabled,
    ...(s.description === undefined ? {} : { description: s.description }),
    ...(s.friendlyName === undefined ? {} : { friendly_name: s.friendlyName }),
    tool_count: s.toolCount ?? 0,
    ...(s.error === undefined ? {} : { error: s.error })
  })))
})

const setSecret = Effect.fn("set_secret")(function*(args: unknown) {
  const a = yield* decode("set_secret", SecretArgs, args).pipe(
    // The decoding error could quote the value: say only what is wrong.
    Effect.mapError(() =>
      new ToolInputError({ tool: "set_secret", reason: "give `name` and `value`, both strings, and nothing else" })
    )
  )
  yield* (yield* SecretStore).set(a.name, Redacted.make(a.value))
  return `Stored the secret ${a.name}. Reference it as \${${a.name}}.`
})

const listSecrets = Effect.fn("list_secrets")(function*(args: unknown) {
  yield* decode("list_secrets", NoArgs, args)
  const names = yield* (yield* SecretStore).list
  return names.length === 0 ? "No secrets are stored." : `Stored secrets: ${names.join(", ")}.`
})

const handlers = {
  register_mcp: registerMcp,
  delete_mcp: deleteMcp,
  toggle_item: toggleItem,
  list_items: listItems,
  set_secret: setSecret,
  list_secrets: listSecrets
} as const

/** Runs a call of the group's tool `name`; its answer is the text the model reads. */
export const run = (name: string, args: unknown) =>
  Object.hasOwn(handlers, name)
    ? handlers[name as keyof typeof handlers](args) as ReturnType<typeof handlers[keyof typeof handlers]>
    : Effect.fail(new ToolInputError({ tool: name, reason: "it is not a config tool" }))
