/**
 * `skald sessions list|show|rm` with the real binary, over a home whose chat tables were written
 * by the chat store (a real SQLite file).
 */
import { assert, describe, it } from "@effect/vitest"
import { ToolResult } from "@skald/domain"
import { ChatStore } from "@skald/server/agent/ChatStore"
import * as History from "@skald/server/agent/History"
import { Context, Effect, Layer } from "effect"
import { runSkald } from "./cli-support.js"
import { makeHome, servicesLayer } from "./host-support.js"

const skald = (home: string, args: ReadonlyArray<string>) => Effect.promise(() => runSkald([...args, "--home", home]))

/** A home with one session: a user message, an assistant message with two calls (json, cancelled), an answer. */
const seeded = Effect.gen(function*() {
  const home = makeHome()
  const store = yield* Effect.scoped(Effect.gen(function*() {
    const built = yield* Layer.build(ChatStore.Default.pipe(Layer.provide(servicesLayer(home))))
    const store = Context.get(built, ChatStore)
    const session = yield* store.createSession({ agent: "main" })
    yield* store.append(session.id, { role: "user", text: "weather in Paris?", calls: [] })
    const assistant = History.assistant("Let me look.", [
      { id: "c1", name: "mcp__weather__weather", params: { city: "Paris" } },
      { id: "c2", name: "mcp__cancel__wait", params: {} }
    ])!
    const id = yield* store.append(session.id, History.rowOf(assistant))
    const value = { city: "Paris", temperature: 21.5 }
    yield* store.finishCall(id, "c1", {
      status: "done",
      ...History.capResult(ToolResult.JsonResult.make({ value }), 1000)
    })
    yield* store.cancelRunning(id, History.CANCELLED_RESULT)
    yield* store.append(session.id, { role: "assistant", text: "It is 21.5 °C.", calls: [] })
    // A sub-agent it dispatched, with its own transcript.
    const sub = yield* store.createSession({ agent: "helper", title: "look it up", parent: session.id })
    yield* store.append(sub.id, { role: "user", text: "look it up", calls: [] })
    return { id: session.id, subId: sub.id }
  }))
  return { home, id: store.id, subId: store.subId }
})

describe("skald sessions", () => {
  it.live("list, show (text and --json) and rm", () =>
    Effect.gen(function*() {
      const { home, id, subId } = yield* seeded

      const list = yield* skald(home, ["sessions", "list"])
      assert.strictEqual(list.status, 0, list.stderr)
      assert.match(list.stdout, new RegExp(`^${id}  main  \\d{4}-\\d\\d-\\d\\dT`))
      const listJson = yield* skald(home, ["sessions", "list", "--json"])
      const sessions = JSON.parse(listJson.stdout) as Array<{ id: string; agent: string }>
      assert.deepStrictEqual(sessions.map((s) => [s.id, s.agent]), [[id, "main"]])

      const show = yield* skald(home, ["sessions", "show", id])
      assert.strictEqual(show.status, 0, show.stderr)
      assert.include(show.stdout, "user: weather in Paris?")
      assert.include(show.stdout, `  tool mcp__weather__weather {"city":"Paris"} → done`)
      assert.include(show.stdout, `    {"city":"Paris","temperature":21.5}`)
      assert.include(show.stdout, "  tool mcp__cancel__wait {} → cancelled")
      assert.include(show.stdout, "assistant: It is 21.5 °C.")
      // The sub-agent's session: not listed above, shown under its parent, which it names.
      assert.include(show.stdout, `\n\nsub-agent sessions (skald sessions show ID):\n  ${subId}  helper  `)
      const showSub = yield* skald(home, ["sessions", "show", subId])
      assert.strictEqual(showSub.status, 0, showSub.stderr)
      assert.include(showSub.stdout, `a sub-agent's session, dispatched from session ${id}`)
      assert.include(showSub.stdout, "user: look it up")

      const showJson = yield* skald(home, ["sessions", "show", "--json", id])
      const shown = JSON.parse(showJson.stdout)
      assert.strictEqual(shown.session.id, id)
      assert.deepStrictEqual(shown.subAgents.map((sub: { id: string; parent: string }) => [sub.id, sub.parent]), [[
        subId,
        id
      ]])
      assert.deepStrictEqual(shown.messages.map((m: { role: string }) => m.role), ["user", "assistant", "assistant"])
      assert.deepStrictEqual(shown.messages[1].calls[0], {
        callId: "c1",
        name: "mcp__weather__weather",
        arguments: { city: "Paris" },
        status: "done",
        result: `{"city":"Paris","temperature":21.5}`,
        resultType: "json"
      })

      const rm = yield* skald(home, ["sessions", "rm", id])
      assert.strictEqual(rm.status, 0, rm.stderr)
      assert.include(rm.stderr, `removed session ${id}`)
      assert.strictEqual((yield* skald(home, ["sessions", "list"])).stdout, "")
      // Its sub-agent's session went with it.
      assert.strictEqual((yield* skald(home, ["sessions", "show", subId])).status, 2)
    }))

  it.live("an unknown session is a usage error (exit 2) saying where to look", () =>
    Effect.gen(function*() {
      const home = makeHome()
      for (const args of [["sessions", "show", "nope"], ["sessions", "rm", "nope"]]) {
        const r = yield* skald(home, args)
        assert.strictEqual(r.status, 2)
        assert.strictEqual(r.stdout, "")
        assert.match(r.stderr, /^skald: no chat session has the id nope; see `skald sessions list`/)
      }
    }))
})
