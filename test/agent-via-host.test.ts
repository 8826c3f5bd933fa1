/**
 * `skald agent run` and `skald chat` through the running host (issue 22, point 4): with a `skald
 * serve` for the home, the real binary's turn is `Agent.Send` over the host's RPC (the host's
 * model, servers, rules and inbox; the session is the host's), and the approvals of its own
 * session are answered by `--approve allow|deny`, or inline on a terminal in `chat`. Without a
 * host the turn runs in this process, and `--verbose` says which path was taken.
 */
import { assert, describe, it } from "@effect/vitest"
import * as RpcHost from "@skald/server/cli/RpcHost"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runSkald, spawnTty, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { makeHome } from "./host-support.js"
import { eventually, eventuallyEffect } from "./support.js"

/** A home with the echo fixture registered (its tool is not read-only: it asks), served with the stand-in model. */
const servedHome = (standin: ModelStandin.ModelStandin) =>
  Effect.gen(function*() {
    const home = makeHome()
    const echo = fixture("echo")
    const added = yield* Effect.promise(() =>
      runSkald(["mcp", "add", "echo", "--home", home, "--", echo.command, ...echo.args])
    )
    assert.strictEqual(added.status, 0, added.stderr)
    const env = { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" }
    const host = yield* Effect.acquireRelease(
      Effect.promise(() => startServe(home, env)),
      (s) => Effect.promise(() => stopProcess(s.child))
    )
    const address = Path.join(home, "data", "host.json")
    yield* eventuallyEffect(Effect.sync(() => Fs.existsSync(address)), (ok) => ok, "the host's address", "60 seconds")
    const client = yield* RpcHost.connectTo(host.url, undefined)
    yield* eventuallyEffect(
      client.Mcp.List(),
      (all) => all.some((s) => s.name === "echo" && s.state === "connected"),
      "echo to connect",
      "60 seconds"
    )
    return { home, host, client }
  })

describe("skald agent run / chat through the running host", () => {
  it.scopedLive(
    "agent run: the turn runs in the host; --approve allow, then deny, answers its own approvals",
    () =>
      Effect.gen(function*() {
        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["echo"] } }]),
          ModelStandin.toolCalls([{ id: "c1", name: "mcp__echo__echo", arguments: { message: "via host" } }]),
          ModelStandin.text("Echoed."),
          ModelStandin.toolCalls([{ id: "c2", name: "mcp__echo__echo", arguments: { message: "again" } }]),
          ModelStandin.text("Refused.")
        ])
        const { client, home, host } = yield* servedHome(standin)
        // No model in this process's environment: only the host has one.
        const allowed = yield* Effect.promise(() =>
          runSkald(["agent", "run", "--home", home, "--approve", "allow", "--verbose", "echo it"])
        )
        assert.strictEqual(allowed.status, 0, allowed.stderr)
        assert.strictEqual(allowed.stdout, "Echoed.\n")
        assert.include(allowed.stderr, `skald: via the host at ${host.url}`)
        assert.include(allowed.stderr, `skald: tool mcp__echo__echo {"message":"via host"} → done`)
        const sessionId = /session: (\S+)/.exec(allowed.stderr)![1]!
        // The session is the host's, and the host's inbox holds nothing: the approval was answered.
        const sessions = yield* client.Agent.Sessions()
        assert.deepStrictEqual(sessions.map((s) => s.id), [sessionId])
        assert.deepStrictEqual(yield* client.Inbox.List(), [])

        const denied = yield* Effect.promise(() =>
          runSkald(["agent", "run", "--home", home, "--approve", "deny", "--session", sessionId, "once more"])
        )
        assert.strictEqual(denied.status, 0, denied.stderr)
        assert.strictEqual(denied.stdout, "Refused.\n")
        assert.include(denied.stderr, `skald: tool mcp__echo__echo {"message":"again"} → denied`)
        assert.include(denied.stderr, "skald: denied (did not run): mcp__echo__echo")
        const history = yield* client.Agent.History({ sessionId })
        assert.deepStrictEqual(history.messages.flatMap((m) => m.calls.map((c) => [c.name, c.status])), [
          ["activate_tools", "done"],
          ["mcp__echo__echo", "done"],
          ["mcp__echo__echo", "denied"]
        ])
      }),
    180_000
  )

  it.scopedLive(
    "chat on a terminal: the host's approval of this session is asked inline and answered",
    () =>
      Effect.gen(function*() {
        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["echo"] } }]),
          ModelStandin.toolCalls([{ id: "c1", name: "mcp__echo__echo", arguments: { message: "inline" } }]),
          ModelStandin.text("Done inline.")
        ])
        const { client, home, host } = yield* servedHome(standin)
        const chat = spawnTty(["--home", home], {})
        yield* Effect.addFinalizer(() => Effect.sync(() => chat.child.kill("SIGKILL")))
        yield* eventually(() => chat.output().includes("> "), "the prompt", "30 seconds")
        assert.include(chat.output(), `skald: via the host at ${host.url}`)
        chat.child.stdin.write("echo inline\r")
        yield* eventually(
          () => chat.output().includes("approve mcp__echo__echo?"),
          "the approval question",
          "30 seconds"
        )
        assert.lengthOf(yield* client.Inbox.List(), 1)
        chat.child.stdin.write("y\r")
        yield* eventually(() => chat.output().includes("Done inline."), "the turn's end", "30 seconds")
        yield* eventually(() => chat.output().split("> ").length - 1 >= 2, "the prompt again")
        chat.child.stdin.write("\x04")
        assert.strictEqual(yield* Effect.promise(() => chat.exited), 0, chat.output())
        assert.include(chat.output(), "inline")
        const [session] = yield* client.Agent.Sessions()
        const history = yield* client.Agent.History({ sessionId: session!.id })
        assert.deepStrictEqual(history.messages.flatMap((m) => m.calls.map((c) => [c.name, c.status])), [
          ["activate_tools", "done"],
          ["mcp__echo__echo", "done"]
        ])
      }),
    180_000
  )

  it.live("no host for the home: in this process, said with --verbose", () =>
    Effect.gen(function*() {
      const home = makeHome()
      const run = yield* Effect.promise(() => runSkald(["agent", "run", "--home", home, "--verbose", "hello"]))
      assert.include(run.stderr, "skald: in this process (no `skald serve` runs for this home)")
      assert.notInclude(run.stderr, "via the host")
      const quiet = yield* Effect.promise(() => runSkald(["agent", "run", "--home", home, "hello"]))
      assert.notInclude(quiet.stderr, "in this process")
    }), 60_000)
})
