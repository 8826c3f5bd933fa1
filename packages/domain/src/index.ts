/**
 * @skald/domain — browser-safe Schemas shared by every Skald package.
 *
 * @since 0.1.0
 */

/** File extensions for media types and back. */
export * as MediaType from "./MediaType.js"

/** Typed errors of MCP connections and calls. */
export * as McpError from "./McpError.js"

/** What a `tools/call` produced: Text | Json | Media | Task. */
export * as McpCallResult from "./McpCallResult.js"

/** A tool as an MCP server describes it, and the one mapping from its wire shape. */
export * as McpTool from "./McpTool.js"

/** Resources, resource templates and what `resources/read` returns. */
export * as McpResource from "./McpResource.js"

/** Prompts, what `prompts/get` returns, and completions. */
export * as McpPrompt from "./McpPrompt.js"

/** Stdio and HTTP server configs (`sse` decodes as `http`). */
export * as ServerConfig from "./ServerConfig.js"

/** Validated server names. */
export * as ServerName from "./ServerName.js"

/** `mcp__<server>__<tool>` formatting and its total parser. */
export * as ToolName from "./ToolName.js"

/** The host-side Text | Json result with `toWire` and `kind`. */
export * as ToolResult from "./ToolResult.js"

/** A registered server (its stored entry) and its status summary. */
export * as McpServerEntry from "./McpServerEntry.js"

/** What an agent turn reports: text deltas, tool calls, and how the turn ended. */
export * as TurnEvent from "./TurnEvent.js"

/** The inbox's items (approvals, elicitations, notifications), answers, outcomes, changes and errors. */
export * as InboxItem from "./InboxItem.js"

/** The path, serialization and WebSocket subprotocols both ends of the host's RPC share. */
export * as RpcProtocol from "./rpc/RpcProtocol.js"

/** The failures an RPC client can see. */
export * as RpcErrors from "./rpc/RpcErrors.js"

/** The agent's RPCs: send, stop, attach, sessions. */
export * as AgentRpcs from "./rpc/AgentRpcs.js"

/** MCP server administration RPCs. */
export * as McpRpcs from "./rpc/McpRpcs.js"

/** The host's RPCs: version and settings. */
export * as HostRpcs from "./rpc/HostRpcs.js"

/** The inbox's RPCs: watch, list, resolve. */
export * as InboxRpcs from "./rpc/InboxRpcs.js"

/** The TIC agent's RPCs: one tick now. */
export * as TicRpcs from "./rpc/TicRpcs.js"
