/**
 * @skald/mcp — an Effect-native MCP client: one JSON-RPC engine, scoped transports, and
 * cancellation, timeouts and process reaping that fall out of fiber interruption.
 *
 * @since 0.1.0
 */

/** Result extraction: a `CallToolResult` becomes Text | Json | Media | Task. */
export * as CallResult from "./CallResult.js"

/** Elicitation: the handler an app provides, form fields, and answer checks. */
export * as Elicitation from "./Elicitation.js"

/** The streamable HTTP transport (and the legacy HTTP+SSE fallback). */
export * as HttpTransport from "./HttpTransport.js"

/** JSON-RPC 2.0 messages: the Schema codec and the fast classifier. */
export * as JsonRpc from "./JsonRpc.js"

/** The engine: initialize, tools, calls, routing and cancellation, over any transport. */
export * as McpClient from "./McpClient.js"

/** Where a connection's events (the notifications outside `notifications/`) go, from initialize on. */
export * as McpEvents from "./McpEvents.js"

/** Diagnostic lines of a connection and the sink they go to. */
export * as McpLog from "./McpLog.js"

/** OAuth 2.1 for HTTP servers: discovery, registration, grants, refresh, step-up (on oauth4webapi). */
export * as OAuth from "./OAuth.js"

/** Checks `structuredContent` against a tool's `outputSchema`. */
export * as OutputSchema from "./OutputSchema.js"

/** Protocol constants: the version, limits and default timeouts. */
export * as Protocol from "./Protocol.js"

/** Roots: the folders an app lets a server work in, and how the client tells it of changes. */
export * as Roots from "./Roots.js"

/** Sampling: the handler an app provides to answer a server's `sampling/createMessage` with its model. */
export * as Sampling from "./Sampling.js"

/** The stdio transport: a child process as a scoped resource. */
export * as StdioTransport from "./StdioTransport.js"

/** The transport contract. */
export * as Transport from "./Transport.js"
