/**
 * Lazy MCP tool loading seen in the requests the model receives: the turn loop through the real
 * OpenAI-compatible provider against the model stand-in (a loopback chat-completions server that
 * records every request body), with SDK echo servers over stdio through a real manager on a temp
 * home. Round 1 offers `activate_tools` and no `mcp__*` tool; after an activation, the next round
 * offers exactly that server's tools; root grants survive a restart; a sub-agent starts at zero,
 * activates its own, and its grants vanish when it ends while the parent's stay.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { McpManager } from "@skald/server"
import { Agent } from "@skald/server/agent/Agent"
import { ChatStore } from "@skald/server/agent/ChatStore"
import * as Grants from "@skald/server/agent/Grants"
import * as OpenAiCompatible from "@skald/server/agent/llm/OpenAiCompatible"
import * as Approvals from "@skald/server/inbox/Approvals"
import { Chunk, Context, Effect, Exit, Layer, Option, Scope, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fixture } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { fixtureEntry, startManager, tempHome, waitForState } from "./host-support.js"
import { tempDir } from "./support.js"

const toolNames = (request: ModelStandin.RecordedRequest): Array<string> =>
  ((request.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name).sort()
const systemOf = (request: ModelStandin.RecordedRequest): string => request.body.messages[0].content as string
const mcpOf = (names: ReadonlyArray<string>) => names.filter((n) => n.startsWith("mcp__"))

/**
 * A host (manager, chat store, grants, the loop over the stand-in) on `home`, living in `scope`:
 * the echo servers `alpha` and `beta` are registered on a fresh home (`register`), connected, and
 * their tools' names read from the manager.
 */
const host = (
  home: string,
  agentsDir: string,
  baseUrl: string,
  scope: Scope.Scope,
  options: {
    readonly register?: boolean
    readonly wrap?: (manager: McpManager.McpManager) => McpManager.McpManager
  } = {}
) =>
  Effect.gen(function*() {
    const { register = true, wrap = (manager) => manager } = options
    const started = yield* Scope.extend(startManager(home), scope)
    const manager = started.manager
    if (register) {
      yield* manager.register(fixtureEntry("alpha", "echo"))
      yield* manager.register(fixtureEntry("beta", "echo"))
    }
    const context = Context.add(started.context, McpManager.McpManager, wrap(manager))
    yield* waitForState(manager, "alpha", "connected")
    yield* waitForState(manager, "beta", "connected")
    // A connected server's tools are listed (the manager lists them before it says connected).
    const namesOf = (server: string) =>
      Effect.map(manager.toolsFor([server]), (tools) => tools.map((t) => t.name).sort())
    const alphaTools = yield* namesOf("alpha")
    const betaTools = yield* namesOf("beta")
    assert.isNotEmpty(alphaTools)
    assert.isNotEmpty(betaTools)
    const model = Layer.effect(
      LanguageModel.LanguageModel,
      OpenAiCompatible.make({ baseUrl, model: "standin", retryBaseDelay: "1 millis" })
    ).pipe(Layer.provide(NodeHttpClient.dispatcherLayer))
    const layer = Agent.Default({ agentsDir, alwaysOffered: [] }).pipe(
      Layer.provideMerge(ChatStore.Default),
      Layer.provideMerge(Grants.Grants.Default),
      Layer.provideMerge(Approvals.unattended("allow")),
      Layer.provide(model),
      Layer.provide(Layer.succeedContext(context))
    )
    const built = yield* Layer.buildWithScope(layer, scope)
    return {
      agent: Context.get(built, Agent),
      grants: Context.get(built, Grants.Grants),
      store: Context.get(built, ChatStore),
      manager,
      alphaTools,
      betaTools
    }
  })

const run = (agent: Agent, input: Parameters<Agent["run"]>[0]) =>
  Stream.runCollect(agent.run(input)).pipe(Effect.map(Chunk.toArray))

/** A fresh home (its servers registered by the first `host` over it) and the agents' folder. */
const setup = Effect.gen(function*() {
  const home = yield* tempHome
  const agentsDir = yield* tempDir("agents")
  for (
    const [agent, text] of Object.entries({
      main: "You are the main agent.\n\n<!-- MCP_LIST -->\n\nBe brief.",
      helper: "You are a helper.\n\n<!-- MCP_LIST -->"
    })
  ) {
    Fs.mkdirSync(Path.join(agentsDir, agent))
    Fs.writeFileSync(Path.join(agentsDir, agent, "AGENT.md"), text)
  }
  return { home, agentsDir }
})

describe("lazy tool loading, seen in the model's requests", () => {
  it.scopedLive("round 1 offers activate_tools only; round 2 exactly the activated server's; a restart keeps the grant", () =>
    Effect.gen(function*() {
      const { agentsDir, home } = yield* setup
      const standin = yield* ModelStandin.start([
        ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["alpha", "nope"] } }]),
        ModelStandin.toolCalls([{ id: "e1", name: "mcp__alpha__echo", arguments: { message: "hi" } }]),
        ModelStandin.text("done"),
        ModelStandin.text("again")
      ])
      const scope = yield* Scope.make()
      const first = yield* host(home, agentsDir, standin.url, scope)
      const alphaTools = first.alphaTools
      const events = yield* run(first.agent, { message: "use alpha" })
      const started = events.find((e) => e._tag === "TurnStarted")!
      assert.strictEqual(events.at(-1)!._tag, "TurnDone")
      const [r1, r2, r3] = standin.requests
      // Round 1: the base tools, no MCP tool; the list block names both servers as available.
      assert.deepStrictEqual(toolNames(r1!), ["activate_tools", "dispatch_agent"])
      const availableOf = (r: ModelStandin.RecordedRequest) => systemOf(r).split("**Active**")[0]!
      assert.include(availableOf(r1!), "- `alpha`")
      assert.include(availableOf(r1!), "- `beta`")
      assert.include(systemOf(r1!), "**Active**: none yet.")
      // The answer to activate_tools, as the model reads it.
      const toolMessage = r2!.body.messages.find((m: { role: string }) => m.role === "tool")
      assert.include(toolMessage.content, "Activated alpha (scope: session)")
      assert.include(toolMessage.content, "Unknown group(s): nope. Available groups: alpha, beta, config.")
      // Round 2 (same turn): exactly alpha's tools beside the base ones; alpha under Active with its instructions.
      assert.deepStrictEqual(mcpOf(toolNames(r2!)), alphaTools)
      assert.deepStrictEqual(toolNames(r2!).filter((n) => !n.startsWith("mcp__")), ["activate_tools", "dispatch_agent"])
      assert.include(systemOf(r2!), "- `alpha`\n  Instructions: Say something and it is said back.")
      assert.notInclude(availableOf(r2!), "- `alpha`")
      assert.include(availableOf(r2!), "- `beta`")
      assert.deepStrictEqual(mcpOf(toolNames(r3!)), alphaTools)
      assert.strictEqual(toolMessage && events.filter((e) => e._tag === "ToolDone").length, 2)
      yield* Scope.close(scope, Exit.void)

      // A restart: a new host over the same home; the session's grant is still there.
      const again = yield* Scope.make()
      const second = yield* host(home, agentsDir, standin.url, again, { register: false })
      const sessionId = (started as { sessionId: string }).sessionId
      yield* run(second.agent, { sessionId, message: "again" })
      assert.deepStrictEqual(mcpOf(toolNames(standin.requests[3]!)), alphaTools)
      assert.deepStrictEqual(yield* second.grants.list(Grants.sessionScope(sessionId)), ["alpha"])
      yield* Scope.close(again, Exit.void)
    }))

  it.scopedLive("a turn reads the server list once, and again only after a built-in call", () =>
    Effect.gen(function*() {
      const { agentsDir, home } = yield* setup
      const standin = yield* ModelStandin.start([
        ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["alpha"] } }]),
        ModelStandin.toolCalls([{ id: "e1", name: "mcp__alpha__echo", arguments: { message: "one" } }]),
        ModelStandin.toolCalls([{ id: "e2", name: "mcp__alpha__echo", arguments: { message: "two" } }]),
        ModelStandin.text("done")
      ])
      let lists = 0
      const scope = yield* Scope.make()
      const { agent } = yield* host(home, agentsDir, standin.url, scope, {
        wrap: (manager) =>
          McpManager.McpManager.make({
            ...manager,
            list: Effect.suspend(() => {
              lists++
              return manager.list
            })
          })
      })
      const events = yield* run(agent, { message: "use alpha" })
      assert.strictEqual(events.at(-1)!._tag, "TurnDone")
      assert.strictEqual(standin.requests.length, 4)
      // round 1 reads it; activate_tools (a built-in) makes round 2 read it again; rounds 3 and 4 keep it
      assert.strictEqual(lists, 2)
      yield* Scope.close(scope, Exit.void)
    }))

  it.scopedLive("a sub-agent starts at zero, activates its own; its grants vanish when it ends, the parent's stay", () =>
    Effect.gen(function*() {
      const { agentsDir, home } = yield* setup
      const standin = yield* ModelStandin.start([
        // parent round 1
        ModelStandin.toolCalls([{ id: "p1", name: "activate_tools", arguments: { groups: ["alpha"] } }]),
        // parent round 2: dispatch
        ModelStandin.toolCalls([{ id: "p2", name: "dispatch_agent", arguments: { agent: "helper", task: "echo it" } }]),
        // sub round 1, 2, 3
        ModelStandin.toolCalls([{ id: "s1", name: "activate_tools", arguments: { groups: ["beta"] } }]),
        ModelStandin.toolCalls([{ id: "s2", name: "mcp__beta__echo", arguments: { message: "from sub" } }]),
        ModelStandin.text("sub done"),
        // parent round 3
        ModelStandin.text("all done")
      ])
      const scope = yield* Scope.make()
      const { agent, alphaTools, betaTools, grants, store } = yield* host(home, agentsDir, standin.url, scope)
      const events = yield* run(agent, { message: "delegate" })
      assert.strictEqual(events.at(-1)!._tag, "TurnDone")
      const sessionId = (events.find((e) => e._tag === "TurnStarted") as { sessionId: string }).sessionId
      const [, p2, s1, s2, s3, p3] = standin.requests
      assert.deepStrictEqual(mcpOf(toolNames(p2!)), alphaTools)
      // The sub-agent: its own prompt, zero grants at first, then its own server only.
      assert.include(systemOf(s1!), "You are a helper.")
      assert.include(systemOf(s1!), "**Active**: none yet.")
      assert.deepStrictEqual(mcpOf(toolNames(s1!)), [])
      const subAnswer = s2!.body.messages.find((m: { role: string }) => m.role === "tool").content as string
      assert.match(subAnswer, /^Activated beta \(scope: stack [0-9a-f-]{36}\)/)
      assert.deepStrictEqual(mcpOf(toolNames(s2!)), betaTools)
      assert.deepStrictEqual(mcpOf(toolNames(s3!)), betaTools)
      // Back in the parent: the sub-agent's answer is the tool result; the parent's tools unchanged.
      const result = p3!.body.messages.filter((m: { role: string }) => m.role === "tool").at(-1).content as string
      assert.strictEqual(result, "sub done")
      assert.deepStrictEqual(mcpOf(toolNames(p3!)), alphaTools)
      assert.deepStrictEqual(yield* grants.list(Grants.sessionScope(sessionId)), ["alpha"])
      const stack = subAnswer.match(/stack ([0-9a-f-]{36})/)![1]!
      assert.deepStrictEqual(yield* grants.list(Grants.stackScope(sessionId, stack)), [])
      // Its transcript is a sub-session of the parent's: not among the sessions, listed under the
      // parent's, deleted with it.
      assert.deepStrictEqual((yield* store.listSessions).map((s) => s.id), [sessionId])
      const [sub, ...more] = yield* store.subSessions(sessionId)
      assert.deepStrictEqual(more, [])
      assert.strictEqual(sub!.agent, "helper")
      assert.strictEqual(sub!.parent, sessionId)
      assert.strictEqual(sub!.title, "echo it")
      const transcript = yield* store.history(sub!.id)
      assert.deepStrictEqual(transcript[0]!.text, "echo it")
      assert.deepStrictEqual(transcript.at(-1)!.text, "sub done")
      assert.isTrue(yield* store.removeSession(sessionId))
      assert.isTrue(Option.isNone(yield* store.getSession(sub!.id)))
      assert.deepStrictEqual(yield* store.history(sub!.id), [])
      yield* Scope.close(scope, Exit.void)
    }))

  it.scopedLive("the config tools, driven by the model: register, toggle, list, delete; a secret never echoed", () =>
    Effect.gen(function*() {
      const { agentsDir, home } = yield* setup
      const echo = fixture("echo")
      const standin = yield* ModelStandin.start([
        ModelStandin.toolCalls([{ id: "c0", name: "activate_tools", arguments: { groups: ["config"] } }]),
        ModelStandin.toolCalls([{
          id: "c1",
          name: "set_secret",
          arguments: { name: "GAMMA_KEY", value: "hush-9271" }
        }]),
        ModelStandin.toolCalls([{
          id: "c2",
          name: "register_mcp",
          arguments: {
            name: "gamma",
            transport: "stdio",
            command: echo.command,
            args: echo.args,
            description: "Echoes"
          }
        }]),
        ModelStandin.toolCalls([{
          id: "c3",
          name: "toggle_item",
          arguments: { kind: "mcp", id: "gamma", enabled: false }
        }]),
        ModelStandin.toolCalls([{ id: "c4", name: "list_items", arguments: { type: "mcp" } }]),
        ModelStandin.toolCalls([{ id: "c5", name: "delete_mcp", arguments: { name: "gamma" } }]),
        ModelStandin.toolCalls([{ id: "c6", name: "list_secrets", arguments: {} }]),
        ModelStandin.text("configured")
      ])
      const scope = yield* Scope.make()
      const { agent, manager } = yield* host(home, agentsDir, standin.url, scope)
      const events = yield* run(agent, { message: "set up gamma" })
      assert.strictEqual(events.at(-1)!._tag, "TurnDone")
      const names = standin.requests.map(toolNames)
      // Hidden until activated, then offered.
      assert.notInclude(names[0]!, "register_mcp")
      for (const tool of ["register_mcp", "delete_mcp", "toggle_item", "list_items", "set_secret", "list_secrets"]) {
        assert.include(names[1]!, tool)
      }
      const resultOf = (i: number) =>
        standin.requests[i]!.body.messages.filter((m: { role: string }) => m.role === "tool").at(-1).content as string
      assert.include(resultOf(3), "Registered the MCP server gamma")
      assert.include(resultOf(4), "disabled")
      const listed = JSON.parse(resultOf(5)) as Array<Record<string, unknown>>
      assert.deepStrictEqual(
        listed.find((s) => s.name === "gamma"),
        { name: "gamma", status: "disabled", enabled: false, description: "Echoes", tool_count: 0 }
      )
      assert.include(resultOf(6), "Deleted the MCP server gamma")
      assert.include(resultOf(7), "GAMMA_KEY")
      // No answer the model read holds the value (its own call's arguments are its history).
      for (const r of standin.requests) {
        for (const m of r.body.messages.filter((m: { role: string }) => m.role !== "assistant")) {
          assert.notInclude(JSON.stringify(m), "hush-9271")
        }
      }
      assert.include(resultOf(2), "Stored the secret GAMMA_KEY")
      yield* waitForState(manager, "gamma", "absent")
      yield* Scope.close(scope, Exit.void)
    }))
})
