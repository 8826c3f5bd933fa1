/**
 * Sampling through the host's model (issue 27, point 2): the manager's servers — server-everything
 * and the SDK fixture `sample`, real processes over stdio — ask `sampling/createMessage`; the host
 * asks the person in the inbox (an Approval of `sampling:<server>`), then answers with its
 * configured model, the OpenAI-compatible stand-in over real HTTP. Approved: the server gets the
 * model's text; denied: the spec's `-1` error, and the tool says so; "always for this server": the
 * next request is not asked; tool calling inside sampling (SEP-1577): the model's call reaches the
 * server as `tool_use`, the server answers `tool_result` and gets the final text; `maxTokens` is
 * capped by the host's maximum; over the rate limit a request is refused; the server's own cancel
 * withdraws the item; no model, no `sampling` declared (and a clear refusal where one is asked
 * anyway). The engine alone: `sampling.tools` not declared refuses a request with tools, and an
 * unanswered `tool_use` is refused, both `-32602`.
 */
import { assert, describe, it } from "@effect/vitest"
import { InboxItem, type McpCallResult, type ToolResult } from "@skald/domain"
import type { McpServerEntry } from "@skald/domain"
import { Sampling } from "@skald/mcp"
import { HostSampling, Inbox, InboxLog, McpManager, SamplingSource } from "@skald/server"
import { ModelSettings } from "@skald/server/agent/llm/ModelSettings"
import * as RpcHost from "@skald/server/cli/RpcHost"
import { ApprovalRules } from "@skald/server/inbox/ApprovalRules"
import { Chunk, Context, Effect, Either, FastCheck as fc, Fiber, Layer, Logger, Redacted, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runSkald, startServe, stopProcess } from "./cli-support.js"
import * as AnthropicStandin from "./fixtures/anthropic-standin.js"
import { fixture } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { everythingEntry, fastOptions, fixtureEntry, makeHome, servicesLayer, waitForState } from "./host-support.js"
import { connect, eventuallyEffect, expectText, readRecords, tempFile } from "./support.js"

const KEY = "sk-marker-5e1f-never-shown"

const textOf = (result: ToolResult.ToolResult): string =>
  result._tag === "Text" ? result.text : JSON.stringify(result.value)

/** The text of an engine call's result. */
const engineText = (outcome: { readonly result: McpCallResult.McpCallResult }): string =>
  expectText(outcome.result).text

/**
 * A home whose model is the stand-in (stored in its settings, as `skald model set` does; none when
 * `standin` is undefined), an inbox, the host's sampling and a manager with `servers` connected.
 */
const hosted = (
  servers: ReadonlyArray<McpServerEntry.McpServerEntry>,
  standin: { readonly url: string; readonly provider?: "openai" | "anthropic" } | undefined,
  sampling: HostSampling.Options = {},
  apiKey?: string
) =>
  Effect.gen(function*() {
    const home = makeHome()
    const base = yield* Layer.build(
      Layer.provideMerge(Inbox.Inbox.Default, Layer.provideMerge(InboxLog.InboxLog.Default, servicesLayer(home)))
    )
    const withBase = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      effect.pipe(
        Effect.provide(Layer.mergeAll(ModelSettings.Default, ApprovalRules.Default)),
        Effect.provide(base),
        Effect.orDie
      )
    if (standin !== undefined) {
      yield* withBase(Effect.flatMap(ModelSettings, (s) =>
        s.set({
          provider: standin.provider ?? "openai",
          baseUrl: standin.url,
          model: "m",
          ...(apiKey === undefined ? {} : { apiKey: Redacted.make(apiKey) })
        })))
    }
    const context = yield* Layer.build(
      Layer.provideMerge(
        McpManager.McpManager.Default(fastOptions),
        Layer.provideMerge(
          HostSampling.layer({ tuning: { maxRetries: 1 }, ...sampling }),
          Layer.succeedContext(base)
        )
      )
    )
    const manager = Context.get(context, McpManager.McpManager)
    yield* Effect.forEach(servers, (entry) => Effect.orDie(manager.register(entry)), { discard: true })
    yield* Effect.forEach(servers, (entry) => waitForState(manager, entry.name, "connected"), { discard: true })
    const rules = withBase(Effect.flatMap(ApprovalRules, (r) => r.list))
    return {
      manager,
      inbox: Context.get(base, Inbox.Inbox),
      log: Context.get(base, InboxLog.InboxLog),
      rules,
      source: Context.get(context, SamplingSource.SamplingSource)
    }
  })

/** The `sample` fixture with a record file. */
const sampleEntry = () => {
  const record = tempFile("sample")
  return { record, entry: fixtureEntry("sample", "sample", { FIXTURE_RECORD: record }) }
}

/** The capabilities the fixture recorded at `notifications/initialized` (polled: it records them then). */
const initializedIn = (record: string) =>
  eventuallyEffect(
    Effect.sync(() => readRecords(record).find((r) => r.event === "initialized")),
    (found) => found !== undefined,
    "the initialized record"
  ).pipe(Effect.map((found) => found!))

/** The next pending item (polled: the server's request arrives in its own time). */
const nextItem = (inbox: Inbox.Inbox) =>
  eventuallyEffect(inbox.list, (items) => items.length > 0, "an inbox item").pipe(Effect.map((items) => items[0]!))

const resultOf = (text: string, tool: string) => JSON.parse(text.slice(`${tool}: `.length))

describe("sampling through the host's model", () => {
  it.scopedLive("server-everything's trigger-sampling-request: asked in the inbox, approved, answered by the model", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.text("Paris is the capital.")])
      const { inbox, log, manager } = yield* hosted([everythingEntry("everything")], standin)
      const tools = yield* manager.tools
      assert.include(tools.map((t) => t.name), "mcp__everything__trigger-sampling-request")
      const call = yield* Effect.fork(
        manager.call("mcp__everything__trigger-sampling-request", { prompt: "the capital of France?", maxTokens: 64 })
      )
      const item = yield* nextItem(inbox)
      assert.strictEqual(item._tag, "Approval")
      if (item._tag !== "Approval") return
      assert.strictEqual(item.tool, "sampling:everything")
      assert.deepStrictEqual(item.origin, { server: "everything" })
      const args = item.arguments as Record<string, unknown>
      assert.strictEqual(args.maxTokens, 64)
      assert.strictEqual(args.systemPrompt, "You are a helpful test server.")
      assert.include(JSON.stringify(args.messages), "the capital of France?")
      yield* inbox.resolve(item.id, new InboxItem.Approve({ always: false }))
      const text = textOf(yield* Fiber.join(call))
      assert.include(text, "Paris is the capital.")
      assert.include(text, `"model": "m"`)
      assert.include(text, `"stopReason": "endTurn"`)
      const body = standin.requests[0]!.body
      assert.strictEqual(body.max_tokens, 64)
      assert.strictEqual(body.temperature, 0.7)
      assert.deepStrictEqual(body.messages[0], { role: "system", content: "You are a helpful test server." })
      assert.strictEqual(body.tools, undefined)
      const rows = (yield* log.list).filter((r) => r.id === item.id)
      assert.deepStrictEqual(rows.map((r) => [r.kind, r.server, r.outcome]), [["approval", "everything", "approved"]])
    }))

  it.scopedLive("declares sampling with tools; denied: the server gets -1 and the model is never asked", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([])
      const { entry, record } = sampleEntry()
      const { inbox, manager } = yield* hosted([entry], standin)
      const initialized = yield* initializedIn(record)
      assert.deepStrictEqual((initialized.capabilities as { sampling?: unknown }).sampling, { tools: {} })
      const call = yield* Effect.fork(manager.call("mcp__sample__ask", { prompt: "hello" }))
      const item = yield* nextItem(inbox)
      yield* inbox.resolve(item.id, new InboxItem.Deny())
      const result = yield* Fiber.join(call)
      assert.strictEqual(
        textOf(result),
        "ask: error -1 MCP error -1: User rejected sampling request: the person denied it (or did not answer in time)"
      )
      assert.isTrue(result._tag === "Text" && result.isError)
      assert.strictEqual(standin.requests.length, 0)
    }))

  it.scopedLive("always for this server: the rule sampling:<server> is stored and the next request is not asked", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.text("one"), ModelStandin.text("two")])
      const { entry } = sampleEntry()
      const { inbox, manager, rules } = yield* hosted([entry], standin)
      const first = yield* Effect.fork(manager.call("mcp__sample__ask", { prompt: "first" }))
      const item = yield* nextItem(inbox)
      yield* inbox.resolve(item.id, new InboxItem.Approve({ always: true }))
      assert.strictEqual(resultOf(textOf(yield* Fiber.join(first)), "ask").content.text, "one")
      assert.deepStrictEqual((yield* rules).map((r) => [r.pattern, r.decision]), [["sampling:sample", "allow"]])
      // Not asked: the call completes with nobody answering.
      const second = textOf(yield* manager.call("mcp__sample__ask", { prompt: "second" }))
      assert.strictEqual(resultOf(second, "ask").content.text, "two")
      assert.deepStrictEqual(yield* inbox.list, [])
    }))

  it.scopedLive("tool calling inside sampling: tool_use to the server, tool_result back, the final text", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([
        ModelStandin.toolCalls([{ id: "call_1", name: "get_weather", arguments: { city: "Paris" } }]),
        ModelStandin.text("It is 18°C in Paris.")
      ])
      const { entry } = sampleEntry()
      const { manager } = yield* hosted([entry], standin, { mode: "allow" })
      const out = resultOf(
        textOf(yield* manager.call("mcp__sample__weather", { question: "Weather in Paris?" })),
        "weather"
      )
      assert.strictEqual(out.rounds.length, 2)
      const first = out.rounds[0]
      assert.strictEqual(first.stopReason, "toolUse")
      assert.deepStrictEqual(first.content, {
        type: "tool_use",
        id: "call_1",
        name: "get_weather",
        input: { city: "Paris" }
      })
      assert.deepStrictEqual(out.final.content, { type: "text", text: "It is 18°C in Paris." })
      assert.strictEqual(out.final.stopReason, "endTurn")
      // The model was offered the server's tool both times, and read the server's result.
      for (const r of standin.requests) assert.strictEqual(r.body.tools[0].function.name, "get_weather")
      const second = standin.requests[1]!.body.messages
      assert.deepStrictEqual(second.slice(-1), [{ role: "tool", tool_call_id: "call_1", content: "Paris: 18°C" }])
      assert.strictEqual(second[second.length - 2].tool_calls[0].function.name, "get_weather")
    }))

  it.scopedLive("with Anthropic: the tool loop, and max_tokens / temperature / stop_sequences from the request", () =>
    Effect.gen(function*() {
      const standin = yield* AnthropicStandin.start([
        AnthropicStandin.message({ toolUses: [{ id: "toolu_1", name: "get_weather", input: { city: "Oslo" } }] }),
        AnthropicStandin.text("Cold in Oslo."),
        AnthropicStandin.text("Hi.")
      ])
      const { entry } = sampleEntry()
      const { manager } = yield* hosted([entry], { url: standin.url, provider: "anthropic" }, {
        mode: "allow",
        maxTokens: 150
      })
      const out = resultOf(textOf(yield* manager.call("mcp__sample__weather", { question: "Oslo?" })), "weather")
      assert.deepStrictEqual(out.rounds[0].content, {
        type: "tool_use",
        id: "toolu_1",
        name: "get_weather",
        input: { city: "Oslo" }
      })
      assert.strictEqual(out.rounds[0].stopReason, "toolUse")
      assert.deepStrictEqual(out.final.content, { type: "text", text: "Cold in Oslo." })
      // The request's 200 capped at 150; the tool offered both times; the server's result read back.
      for (const r of standin.requests) {
        assert.strictEqual(r.body.max_tokens, 150)
        assert.strictEqual(r.body.tools[0].name, "get_weather")
      }
      const last = standin.requests[1]!.body.messages.at(-1)
      assert.strictEqual(last.role, "user")
      assert.strictEqual(last.content[0].type, "tool_result")
      assert.strictEqual(last.content[0].tool_use_id, "toolu_1")
      assert.include(JSON.stringify(last.content[0].content), "Oslo: 18°C")
      const asked = resultOf(textOf(yield* manager.call("mcp__sample__ask", { prompt: "hello" })), "ask")
      assert.deepStrictEqual(asked.content, { type: "text", text: "Hi." })
      const plain = standin.requests[2]!.body
      assert.deepInclude(plain, { max_tokens: 100, temperature: 0.2, stop_sequences: ["END"] })
      assert.strictEqual(plain.tools, undefined)
      assert.include(JSON.stringify(plain.system), "You are a terse assistant.")
    }))

  it.scopedLive("maxTokens is capped by the host's maximum (the approval shows both); temperature and stop sequences are sent", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.text("short")])
      const { entry } = sampleEntry()
      const { inbox, manager } = yield* hosted([entry], standin, { maxTokens: 50 })
      const call = yield* Effect.fork(manager.call("mcp__sample__ask", { prompt: "a long essay", maxTokens: 1000 }))
      const item = yield* nextItem(inbox)
      const args = (item as InboxItem.Approval).arguments as Record<string, unknown>
      assert.deepInclude(args, { maxTokens: 50, requestedMaxTokens: 1000 })
      yield* inbox.resolve(item.id, new InboxItem.Approve({ always: false }))
      yield* Fiber.join(call)
      assert.deepInclude(standin.requests[0]!.body, { max_tokens: 50, temperature: 0.2, stop: ["END"] })
    }))

  it.scopedLive("over the per-server rate limit a request is refused at once, nobody asked", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.text("a"), ModelStandin.text("b")])
      const { entry } = sampleEntry()
      const { inbox, manager } = yield* hosted([entry], standin, { mode: "allow", perMinute: 2 })
      yield* manager.call("mcp__sample__ask", { prompt: "1" })
      yield* manager.call("mcp__sample__ask", { prompt: "2" })
      const third = textOf(yield* manager.call("mcp__sample__ask", { prompt: "3" }))
      assert.match(
        third,
        /^ask: error -1 MCP error -1: sampling rate limit reached for server sample: at most 2 requests a minute; try again in \d+ s$/
      )
      assert.strictEqual(standin.requests.length, 2)
      assert.deepStrictEqual(yield* inbox.list, [])
    }))

  it.scopedLive("the model's key reaches no answer, no inbox item and no log line, even when the model echoes it", () => {
    const lines: Array<string> = []
    const capture = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ message }) => void lines.push(JSON.stringify(message)))
    )
    return Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.error(401, `invalid key ${KEY}`)])
      const { entry } = sampleEntry()
      const { inbox, manager } = yield* hosted([entry], standin, {}, KEY)
      const call = yield* Effect.fork(manager.call("mcp__sample__ask", { prompt: "hello" }))
      const item = yield* nextItem(inbox)
      assert.notInclude(JSON.stringify(item), KEY)
      yield* inbox.resolve(item.id, new InboxItem.Approve({ always: false }))
      const text = textOf(yield* Fiber.join(call))
      assert.match(text, /^ask: error -32603 MCP error -32603: the host's model failed: /)
      assert.include(text, "[redacted]")
      assert.notInclude(text, KEY)
      assert.strictEqual(standin.requests[0]!.headers.authorization, `Bearer ${KEY}`)
      assert.notInclude(lines.join("\n"), KEY)
    }).pipe(Effect.provide(capture))
  })

  it.scopedLive("the server's own cancel (notifications/cancelled) withdraws the approval", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([])
      const { entry } = sampleEntry()
      const { inbox, log, manager } = yield* hosted([entry], standin)
      const call = yield* Effect.fork(manager.call("mcp__sample__ask", { prompt: "slow", timeout: 400 }))
      const item = yield* nextItem(inbox)
      assert.match(textOf(yield* Fiber.join(call)), /^ask: error -32001 /)
      const rows = yield* eventuallyEffect(
        Effect.map(log.list, (all) => all.filter((r) => r.id === item.id)),
        (found) => found.length > 0,
        "the item's outcome"
      )
      assert.deepStrictEqual(rows.map((r) => r.outcome), ["withdrawn"])
      assert.strictEqual(standin.requests.length, 0)
    }))

  it.scopedLive("no model configured: sampling is not declared; asked anyway, the host refuses saying why", () =>
    Effect.gen(function*() {
      const { entry, record } = sampleEntry()
      const { source } = yield* hosted([entry], undefined)
      const initialized = yield* initializedIn(record)
      assert.notProperty(initialized.capabilities, "sampling")
      assert.isFalse(yield* source.available)
      // A client given the host's handler all the same (as a server connected before the model was removed).
      const client = yield* connect("sample", fixture("sample"), {}).pipe(
        Effect.provideService(Sampling.SamplingHandler, source.handler)
      )
      const result = yield* client.callTool("ask", { prompt: "hello" })
      assert.match(engineText(result), /^ask: error -1 MCP error -1: the host cannot sample: no model is configured/)
    }))
})

describe("skald agent run: the servers' sampling in the CLI's process", () => {
  it.scopedLive("--approve allow: the server's sampling request is answered by the configured model", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([
        ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["sample"] } }]),
        ModelStandin.toolCalls([{ id: "c1", name: "mcp__sample__ask", arguments: { prompt: "inner question" } }]),
        // The server's sampling request, made while its tool runs.
        ModelStandin.text("sampled answer"),
        ModelStandin.text("Done.")
      ])
      const home = makeHome()
      const f = fixture("sample")
      const added = yield* Effect.promise(() =>
        runSkald(["mcp", "add", "sample", "--home", home, "--", f.command, ...f.args])
      )
      assert.strictEqual(added.status, 0, added.stderr)
      const env = { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" }
      const run = yield* Effect.promise(() =>
        runSkald(["agent", "run", "--home", home, "--approve", "allow", "--json", "ask the server"], { env })
      )
      assert.strictEqual(run.status, 0, run.stderr)
      const done = run.stdout.trim().split("\n").map((l) => JSON.parse(l)).find((e) =>
        e._tag === "ToolDone" && e.callId === "c1"
      )
      assert.include(JSON.stringify(done), "sampled answer")
      const sampling = standin.requests[2]!.body
      assert.strictEqual(sampling.max_tokens, 100)
      assert.deepStrictEqual(sampling.messages, [
        { role: "system", content: "You are a terse assistant." },
        { role: "user", content: "inner question" }
      ])
    }))
})

describe("skald serve: the servers' sampling approved from skald inbox", () => {
  it.scopedLive("the sampling approval waits in the host's inbox; skald inbox answer --yes lets the model answer", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([
        ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["sample"] } }]),
        ModelStandin.toolCalls([{ id: "c1", name: "mcp__sample__ask", arguments: { prompt: "via the host" } }]),
        ModelStandin.text("host sampled"),
        ModelStandin.text("Done.")
      ])
      const home = makeHome()
      const f = fixture("sample")
      const added = yield* Effect.promise(() =>
        runSkald(["mcp", "add", "sample", "--home", home, "--", f.command, ...f.args])
      )
      assert.strictEqual(added.status, 0, added.stderr)
      const host = yield* Effect.acquireRelease(
        Effect.promise(() =>
          startServe(home, { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" })
        ),
        (s) => Effect.promise(() => stopProcess(s.child))
      )
      const cli = (args: ReadonlyArray<string>) => Effect.promise(() => runSkald([...args, "--home", home]))
      yield* eventuallyEffect(
        Effect.sync(() => Fs.existsSync(Path.join(home, "data", "host.json"))),
        (ok) => ok,
        "the host's address",
        "60 seconds"
      )
      const client = yield* RpcHost.connectTo(host.url, undefined)
      yield* eventuallyEffect(
        client.Mcp.List(),
        (all) => all.some((s) => s.name === "sample" && s.state === "connected"),
        "sample to connect",
        "60 seconds"
      )
      const approval = (tool: string) =>
        eventuallyEffect(
          client.Inbox.List(),
          (items) => items.some((i) => i._tag === "Approval" && i.tool === tool),
          `an approval of ${tool}`,
          "60 seconds"
        ).pipe(Effect.map((items) => items.find((i) => i._tag === "Approval" && i.tool === tool)!))
      const turn = yield* Effect.fork(
        Stream.runCollect(client.Agent.Send({ message: "ask the server" })).pipe(Effect.map(Chunk.toArray))
      )
      // The agent's own call first, then the server's sampling request.
      const call = yield* approval("mcp__sample__ask")
      assert.strictEqual((yield* cli(["inbox", "answer", call.id, "--yes"])).status, 0)
      const sampling = yield* approval("sampling:sample")
      const listed = yield* cli(["inbox"])
      assert.include(listed.stdout, "tool sampling:sample")
      assert.include(listed.stdout, "via the host")
      const yes = yield* cli(["inbox", "answer", sampling.id, "--yes"])
      assert.deepStrictEqual([yes.status, yes.stderr.trim()], [0, `skald: ${sampling.id} approved`])
      const events = yield* Fiber.join(turn)
      const done = events.find((e) => e._tag === "ToolDone" && e.callId === "c1")
      assert.include(JSON.stringify(done), "host sampled")
      assert.strictEqual(standin.requests[2]!.body.max_tokens, 100)
    }))
})

describe("sampling in the engine", () => {
  const answering = (tools: boolean): Sampling.Handler => ({
    tools,
    createMessage: (request) =>
      Effect.succeed({
        model: "fixed",
        stopReason: "endTurn",
        content: [{ type: "text", text: `to ${request.server}` }]
      })
  })

  it.scopedLive("without sampling.tools a request with tools is refused -32602; a plain one is answered", () =>
    Effect.gen(function*() {
      const record = tempFile("sample-engine")
      const client = yield* connect("sample", fixture("sample", { FIXTURE_RECORD: record })).pipe(
        Effect.provideService(Sampling.SamplingHandler, answering(false))
      )
      const initialized = yield* initializedIn(record)
      assert.deepStrictEqual((initialized.capabilities as { sampling?: unknown }).sampling, {})
      const refused = yield* client.callTool("with_tools", { prompt: "x" })
      assert.match(
        engineText(refused),
        /^with_tools: error -32602 .*this client did not declare sampling\.tools/
      )
      const plain = yield* client.callTool("ask", { prompt: "x" })
      assert.deepStrictEqual(resultOf(engineText(plain), "ask"), {
        role: "assistant",
        content: { type: "text", text: "to sample" },
        model: "fixed",
        stopReason: "endTurn"
      })
    }))

  it.scopedLive("a tool_use no tool_result answers is refused: Tool result missing in request", () =>
    Effect.gen(function*() {
      const client = yield* connect("sample", fixture("sample")).pipe(
        Effect.provideService(Sampling.SamplingHandler, answering(true))
      )
      const result = yield* client.callTool("unbalanced", {})
      assert.match(engineText(result), /^unbalanced: error -32602 .*Tool result missing in request/)
    }))

  it.prop(
    "parseRequest: a user message mixing tool_result with other content is refused, whatever the order",
    [fc.array(fc.string(), { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 3 }), fc.nat()],
    ([texts, results, seed]) => {
      const ids = Array.from({ length: results }, (_, i) => `u${i}`)
      const blocks: Array<unknown> = [
        ...texts.map((text) => ({ type: "text", text })),
        ...ids.map((toolUseId) => ({ type: "tool_result", toolUseId, content: [] }))
      ]
      // A deterministic shuffle from the seed.
      for (let i = blocks.length - 1; i > 0; i--) {
        const j = (seed + i * 7919) % (i + 1)
        ;[blocks[i], blocks[j]] = [blocks[j], blocks[i]]
      }
      const parsed = Sampling.parseRequest("s", {
        maxTokens: 10,
        tools: [{ name: "t", inputSchema: { type: "object" } }],
        messages: [
          { role: "user", content: { type: "text", text: "q" } },
          { role: "assistant", content: ids.map((id) => ({ type: "tool_use", id, name: "t", input: {} })) },
          { role: "user", content: blocks }
        ]
      }, true)
      assert.isTrue(Either.isLeft(parsed))
      if (Either.isLeft(parsed)) {
        assert.deepStrictEqual(parsed.left, { code: -32602, message: "Tool results mixed with other content" })
      }
    }
  )

  it("parseRequest: a balanced tool loop passes; maxTokens must be a positive integer", () => {
    const balanced = Sampling.parseRequest("s", {
      maxTokens: 10,
      tools: [{ name: "t", inputSchema: { type: "object" } }],
      messages: [
        { role: "user", content: { type: "text", text: "q" } },
        { role: "assistant", content: [{ type: "tool_use", id: "a", name: "t", input: {} }] },
        { role: "user", content: [{ type: "tool_result", toolUseId: "a", content: [] }] }
      ]
    }, true)
    assert.isTrue(Either.isRight(balanced))
    const zero = Sampling.parseRequest("s", { maxTokens: 0, messages: [] }, true)
    assert.isTrue(Either.isLeft(zero) && zero.left.code === -32602)
  })
})
