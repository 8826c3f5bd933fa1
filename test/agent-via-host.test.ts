/**
 * `skald agent run` and `skald chat` through the running host (issue 22, point 4): with a `skald
 * serve` for the home, the real binary's turn is `Agent.Send` over the host's RPC (the host's
 * model, servers, rules and inbox; the session is the host's), and the approvals of its own
 * session are answered by `--approve allow|deny`, or inline on a terminal in `chat`; the question
 * of a server its turn calls is asked inline on a terminal (masked), else it waits in the host's
 * inbox and `skald inbox answer` answers it. Without a host the turn runs in this process, and
 * `--verbose` says which path was taken.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { runSkald, spawnTty } from "./cli-support.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { makeHome } from "./host-support.js"
import { addFixture, hostClient, modelEnv, openVaultOnTerminal, serve, vaultScript } from "./serve-support.js"
import { eventually, eventuallyEffect, tempFile } from "./support.js"

/** A home with the echo fixture registered (its tool is not read-only: it asks), served with the stand-in model. */
const servedHome = (standin: ModelStandin.ModelStandin, name = "echo", options: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const home = makeHome()
    yield* addFixture(home, name, name === "echo" ? "echo" : "elicit", options)
    const host = yield* serve(home, modelEnv(standin.url))
    const client = yield* hostClient(home, host.url, name)
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
        const chat = yield* spawnTty(["--home", home], {})
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

  it.scopedLive(
    "chat on a terminal: the question of the server its turn calls is asked inline, masked",
    () =>
      Effect.gen(function*() {
        const secret = "via-host-secret-51d0"
        const record = tempFile("via-host")
        const standin = yield* ModelStandin.start(vaultScript("Opened."))
        const { client, home } = yield* servedHome(standin, "vault", [
          "--env",
          `FIXTURE_RECORD=${record}`,
          "--secret-env",
          `EXPECTED_SECRET=${secret}`
        ])
        yield* openVaultOnTerminal(["--home", home, "--approve", "allow"], {}, secret, record)
        assert.deepStrictEqual(yield* client.Inbox.List(), [])
      }),
    180_000
  )

  it.scopedLive(
    "agent run without a terminal: its server's question waits in the host's inbox; skald inbox answer",
    () =>
      Effect.gen(function*() {
        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["asker"] } }]),
          ModelStandin.toolCalls([{ id: "q1", name: "mcp__asker__ask_slowly", arguments: {} }]),
          ModelStandin.text("Asked.")
        ])
        const { client, home } = yield* servedHome(standin, "asker")
        const run = yield* Effect.fork(
          Effect.promise(() => runSkald(["agent", "run", "--home", home, "--approve", "allow", "ask me"]))
        )
        const items = yield* eventuallyEffect(
          client.Inbox.List(),
          (all) => all.some((i) => i._tag === "Elicitation"),
          "the question in the host's inbox",
          "60 seconds"
        )
        const question = items.find((i) => i._tag === "Elicitation")!
        const answered = yield* Effect.promise(() =>
          runSkald(["inbox", "answer", question.id, "--accept", "--home", home])
        )
        assert.strictEqual(answered.status, 0, answered.stderr)
        const done = yield* Fiber.join(run)
        assert.strictEqual(done.status, 0, done.stderr)
        assert.strictEqual(done.stdout, "Asked.\n")
        assert.include(done.stderr, "skald: it waits in the host's inbox")
        assert.include(done.stderr, `skald inbox answer ${question.id}`)
        assert.include(done.stderr, "skald: tool mcp__asker__ask_slowly {} → done")
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
