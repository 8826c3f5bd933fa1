/**
 * `agent-tokens` section of `npm run bench`: what lazy MCP tool loading costs the model, counted
 * with gpt-tokenizer (o200k) over the request bodies the model stand-in receives from the real
 * turn loop (OpenAI-compatible provider), with 10 registered servers offering ~300 tools
 * (server-everything, the example servers of scripts/, and SDK servers of realistic definitions:
 * see CATALOG). Printed: the MCP overhead with no grants (the list block
 * plus the `activate_tools` definition) per listed server and for the tool, the MCP definitions
 * offered (0), the overhead with one server activated and how much of its growth is that server's
 * definitions, and the all-tools-always figure beside it as a ratio. Targets (issue 20): ≤ 15
 * tokens per listed server, ≤ 120 for the tool, 0 definitions.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import { HostServices, McpManager, Paths } from "@skald/server"
import { Agent } from "@skald/server/agent/Agent"
import { ChatStore } from "@skald/server/agent/ChatStore"
import * as OpenAiCompatible from "@skald/server/agent/llm/OpenAiCompatible"
import * as Approvals from "@skald/server/inbox/Approvals"
import { Chunk, Context, Effect, Layer, Stream } from "effect"
import { encode } from "gpt-tokenizer/encoding/o200k_base"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as ModelStandin from "../test/fixtures/model-standin.js"

// The servers are .mjs sources, not compiled: from build/root/bench/ back to bench/servers/.
const serversDir = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "servers").replace(
  /build[/\\]root[/\\]bench[/\\]servers$/,
  Path.join("bench", "servers")
)
const PROMPT = "You are the bench agent."
const tokens = (text: string) => encode(text).length
const definitionTokens = (tools: ReadonlyArray<unknown>) =>
  tools.reduce<number>((n, t) => n + tokens(JSON.stringify(t)), 0)

type Tool = { function: { name: string } }

/** The repository root (this file runs as build/root/bench/agent-tokens.js, or from bench/ under tsx). */
const root = Path.resolve(
  Path.dirname(fileURLToPath(import.meta.url)),
  import.meta.url.includes("/build/") ? "../../.." : ".."
)
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
const example = (script: string) => ({ args: ["--import", tsxLoader, Path.join(root, "scripts", script)], env: {} })

/**
 * Ten servers as a user would register them, ~300 tools: server-everything and the five example
 * servers (scripts/: their real tool definitions, 52 tools in all), and four official-SDK servers
 * of realistic definitions (bench/servers/many-tools-server.mjs) making up the rest.
 */
const FILLER_TOOLS = 62
const CATALOG: ReadonlyArray<{
  readonly name: string
  readonly description: string
  readonly args: ReadonlyArray<string>
  readonly env: Record<string, string>
}> = [
  {
    name: "everything",
    description: "The MCP reference server: every protocol feature",
    args: [Path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"],
    env: {}
  },
  { name: "demo", description: "Offline demo: media, tasks and structured results", ...example("demo-server.ts") },
  { name: "elicit", description: "Asks the user for input while a tool runs", ...example("elicitation-demo.ts") },
  { name: "gcal", description: "Google Calendar events and free slots", ...example("gcal-server.ts") },
  { name: "ssh", description: "Run commands on saved SSH hosts", ...example("ssh-server.ts") },
  { name: "weather", description: "Current weather and forecasts", ...example("weather-server.ts") },
  ...["github", "slack", "notion", "jira"].map((name, i) => ({
    name,
    description: [
      "Repositories, issues and pull requests",
      "Channels, messages and threads",
      "Pages and databases in Notion",
      "Jira issues, sprints and boards"
    ][i]!,
    args: [Path.join(serversDir, "many-tools-server.mjs")],
    env: { BENCH_SERVER_NAME: name, BENCH_TOOLS: String(FILLER_TOOLS) }
  }))
]

export const runAgentTokensSection = () =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-bench-agent-"))
    const agentsDir = Path.join(home, "agents")
    Fs.mkdirSync(Path.join(agentsDir, "bench"), { recursive: true })
    Fs.writeFileSync(Path.join(agentsDir, "bench", "AGENT.md"), `${PROMPT}\n\n<!-- MCP_LIST -->`)
    const hostLayer = HostServices.layer(Paths.Paths.Test(home))
    const managerLayer = Layer.provideMerge(
      McpManager.McpManager.Default({ startTimeout: "60 seconds", callTimeout: "60 seconds" }),
      hostLayer
    )
    const context = yield* Layer.build(managerLayer)
    const manager = Context.get(context, McpManager.McpManager)
    const names = CATALOG.map((entry) => entry.name)
    for (const entry of CATALOG) {
      yield* manager.register(McpServerEntry.McpServerEntry.make({
        name: ServerName.make(entry.name),
        config: ServerConfig.StdioServerConfig.make({
          command: process.execPath,
          args: [...entry.args],
          env: entry.env
        }),
        enabled: true,
        description: entry.description
      }))
    }
    // Every server connected (each offers at least one tool), then the count is what they offer.
    const connected = yield* manager.tools.pipe(
      Effect.delay("200 millis"),
      Effect.repeat({ until: (t) => new Set(t.map((q) => q.server)).size === names.length }),
      Effect.timeout("120 seconds")
    )
    const toolCount = connected.length
    const standin = yield* ModelStandin.start([
      ModelStandin.text("ok"), // lazy, no grants
      ModelStandin.toolCalls([{ id: "a", name: "activate_tools", arguments: { groups: [names[0]] } }]),
      ModelStandin.text("ok"), // lazy, one server granted
      ModelStandin.text("ok") // every tool always
    ])
    const agentOf = (options: Parameters<typeof Agent.Default>[0]) =>
      Layer.build(
        Agent.Default(options).pipe(
          Layer.provideMerge(ChatStore.Default),
          Layer.provideMerge(Approvals.unattended("allow")),
          Layer.provide(
            Layer.effect(
              LanguageModel.LanguageModel,
              OpenAiCompatible.make({ baseUrl: standin.url, model: "standin" })
            ).pipe(Layer.provide(NodeHttpClient.dispatcherLayer))
          ),
          Layer.provide(Layer.succeedContext(context))
        )
      ).pipe(Effect.map((c) => Context.get(c, Agent)))
    const turn = (agent: Agent, message: string) =>
      Stream.runCollect(agent.run({ agent: "bench", message })).pipe(Effect.map(Chunk.toArray))
    const lazy = yield* agentOf({ agentsDir, alwaysOffered: [] })
    yield* turn(lazy, "nothing needed")
    yield* turn(lazy, "use one server")
    const eager = yield* agentOf({ agentsDir, alwaysOffered: "all" })
    yield* turn(eager, "everything")

    const [none, , one, all] = standin.requests
    const overhead = (request: ModelStandin.RecordedRequest) => {
      const tools = (request.body.tools ?? []) as Array<Tool>
      const mcp = tools.filter((t) => t.function.name.startsWith("mcp__"))
      const activate = tools.filter((t) => t.function.name === "activate_tools")
      const block = tokens(String(request.body.messages[0].content)) - tokens(PROMPT)
      return { block, activate: definitionTokens(activate), mcpDefs: mcp.length, mcpTokens: definitionTokens(mcp) }
    }
    const n = overhead(none!)
    const o = overhead(one!)
    const a = overhead(all!)
    const noGrants = n.block + n.activate
    const oneServer = o.block + o.activate + o.mcpTokens
    const allTools = a.mcpTokens
    const rows: Array<[string, string]> = [
      ["servers registered / tools", `${names.length} / ${toolCount}`],
      [
        "no grants: list block (tokens)",
        `${n.block} (${(n.block / names.length).toFixed(1)} per listed server; target ≤ 15)`
      ],
      ["no grants: activate_tools definition", `${n.activate} (target ≤ 120)`],
      ["no grants: MCP tool definitions offered", `${n.mcpDefs} (target 0)`],
      ["no grants: MCP overhead", `${noGrants}`],
      ["one server: MCP definitions offered", `${o.mcpDefs} (${o.mcpTokens} tokens)`],
      [
        "one server: overhead growth",
        `${oneServer - noGrants} (its definitions ${o.mcpTokens}; the list block changed by ${o.block - n.block})`
      ],
      ["all tools always: MCP definitions", `${a.mcpDefs} (${allTools} tokens)`],
      ["ratio all-tools / no grants", `${(allTools / noGrants).toFixed(1)}×`],
      ["ratio all-tools / one server", `${(allTools / oneServer).toFixed(1)}×`]
    ]
    process.stdout.write(`\nagent tokens (o200k, request bodies seen by the stand-in)\n`)
    for (const [label, value] of rows) process.stdout.write(`  ${label.padEnd(42)} ${value}\n`)
    Fs.rmSync(home, { recursive: true, force: true })
  })))
