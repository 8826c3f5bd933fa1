/**
 * The turn loop against real MCP servers (SDK fixtures over stdio, through the manager, on a temp
 * SQLite file) and a scripted model: parallel calls over two rounds, JSON results stored and
 * replayed as JSON, media as URLs, a hanging tool stopped (the server gets
 * `notifications/cancelled`, the call is recorded `cancelled`), a crashing tool (the turn goes on),
 * the round limit, truncation, `SessionBusy`, a failing model. The scripted model records every
 * request, so the next turn's prompt (replayed from the rows) is compared with what was sent live.
 */
import * as Prompt from "@effect/ai/Prompt"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { TurnEvent } from "@skald/domain"
import { SessionBusy, UnknownAgent, UnknownSession } from "@skald/server/agent/Agent"
import * as History from "@skald/server/agent/History"
import * as ToolNames from "@skald/server/agent/llm/ToolNames"
import { Chunk, Context, Effect, Fiber, Ref, Schedule, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { everythingEntry, fixtureEntry, makeHome, startManager, waitForState } from "./host-support.js"
import { eventually, readRecords, tempFile } from "./support.js"
import { agentOver, encoded, events, startAgent } from "./support/agent.js"
import * as Scripted from "./support/scripted-model.js"

const last = <A>(list: ReadonlyArray<A>): A => list[list.length - 1]!
const ofTag = <T extends TurnEvent.TurnEvent["_tag"]>(list: ReadonlyArray<TurnEvent.TurnEvent>, tag: T) =>
  list.filter((e): e is Extract<TurnEvent.TurnEvent, { _tag: T }> => e._tag === tag)

/** Runs a turn in the background, collecting its events; `events` reads them so far. */
const background = <E>(stream: Stream.Stream<TurnEvent.TurnEvent, E>) =>
  Effect.gen(function*() {
    const seen = yield* Ref.make<ReadonlyArray<TurnEvent.TurnEvent>>([])
    const fiber = yield* Stream.runForEach(stream, (e) => Ref.update(seen, (all) => [...all, e])).pipe(Effect.fork)
    return { fiber, seen: Ref.get(seen) }
  })

const waitFor = (
  seen: Effect.Effect<ReadonlyArray<TurnEvent.TurnEvent>>,
  ok: (all: ReadonlyArray<TurnEvent.TurnEvent>) => boolean,
  what: string
) =>
  seen.pipe(
    Effect.filterOrFail(ok, () => `not yet: ${what}`),
    Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 1500 }),
    Effect.orDie
  )

describe("agent turn loop", () => {
  it.scopedLive("two rounds with parallel calls: text, json (stored and replayed as json), media as URLs", () =>
    Effect.gen(function*() {
      const { agent, model, store } = yield* startAgent(
        [fixtureEntry("echo", "echo"), fixtureEntry("weather", "structured"), fixtureEntry("media", "media")],
        [
          Scripted.calls([
            { id: "c1", name: "mcp__echo__echo", params: { message: "hi there" } },
            { id: "c2", name: "mcp__weather__weather", params: { city: "Paris" } },
            { id: "c3", name: "mcp__media__image" }
          ], "Let me look. "),
          Scripted.answer("It is sunny in Paris.", 30, 7),
          Scripted.answer("You are welcome.")
        ]
      )
      const first = yield* events(agent.run({ message: "weather in Paris?" }))
      assert.strictEqual(first[0]?._tag, "TurnStarted")
      const sessionId = (first[0] as TurnEvent.TurnStarted).sessionId

      assert.deepStrictEqual(ofTag(first, "ToolStarted").map((e) => e.callId).sort(), ["c1", "c2", "c3"])
      const done = new Map(ofTag(first, "ToolDone").map((e) => [e.callId, e]))
      assert.deepStrictEqual(
        { ...done.get("c1")!, _tag: undefined },
        {
          _tag: undefined,
          callId: "c1",
          name: "mcp__echo__echo",
          status: "done",
          result: "hi there",
          resultType: "string",
          mediaUrls: [],
          truncated: false
        }
      )
      const weather = done.get("c2")!
      assert.strictEqual(weather.resultType, "json")
      assert.deepStrictEqual(JSON.parse(weather.result), { city: "Paris", temperature: 21.5, conditions: "sunny" })
      const image = done.get("c3")!
      assert.strictEqual(image.status, "done")
      assert.strictEqual(image.mediaUrls.length, 1)
      assert.match(image.mediaUrls[0]!, /^\/api\/mcp-media\/[0-9a-f-]+\.png$/)
      assert.include(image.result, `![image](${image.mediaUrls[0]})`)

      const end = last(first)
      assert.strictEqual(end._tag, "TurnDone")
      if (end._tag === "TurnDone") {
        assert.strictEqual(end.text, "It is sunny in Paris.")
        assert.strictEqual(end.rounds, 2)
        assert.deepStrictEqual({ ...end.usage }, { inputTokens: 40, outputTokens: 12 })
        assert.isUndefined(end.note)
      }
      assert.strictEqual(
        ofTag(first, "TextDelta").map((e) => e.text).join(""),
        "Let me look. It is sunny in Paris."
      )

      // Stored: the call rows with their types.
      const rows = yield* store.history(sessionId)
      assert.deepStrictEqual(rows.map((r) => r.role), ["user", "assistant", "assistant"])
      assert.deepStrictEqual(rows[1]!.calls.map((c) => [c.callId, c.status, c.resultType]), [
        ["c1", "done", "string"],
        ["c2", "done", "json"],
        ["c3", "done", "string"]
      ])

      // The second turn's prompt is replayed from the rows: exactly what was sent live, then the new message.
      yield* events(agent.run({ sessionId, message: "thanks" }))
      const asked = yield* model.recorded
      assert.strictEqual(asked.length, 3)
      // Besides the base tools (lazy loading), every connected server's (alwaysOffered "all").
      assert.deepStrictEqual(asked[0]!.tools.filter((t) => !t.startsWith("mcp__")).sort(), [
        "activate_tools",
        "dispatch_agent"
      ])
      assert.deepStrictEqual(
        asked[0]!.tools.filter((t) => t.startsWith("mcp__")).sort(),
        [
          "mcp__echo__echo",
          "mcp__echo__fail",
          "mcp__echo__log",
          "mcp__echo__ask_roots",
          "mcp__echo__ping_client",
          "mcp__media__audio",
          "mcp__media__blob",
          "mcp__media__image",
          "mcp__media__link",
          "mcp__weather__weather",
          "mcp__weather__weather_bad"
        ].sort()
      )
      const live = [
        ...asked[1]!.messages,
        ...encoded([Prompt.assistantMessage({ content: [Prompt.textPart({ text: "It is sunny in Paris." })] })]),
        ...encoded([History.user("thanks")])
      ]
      assert.deepStrictEqual(asked[2]!.messages, live)
      // The JSON result reaches the model as JSON (an object), on replay too.
      const toolMessage = asked[2]!.prompt.content.find((m) => m.role === "tool")
      const weatherPart = toolMessage?.role === "tool" ? toolMessage.content.find((p) => p.id === "c2") : undefined
      assert.deepStrictEqual(weatherPart?.result, { city: "Paris", temperature: 21.5, conditions: "sunny" })
      assert.strictEqual(History.problemOf(asked[2]!.prompt.content), undefined)
      // The system prompt is agents/main/AGENT.md.
      const system = asked[0]!.prompt.content[0]
      assert.strictEqual(system?.role, "system")
      assert.include(system?.role === "system" ? system.content : "", "You are Skald")
    }))

  it.scopedLive("a hanging tool stopped: the server gets notifications/cancelled, the call is recorded cancelled", () =>
    Effect.gen(function*() {
      const record = tempFile("agent-cancel")
      const { agent, manager, model, store } = yield* startAgent(
        [fixtureEntry("cancel", "cancel", { FIXTURE_RECORD: record })],
        [
          Scripted.calls([
            { id: "w1", name: "mcp__cancel__wait" },
            { id: "q1", name: "mcp__cancel__quick" },
            { id: "w2", name: "mcp__cancel__wait" }
          ], "Working on it."),
          Scripted.answer("Stopped, as you asked.")
        ]
      )
      const turn = yield* background(agent.run({ message: "go" }))
      const startedWaits = () => readRecords(record).filter((r) => r.event === "started" && r.tool === "wait")
      // Both waits run at once (the round's calls are concurrent), and the quick one has answered.
      yield* eventually(() => startedWaits().length === 2, "both wait calls started")
      const seen = yield* waitFor(
        turn.seen,
        (all) => ofTag(all, "ToolDone").some((e) => e.callId === "q1"),
        "the quick call done"
      )
      const sessionId = (seen[0] as TurnEvent.TurnStarted).sessionId
      assert.isTrue(yield* agent.isBusy(sessionId))

      assert.isTrue(yield* agent.stop(sessionId))
      yield* Fiber.join(turn.fiber)
      const all = yield* turn.seen
      const end = last(all)
      assert.strictEqual(end._tag, "TurnStopped")
      if (end._tag === "TurnStopped") {
        assert.strictEqual(end.text, "Working on it.")
        assert.deepStrictEqual(end.finished, ["q1"])
        assert.deepStrictEqual([...end.cancelled].sort(), ["w1", "w2"])
      }
      const cancelledEvents = ofTag(all, "ToolDone").filter((e) => e.status === "cancelled")
      assert.deepStrictEqual(cancelledEvents.map((e) => e.callId).sort(), ["w1", "w2"])
      assert.isFalse(yield* agent.isBusy(sessionId))
      assert.isFalse(yield* agent.stop(sessionId))

      // The server was told, for each of its two abandoned requests.
      yield* Effect.orDie(manager.call("mcp__cancel__mark"))
      const records = readRecords(record)
      const cancelled = records.filter((r) => r.event === "cancelled").map((r) => r.requestId)
      assert.deepStrictEqual(cancelled.sort(), startedWaits().map((r) => r.requestId).sort())

      const rows = yield* store.history(sessionId)
      assert.deepStrictEqual(rows[1]!.calls.map((c) => [c.callId, c.status]), [
        ["w1", "cancelled"],
        ["q1", "done"],
        ["w2", "cancelled"]
      ])
      // The next turn goes on from a valid history: each cancelled call has its result.
      const next = yield* events(agent.run({ sessionId, message: "ok" }))
      assert.strictEqual(last(next)._tag, "TurnDone")
      const asked = yield* model.recorded
      const prompt = asked[1]!.prompt.content
      assert.strictEqual(History.problemOf(prompt), undefined)
      const results = prompt.flatMap((m) => (m.role === "tool" ? m.content : []))
      assert.deepStrictEqual(results.map((p) => [p.id, p.isFailure, p.result]), [
        ["w1", true, History.CANCELLED_RESULT],
        ["q1", false, "quick done"],
        ["w2", true, History.CANCELLED_RESULT]
      ])
    }))

  it.scopedLive("the round's calls are bounded by toolConcurrency; a queued call stopped is recorded cancelled", () =>
    Effect.gen(function*() {
      const record = tempFile("agent-bound")
      const { agent, manager, store } = yield* startAgent(
        [fixtureEntry("cancel", "cancel", { FIXTURE_RECORD: record })],
        [Scripted.calls([{ id: "w1", name: "mcp__cancel__wait" }, { id: "w2", name: "mcp__cancel__wait" }])],
        { toolConcurrency: 1 }
      )
      const startedWaits = () => readRecords(record).filter((r) => r.event === "started" && r.tool === "wait")
      const turn = yield* background(agent.run({ message: "two waits, one at a time" }))
      yield* eventually(() => startedWaits().length === 1, "the first wait started")
      // Once `mark` has answered, every request sent before it has been recorded: the second wait was not sent.
      yield* Effect.orDie(manager.call("mcp__cancel__mark"))
      assert.strictEqual(startedWaits().length, 1)
      const seen = yield* turn.seen
      assert.deepStrictEqual(ofTag(seen, "ToolStarted").map((e) => e.callId), ["w1"])
      const sessionId = (seen[0] as TurnEvent.TurnStarted).sessionId
      assert.isTrue(yield* agent.stop(sessionId))
      yield* Fiber.join(turn.fiber)
      const end = last(yield* turn.seen)
      assert.deepStrictEqual(end, TurnEvent.TurnStopped.make({ text: "", finished: [], cancelled: ["w1", "w2"] }))
      const calls = (yield* store.history(sessionId))[1]!.calls
      assert.deepStrictEqual(calls.map((c) => [c.callId, c.status, c.result]), [
        ["w1", "cancelled", History.CANCELLED_RESULT],
        ["w2", "cancelled", History.CANCELLED_RESULT]
      ])
    }))

  it.scopedLive("server-everything: structured content is a json result, an image a media URL", () =>
    Effect.gen(function*() {
      const { agent, model, store } = yield* startAgent([everythingEntry("everything")], [
        Scripted.calls([
          { id: "s", name: "mcp__everything__get-structured-content", params: { location: "Chicago" } },
          { id: "i", name: "mcp__everything__get-tiny-image" }
        ]),
        Scripted.answer("Rainy in Chicago; here is the image.")
      ])
      const all = yield* events(agent.run({ message: "weather and an image" }))
      const done = new Map(ofTag(all, "ToolDone").map((e) => [e.callId, e]))
      assert.strictEqual(done.get("s")?.resultType, "json")
      assert.deepStrictEqual(JSON.parse(done.get("s")!.result), {
        temperature: 36,
        conditions: "Light rain / drizzle",
        humidity: 82
      })
      assert.strictEqual(done.get("i")?.status, "done")
      assert.strictEqual(done.get("i")?.mediaUrls.length, 1)
      const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
      const calls = (yield* store.history(sessionId))[1]!.calls
      assert.deepStrictEqual(calls.map((c) => c.resultType), ["json", "string"])
      const results = (yield* model.recorded)[1]!.prompt.content.flatMap((m) => (m.role === "tool" ? m.content : []))
      assert.deepStrictEqual(results[0]?.result, { temperature: 36, conditions: "Light rain / drizzle", humidity: 82 })
    }))

  it.scopedLive("a task-mode call stopped: the server gets tasks/cancel for its task, the call is recorded cancelled", () =>
    Effect.gen(function*() {
      const record = tempFile("agent-task")
      const { agent, store } = yield* startAgent(
        [fixtureEntry("tasks", "tasks", { FIXTURE_RECORD: record })],
        [Scripted.calls([{ id: "t", name: "mcp__tasks__slow_task" }])]
      )
      const received = (method: string) =>
        readRecords(record).filter((r) => r.event === "received" && r.method === method)
      const turn = yield* background(agent.run({ message: "slow" }))
      yield* eventually(() => received("tasks/get").length > 0, "the task is being polled")
      const sessionId = ((yield* turn.seen)[0] as TurnEvent.TurnStarted).sessionId
      assert.isTrue(yield* agent.stop(sessionId))
      yield* Fiber.join(turn.fiber)
      assert.strictEqual(last(yield* turn.seen)._tag, "TurnStopped")
      yield* eventually(() => received("tasks/cancel").length === 1, "tasks/cancel")
      const started = readRecords(record).find((r) => r.event === "started")!
      assert.deepStrictEqual(received("tasks/cancel")[0]!.params, { taskId: started.taskId })
      const calls = (yield* store.history(sessionId))[1]!.calls
      assert.deepStrictEqual(calls.map((c) => [c.callId, c.status, c.result]), [
        ["t", "cancelled", History.CANCELLED_RESULT]
      ])
    }))

  it.scopedLive("a crashing tool is an error result the model reads; the turn goes on", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* startAgent(
        [fixtureEntry("leaky", "leaky"), fixtureEntry("echo", "echo")],
        [
          Scripted.calls([
            { id: "x", name: "mcp__leaky__crash" },
            { id: "e", name: "mcp__echo__echo", params: { message: "still here" } }
          ]),
          Scripted.answer("The crash tool failed; echo worked.")
        ]
      )
      const all = yield* events(agent.run({ message: "try" }))
      const done = new Map(ofTag(all, "ToolDone").map((e) => [e.callId, e]))
      assert.strictEqual(done.get("x")?.status, "error")
      assert.match(done.get("x")!.result, /^The tool call failed: /)
      assert.include(done.get("x")!.result, "leaky")
      assert.strictEqual(done.get("e")?.status, "done")
      const end = last(all)
      assert.strictEqual(end._tag, "TurnDone")
      assert.strictEqual(end._tag === "TurnDone" ? end.rounds : 0, 2)
      const asked = yield* model.recorded
      const results = asked[1]!.prompt.content.flatMap((m) => (m.role === "tool" ? m.content : []))
      assert.deepStrictEqual(results.map((p) => [p.id, p.isFailure]), [["x", true], ["e", false]])
    }))

  it.scopedLive("a call of a tool the model was not given: the model is asked again with a note; the turn goes on", () =>
    Effect.gen(function*() {
      const { agent, model, store } = yield* startAgent(
        [fixtureEntry("echo", "echo")],
        [
          Scripted.calls([{ id: "n", name: "mcp__nobody__tool" }]),
          Scripted.calls([{ id: "e", name: "mcp__echo__echo", params: { message: "hi" } }]),
          Scripted.answer("ok")
        ]
      )
      const all = yield* events(agent.run({ message: "try" }))
      const end = last(all)
      assert.strictEqual(end._tag, "TurnDone")
      assert.strictEqual(end._tag === "TurnDone" ? end.text : "", "ok")
      // Nothing of the unreadable answer ran; the model was told which tools there are.
      assert.deepStrictEqual(ofTag(all, "ToolDone").map((e) => [e.callId, e.status]), [["e", "done"]])
      const asked = yield* model.recorded
      assert.strictEqual(asked.length, 3)
      const system = asked[1]!.prompt.content[0]!
      assert.strictEqual(system.role, "system")
      const note = system.role === "system" ? system.content : ""
      assert.include(note, "could not be used")
      assert.include(note, "mcp__echo__echo")
      // The note is for that retry only: the next request has the agent's prompt alone.
      const third = asked[2]!.prompt.content[0]!
      assert.notInclude(third.role === "system" ? third.content : "", "could not be used")
      const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
      const rows = yield* store.history(sessionId)
      assert.deepStrictEqual(rows.map((r) => r.role), ["user", "assistant", "assistant"])
      assert.isUndefined(History.problemOf(History.replay(rows)))
    }))

  it.scopedLive("an unreadable answer after the retries fails the turn; nothing of it is kept", () =>
    Effect.gen(function*() {
      const { agent, store } = yield* startAgent(
        [fixtureEntry("echo", "echo")],
        [
          Scripted.calls([{ id: "n1", name: "mcp__nobody__tool" }]),
          Scripted.calls([{ id: "n2", name: "mcp__nobody__tool" }]),
          Scripted.answer("ok")
        ],
        { malformedRetries: 1 }
      )
      const all = yield* events(agent.run({ message: "try" }))
      const end = last(all)
      assert.strictEqual(end._tag, "TurnFailed")
      assert.strictEqual(end._tag === "TurnFailed" ? end.errorTag : "", "MalformedOutput")
      const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
      assert.deepStrictEqual((yield* store.history(sessionId)).map((r) => r.role), ["user"])
      assert.strictEqual(last(yield* events(agent.run({ sessionId, message: "again" })))._tag, "TurnDone")
    }))

  it.scopedLive("arguments that are not a JSON object: the model is asked again; the turn goes on", () =>
    Effect.gen(function*() {
      const { agent, model } = yield* startAgent(
        [fixtureEntry("echo", "echo")],
        [Scripted.calls([{ id: "b", name: "mcp__echo__echo", params: [1, 2] }]), Scripted.answer("fine")]
      )
      const all = yield* events(agent.run({ message: "try" }))
      assert.strictEqual(last(all)._tag, "TurnDone")
      assert.lengthOf(ofTag(all, "ToolStarted"), 0)
      assert.strictEqual(yield* model.rounds, 2)
    }))

  it.scopedLive("an isError result is recorded error and the model reads it marked as a failure", () =>
    Effect.gen(function*() {
      const { agent, model, store } = yield* startAgent(
        [fixtureEntry("echo", "echo")],
        [
          Scripted.calls([
            { id: "f", name: "mcp__echo__fail", params: { why: "disk full" } },
            { id: "e", name: "mcp__echo__echo", params: { message: "x" } }
          ]),
          Scripted.answer("The fail tool failed.")
        ]
      )
      const all = yield* events(agent.run({ message: "try" }))
      const done = new Map(ofTag(all, "ToolDone").map((e) => [e.callId, e]))
      assert.strictEqual(done.get("f")?.status, "error")
      assert.strictEqual(done.get("f")?.result, `${History.TOOL_ERROR_PREFIX}the tool failed: disk full`)
      assert.strictEqual(done.get("e")?.status, "done")
      const asked = yield* model.recorded
      const results = asked[1]!.prompt.content.flatMap((m) => (m.role === "tool" ? m.content : []))
      assert.deepStrictEqual(results.map((p) => [p.id, p.isFailure]), [["f", true], ["e", false]])
      const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
      const calls = (yield* store.history(sessionId)).flatMap((r) => r.calls)
      assert.deepStrictEqual(calls.map((c) => [c.callId, c.status]), [["f", "error"], ["e", "done"]])
    }))

  it.scopedLive("a tool whose qualified name is over 64 characters: the provider sees a name it accepts, the rest the MCP one", () =>
    Effect.gen(function*() {
      const server = "s".repeat(60)
      const mcpName = `mcp__${server}__echo`
      let providerName = ""
      const { agent, model, store } = yield* startAgent(
        [fixtureEntry(server, "echo")],
        [
          (request) => {
            providerName = ToolNames.encode(mcpName)
            assert.include(request.tools, providerName)
            return Scripted.calls([{ id: "l", name: providerName, params: { message: "long" } }])
          },
          Scripted.answer("done"),
          Scripted.answer("again")
        ]
      )
      const all = yield* events(agent.run({ message: "try" }))
      assert.strictEqual(last(all)._tag, "TurnDone")
      const asked = yield* model.recorded
      assert.isTrue(asked[0]!.tools.every((t) => /^[a-zA-Z0-9_-]{1,64}$/.test(t)), asked[0]!.tools.join(","))
      assert.notStrictEqual(providerName, mcpName)
      const done = ofTag(all, "ToolDone")
      assert.deepStrictEqual(done.map((e) => [e.name, e.status, e.result]), [[mcpName, "done", "long"]])
      const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
      assert.deepStrictEqual((yield* store.history(sessionId)).flatMap((r) => r.calls).map((c) => c.name), [mcpName])
      // The request carries the provider's name for the call and its result, live and replayed.
      const names = (request: Scripted.Recorded) =>
        request.prompt.content.flatMap((m) =>
          m.role === "assistant" || m.role === "tool" ? m.content.flatMap((p) => ("name" in p ? [p.name] : [])) : []
        )
      assert.deepStrictEqual(names(asked[1]!), [providerName, providerName])
      yield* events(agent.run({ sessionId, message: "more" }))
      assert.deepStrictEqual(names((yield* model.recorded)[2]!), [providerName, providerName])
    }))

  it.scopedLive("the round limit ends the turn with a note, every call answered", () =>
    Effect.gen(function*() {
      const { agent, model, store } = yield* startAgent(
        [fixtureEntry("echo", "echo")],
        [
          Scripted.calls([{ id: "a", name: "mcp__echo__echo", params: { message: "1" } }]),
          Scripted.calls([{ id: "b", name: "mcp__echo__echo", params: { message: "2" } }]),
          Scripted.answer("never asked")
        ],
        { maxRounds: 2 }
      )
      const all = yield* events(agent.run({ message: "loop" }))
      const end = last(all)
      assert.strictEqual(end._tag, "TurnDone")
      if (end._tag === "TurnDone") {
        assert.strictEqual(end.rounds, 2)
        assert.include(end.note ?? "", "round limit")
      }
      assert.strictEqual(yield* model.rounds, 2)
      const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
      const replayed = History.replay(yield* store.history(sessionId))
      assert.strictEqual(History.problemOf(replayed), undefined)
      assert.deepStrictEqual(replayed.map((m) => m.role), ["user", "assistant", "tool", "assistant", "tool"])
    }))

  it.scopedLive("a result over the cap is cut with a note, and the model reads the cut one", () =>
    Effect.gen(function*() {
      const long = "x".repeat(500)
      const { agent, model } = yield* startAgent(
        [fixtureEntry("echo", "echo")],
        [Scripted.calls([{ id: "l", name: "mcp__echo__echo", params: { message: long } }]), Scripted.answer("ok")],
        { resultCap: 100 }
      )
      const all = yield* events(agent.run({ message: "long" }))
      const done = ofTag(all, "ToolDone")[0]!
      assert.isTrue(done.truncated)
      assert.isTrue(done.result.startsWith("x".repeat(100) + "\n\n[truncated: the result was 500 bytes"))
      const asked = yield* model.recorded
      const part = asked[1]!.prompt.content.flatMap((m) => (m.role === "tool" ? m.content : []))[0]
      assert.strictEqual(part?.result, done.result)
    }))

  it.scopedLive("one turn per session: a second is refused with SessionBusy; a stop keeps the partial text", () =>
    Effect.gen(function*() {
      const { agent, model, store } = yield* startAgent([], [
        Scripted.hang(Scripted.text("Half an ans")),
        Scripted.answer("second turn")
      ])
      const turn = yield* background(agent.run({ message: "first" }))
      const seen = yield* waitFor(turn.seen, (all) => ofTag(all, "TextDelta").length > 0, "the first delta")
      const sessionId = (seen[0] as TurnEvent.TurnStarted).sessionId

      const refused = yield* Effect.flip(events(agent.run({ sessionId, message: "again" })))
      assert.instanceOf(refused, SessionBusy)
      assert.strictEqual(refused.sessionId, sessionId)
      assert.notInclude(refused.message, "skald ")

      assert.isTrue(yield* agent.stop(sessionId))
      yield* Fiber.join(turn.fiber)
      const end = last(yield* turn.seen)
      assert.deepStrictEqual(end, TurnEvent.TurnStopped.make({ text: "Half an ans", finished: [], cancelled: [] }))
      const rows = yield* store.history(sessionId)
      assert.deepStrictEqual(rows.map((r) => [r.role, r.text]), [["user", "first"], ["assistant", "Half an ans"]])

      const next = yield* events(agent.run({ sessionId, message: "go on" }))
      assert.strictEqual(last(next)._tag, "TurnDone")
      assert.deepStrictEqual(
        (yield* model.recorded)[1]!.messages.slice(1),
        encoded([
          History.user("first"),
          History.assistant("Half an ans", [])!,
          History.user("go on")
        ])
      )
    }))

  it.scopedLive("a stop while the model streams keeps its text and records the calls it had made cancelled", () =>
    Effect.gen(function*() {
      const { agent, model, store } = yield* startAgent([fixtureEntry("echo", "echo")], [
        Scripted.hang([...Scripted.text("Calling"), Scripted.toolCall("s1", "mcp__echo__echo", { message: "x" })]),
        Scripted.answer("ok")
      ])
      const turn = yield* background(agent.run({ message: "hi" }))
      const seen = yield* waitFor(turn.seen, (all) => ofTag(all, "TextDelta").length > 0, "the delta")
      const sessionId = (seen[0] as TurnEvent.TurnStarted).sessionId
      assert.isTrue(yield* agent.stop(sessionId))
      yield* Fiber.join(turn.fiber)
      const all = yield* turn.seen
      assert.deepStrictEqual(
        last(all),
        TurnEvent.TurnStopped.make({ text: "Calling", finished: [], cancelled: ["s1"] })
      )
      assert.strictEqual(ofTag(all, "ToolStarted").length, 0)
      const rows = yield* store.history(sessionId)
      assert.deepStrictEqual(rows[1]!.calls.map((c) => [c.callId, c.status]), [["s1", "cancelled"]])
      yield* events(agent.run({ sessionId, message: "go on" }))
      const prompt = (yield* model.recorded)[1]!.prompt.content
      assert.strictEqual(History.problemOf(prompt), undefined)
      assert.deepStrictEqual(prompt.map((m) => m.role), ["system", "user", "assistant", "tool", "user"])
    }))

  it.scopedLive("a call's outcome that cannot be stored fails the turn at the next answer; the history stays valid", () =>
    Effect.gen(function*() {
      const { context, manager } = yield* startManager(makeHome())
      yield* Effect.orDie(manager.register(fixtureEntry("echo", "echo")))
      yield* waitForState(manager, "echo", "connected")
      // The storage refuses one call's outcome (a real SQLite error, as a full disk would give).
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* sql`CREATE TRIGGER refuse_w1 BEFORE UPDATE ON chat_llm_tools WHEN NEW.call_id = 'w1'
        BEGIN SELECT RAISE(ABORT, 'the disk is full'); END`.pipe(Effect.orDie)
      // Each answer after the first streams for a while after its first part, as a model's does:
      // the writer writes the last round's outcomes in that time.
      const echo = (id: string) => {
        const [first, ...rest] = Scripted.calls([{ id, name: "mcp__echo__echo", params: { message: id } }])
        return id === "w1" ? [first!, ...rest] : Stream.concat(
          Stream.make(first!),
          Stream.fromEffect(Effect.sleep("200 millis")).pipe(Stream.drain, Stream.concat(Stream.fromIterable(rest)))
        )
      }
      const { agent, model, store } = yield* agentOver(context, [
        echo("w1"),
        echo("w2"),
        echo("w3"),
        echo("w4"),
        echo("w5"),
        Scripted.answer("all done")
      ])
      const all = yield* events(agent.run({ message: "go" }))
      const end = last(all)
      assert.strictEqual(end._tag, "TurnFailed")
      if (end._tag === "TurnFailed") assert.include(end.message, "record a tool call's result")
      // Found after the answer that follows the write (written while it streams), not at the turn's end.
      assert.isAtMost((yield* model.recorded).length, 3)
      const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
      const rows = yield* store.history(sessionId)
      assert.notInclude(rows.map((r) => r.text), "all done")
      assert.strictEqual(rows[1]?.calls[0]?.callId, "w1")
      assert.strictEqual(rows[1]?.calls[0]?.status, "running")
      // Replayed, the unfinished call has a result (the host's note), so the next turn can be sent.
      yield* sql`DROP TRIGGER refuse_w1`.pipe(Effect.orDie)
      yield* events(agent.run({ sessionId, message: "again" })).pipe(Effect.ignore)
      const prompt = last(yield* model.recorded).prompt.content
      assert.strictEqual(History.problemOf(prompt), undefined)
    }))

  it.scopedLive("an error part in the model's stream ends the turn with TurnFailed", () =>
    Effect.gen(function*() {
      const { agent } = yield* startAgent([], [[...Scripted.text("Hm"), {
        type: "error",
        error: { message: "overloaded" }
      }]])
      const end = last(yield* events(agent.run({ message: "hi" })))
      assert.strictEqual(end._tag, "TurnFailed")
      if (end._tag === "TurnFailed") {
        assert.strictEqual(end.errorTag, "ModelStreamError")
        assert.include(end.message, "overloaded")
      }
    }))

  it.scopedLive("interrupting the stream of events stops the turn and frees the session", () =>
    Effect.gen(function*() {
      const { agent, store } = yield* startAgent([], [Scripted.hang(Scripted.text("partial")), Scripted.answer("ok")])
      const firstTwo = yield* agent.run({ message: "hi" }).pipe(Stream.take(2), Stream.runCollect)
      const sessionId = (Chunk.unsafeGet(firstTwo, 0) as TurnEvent.TurnStarted).sessionId
      assert.isFalse(yield* agent.isBusy(sessionId))
      const rows = yield* store.history(sessionId)
      assert.deepStrictEqual(rows.map((r) => [r.role, r.text]), [["user", "hi"], ["assistant", "partial"]])
      assert.strictEqual(last(yield* events(agent.run({ sessionId, message: "again" })))._tag, "TurnDone")
    }))

  it.scopedLive("a failing model ends the turn with TurnFailed and frees the session", () =>
    Effect.gen(function*() {
      const { agent, store } = yield* startAgent([], [
        Scripted.fail("the model server answered 503"),
        Scripted.answer("ok")
      ])
      const all = yield* events(agent.run({ message: "hi" }))
      const end = last(all)
      assert.strictEqual(end._tag, "TurnFailed")
      if (end._tag === "TurnFailed") {
        assert.strictEqual(end.errorTag, "UnknownError")
        assert.include(end.message, "503")
      }
      const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
      assert.deepStrictEqual((yield* store.history(sessionId)).map((r) => r.role), ["user"])
      assert.strictEqual(last(yield* events(agent.run({ sessionId, message: "again" })))._tag, "TurnDone")
    }))

  it.scopedLive("a model that fails after a round of calls: the turn fails, the finished calls' results are stored", () =>
    Effect.gen(function*() {
      // A call's result is written while the next answer streams (docs/agent.md); a next request
      // that fails before any answer still leaves it stored, `done`, when the turn has ended.
      const { agent, store } = yield* startAgent([fixtureEntry("echo", "echo")], [
        Scripted.calls([{ id: "e1", name: "mcp__echo__echo", params: { message: "kept" } }]),
        Scripted.fail("the model server answered 503")
      ])
      const all = yield* events(agent.run({ message: "hi" }))
      assert.strictEqual(last(all)._tag, "TurnFailed")
      const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
      const rows = yield* store.history(sessionId)
      assert.deepStrictEqual(rows.map((r) => r.role), ["user", "assistant"])
      assert.deepStrictEqual(rows[1]!.calls.map((c) => [c.callId, c.status]), [["e1", "done"]])
      assert.include(rows[1]!.calls[0]!.result ?? "", "kept")
    }))

  it.scopedLive("the agent's prompt comes from its AGENT.md; an unknown agent or session is refused", () =>
    Effect.gen(function*() {
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-agents-"))
      Fs.mkdirSync(Path.join(dir, "pirate"))
      Fs.writeFileSync(Path.join(dir, "pirate", "AGENT.md"), "Talk like a pirate.")
      const { agent, model, store } = yield* startAgent([], [Scripted.answer("Arr.")], { agentsDir: dir })
      const all = yield* events(agent.run({ agent: "pirate", message: "hello" }))
      const sessionId = (all[0] as TurnEvent.TurnStarted).sessionId
      assert.deepStrictEqual(
        (yield* model.recorded)[0]!.messages[0],
        encoded([History.system("Talk like a pirate.")])[0]
      )
      const session = yield* store.getSession(sessionId)
      assert.strictEqual(session._tag === "Some" ? session.value.agent : "", "pirate")
      assert.strictEqual(session._tag === "Some" ? session.value.title : "", "hello")

      const unknown = yield* Effect.flip(events(agent.run({ agent: "main", message: "hi" })))
      assert.instanceOf(unknown, UnknownAgent)
      assert.include(unknown.message, Path.join(dir, "main", "AGENT.md"))
      assert.instanceOf(yield* Effect.flip(events(agent.run({ agent: "../etc", message: "hi" }))), UnknownAgent)
      assert.instanceOf(
        yield* Effect.flip(events(agent.run({ sessionId: "no-such-session", message: "hi" }))),
        UnknownSession
      )
      // Nothing was created for the refused runs.
      assert.strictEqual((yield* store.listSessions).length, 1)
    }))
})
