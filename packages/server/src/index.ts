/**
 * @skald/server — the Skald host and the `skald` command line.
 *
 * @since 0.1.0
 */

/** The `skald` command line. */
export * as Cli from "./cli/Cli.js"

/** Where the host keeps its files (`SKALD_HOME` and the per-folder overrides). */
export * as Paths from "./host/Paths.js"

/** The host's database, repositories, secret store, server logs, event recorder and registration, from one home. */
export * as HostServices from "./host/HostServices.js"

/** The server registry (`mcp_servers`). */
export * as McpServerRepo from "./host/McpServerRepo.js"

/** Runtime statuses and the host heartbeat. */
export * as StatusRepo from "./host/StatusRepo.js"

/** Secret names and `${NAME}` references: validation, and the names moved secrets get (`MCP_<SERVER>__<FIELD>`). */
export * as SecretNames from "./host/SecretNames.js"

/** `${NAME}` secrets: the store and their resolution. */
export * as SecretStore from "./host/SecretStore.js"

/** Redacting a server's secrets, in every form they take in output. */
export * as Redactor from "./host/Redactor.js"

/** The secrets moved into the store for a server: naming migration and removal with the server. */
export * as ServerSecrets from "./host/ServerSecrets.js"

/** The reconciling MCP manager. */
export * as McpManager from "./host/McpManager.js"

/** The environment the host gives its stdio servers (not its own). */
export * as ServerEnvironment from "./host/ServerEnvironment.js"

/** Registered servers with their status, from any process. */
export * as ServerList from "./host/ServerList.js"

/** Host errors. */
export * as HostError from "./host/HostError.js"

/** Per-server log files. */
export * as ServerLogs from "./host/ServerLogs.js"

/** Push events: the `mcp_events` table. */
export * as EventRepo from "./host/EventRepo.js"

/** Push events: the recorder that writes them. */
export * as EventRecorder from "./host/EventRecorder.js"

/** The media store: call results to tool results, media saved under `mcp_media/`. */
export * as MediaStore from "./host/MediaStore.js"

/** The host's HTTP endpoints (media files). */
export * as HttpEndpoints from "./host/HttpEndpoints.js"

/** Registering servers: requests validated, literal secrets moved to the store. */
export * as Registration from "./host/Registration.js"

/** Importing other hosts' MCP configs. */
export * as ConfigImport from "./host/ConfigImport.js"

/** The first run's demo server. */
export * as FirstRun from "./host/FirstRun.js"

/** The home's stored settings (`settings`). */
export * as SettingsRepo from "./host/SettingsRepo.js"

/** Which model the agent talks to: `SKALD_LLM_*` over the stored settings. */
export * as ModelSettings from "./agent/llm/ModelSettings.js"

/** The inbox: pending approvals, elicitations and notifications; answers; the watch stream. */
export * as Inbox from "./inbox/Inbox.js"

/** The inbox's outcome log (`inbox_items`): how each item ended, never what was answered. */
export * as InboxLog from "./inbox/InboxLog.js"

/** The host servers' elicitations, posted to the inbox. */
export * as HostedElicitation from "./inbox/HostedElicitation.js"

/** The host servers' sampling requests: approved in the inbox, answered by the host's model. */
export * as HostSampling from "./sampling/HostSampling.js"

/** Where the manager gets the answerer of its servers' sampling requests. */
export * as SamplingSource from "./host/SamplingSource.js"
