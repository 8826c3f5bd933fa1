/**
 * `skald agent run` and `skald chat` through the real binary on a temp home, against model servers
 * we did not write (`@copilotkit/aimock`, over loopback, speaking OpenAI chat-completions and the
 * Anthropic Messages API) and an MCP fixture server registered with `skald mcp add`: a two-round
 * tool loop with parallel calls, usage in `--json`'s TurnDone, the calls in `skald sessions show`.
 * Against the OpenAI stand-in: a hanging tool and a hanging stream stopped by SIGINT (exit 130, the
 * MCP server gets `notifications/cancelled`, the stand-in sees the abort, the history is valid).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { root, runSkald, skald as skaldBin, spawnTty, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { makeHome, until } from "./host-support.js"
import { eventually, readRecords, tempFile } from "./support.js"
import { aimock } from "./support/aimock.js"

/** A home with the fixture server `name` registered (`skald mcp add`). */
const homeWith = (name: string, fixtureName: string, env: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const home = makeHome()
    const f = fixture(fixtureName)
    const envArgs = Object.entries(env).flatMap(([k, v]) => ["--env", `${k}=${v}`])
    const added = await runSkald(["mcp", "add", name, "--home", home, ...envArgs, "--", f.command, ...f.args])
    assert.strictEqual(added.status, 0, added.stderr)
    return home
  })

const skald = (args: ReadonlyArray<string>, env: Record<string, string>, input?: string) =>
  Effect.promise(() => runSkald(args, { env, ...(input === undefined ? {} : { input }) }))

type Json = Record<string, any>

const lines = (text: string): Array<Json> =>
  text.trim().split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l) as Json)

const providers = [
  {
    provider: "openai",
    base: (url: string) => `${url}/v1`,
    usage: (input: number, output: number) => ({ prompt_tokens: input, completion_tokens: output })
  },
  {
    provider: "anthropic",
    base: (url: string) => url,
    usage: (input: number, output: number) => ({ input_tokens: input, output_tokens: output })
  }
] as const

describe("skald agent run / chat against aimock", () => {
  for (const p of providers) {
    it.scopedLive(
      `${p.provider}: a two-round tool loop with parallel calls, usage, the calls in sessions show`,
      () =>
        Effect.gen(function*() {
          const mock = yield* aimock
          mock.onToolResult("call_b", { content: "Both echoed.", usage: p.usage(60, 4) })
          mock.onToolResult("act_1", {
            toolCalls: [
              { id: "call_a", name: "mcp__echo__echo", arguments: JSON.stringify({ message: "one" }) },
              { id: "call_b", name: "mcp__echo__echo", arguments: JSON.stringify({ message: "two" }) }
            ],
            usage: p.usage(40, 7)
          })
          // Lazy loading: the server's tools are offered once the model activated them.
          mock.onMessage("echo two things", {
            toolCalls: [{ id: "act_1", name: "activate_tools", arguments: JSON.stringify({ groups: ["echo"] }) }],
            usage: p.usage(0, 0)
          })
          const home = yield* homeWith("echo", "echo")
          const env = {
            SKALD_LLM_PROVIDER: p.provider,
            SKALD_LLM_BASE_URL: p.base(mock.url),
            SKALD_LLM_MODEL: "test-model",
            SKALD_LLM_API_KEY: "sk-test-not-a-real-key"
          }
          const run = yield* skald(
            ["agent", "run", "--approve", "allow", "--home", home, "please echo two things"],
            env
          )
          assert.strictEqual(run.status, 0, run.stderr)
          assert.strictEqual(run.stdout, "Both echoed.\n")
          const session = /^session: (\S+)$/m.exec(run.stderr)?.[1]
          assert.isDefined(session, run.stderr)
          assert.include(run.stderr, `skald: tool mcp__echo__echo {"message":"one"} → done`)
          assert.include(run.stderr, `skald: tool mcp__echo__echo {"message":"two"} → done`)
          assert.notInclude(run.stderr + run.stdout, "sk-test-not-a-real-key")

          const show = yield* skald(["sessions", "show", "--json", "--home", home, session!], {})
          assert.strictEqual(show.status, 0, show.stderr)
          const calls = (JSON.parse(show.stdout) as Json).messages.flatMap((m: Json) => m.calls) as Array<Json>
          assert.deepStrictEqual(
            calls.map((c) => [c.callId, c.name, c.status, c.name === "activate_tools" ? "" : c.result, c.resultType]),
            [
              ["act_1", "activate_tools", "done", "", "string"],
              ["call_a", "mcp__echo__echo", "done", "one", "string"],
              ["call_b", "mcp__echo__echo", "done", "two", "string"]
            ]
          )

          // --json on a new session: every event a line, usage summed over both rounds.
          const json = yield* skald([
            "agent",
            "run",
            "--approve",
            "allow",
            "--json",
            "--home",
            home,
            "please echo two things"
          ], env)
          assert.strictEqual(json.status, 0, json.stderr)
          const events = lines(json.stdout)
          assert.strictEqual(events[0]!._tag, "TurnStarted")
          assert.deepStrictEqual(
            events.filter((e) => e._tag === "ToolDone" && e.name !== "activate_tools").map((e) => e.result),
            ["one", "two"]
          )
          const end = events[events.length - 1]!
          assert.strictEqual(end._tag, "TurnDone")
          assert.deepStrictEqual([end.text, end.rounds, end.usage], ["Both echoed.", 3, {
            inputTokens: 100,
            outputTokens: 11
          }])
          assert.notInclude(json.stderr, "skald: tool ")
        }),
      120_000
    )
  }

  it.scopedLive(
    "chat without a terminal: one message per line, each a turn of the same session",
    () =>
      Effect.gen(function*() {
        const mock = yield* aimock
        mock.onMessage("first question", { content: "First answer." })
        mock.onToolResult("call_c", { content: "Echoed it." })
        mock.onToolResult("act_c", {
          toolCalls: [{ id: "call_c", name: "mcp__echo__echo", arguments: JSON.stringify({ message: "card" }) }]
        })
        mock.onMessage("second question", {
          toolCalls: [{ id: "act_c", name: "activate_tools", arguments: JSON.stringify({ groups: ["echo"] }) }]
        })
        const home = yield* homeWith("echo", "echo")
        const env = { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: `${mock.url}/v1`, SKALD_LLM_MODEL: "m" }
        const chat = yield* skald(
          ["chat", "--approve", "allow", "--home", home],
          env,
          "first question\n\nsecond question\n"
        )
        assert.strictEqual(chat.status, 0, chat.stderr)
        assert.include(chat.stdout, "First answer.")
        assert.include(chat.stdout, "┌ tool mcp__echo__echo\n│ {\n│   \"message\": \"card\"\n│ }\n├ done\n│ card\n└")
        assert.include(chat.stdout, "Echoed it.")
        const list = yield* skald(["sessions", "list", "--json", "--home", home], {})
        const sessions = JSON.parse(list.stdout) as Array<Json>
        assert.lengthOf(sessions, 1)
        const show = yield* skald(["sessions", "show", "--json", "--home", home, sessions[0]!.id], {})
        const roles = (JSON.parse(show.stdout) as Json).messages.map((m: Json) => m.role)
        // The second turn: activate_tools, the echo call, the answer.
        assert.deepStrictEqual(roles, ["user", "assistant", "user", "assistant", "assistant", "assistant"])
      }),
    120_000
  )

  it.scopedLive(
    "garbage from the model (arguments not JSON, a tool it was not given): asked again, the turn goes on",
    () =>
      Effect.gen(function*() {
        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls([{ id: "g0", name: "activate_tools", arguments: { groups: ["echo"] } }]),
          ModelStandin.toolCalls([{ id: "g1", name: "mcp__echo__echo", arguments: "{\"message\": \"unterminated" }]),
          ModelStandin.toolCalls([{ id: "g2", name: "mcp__nobody__nothing", arguments: {} }]),
          ModelStandin.toolCalls([{ id: "g3", name: "mcp__echo__echo", arguments: { message: "fine" } }]),
          ModelStandin.text(["Recovered."])
        ])
        const home = yield* homeWith("echo", "echo")
        const env = { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" }
        const run = yield* skald(["agent", "run", "--approve", "allow", "--home", home, "try things"], env)
        assert.strictEqual(run.status, 0, run.stderr)
        assert.strictEqual(run.stdout, "Recovered.\n")
        assert.include(run.stderr, `skald: tool mcp__echo__echo {"message":"fine"} → done`)
        assert.lengthOf(standin.requests, 5)
        const system = (i: number) => String(standin.requests[i]!.body.messages[0].content)
        assert.notInclude(system(1), "could not be used")
        for (const i of [2, 3]) {
          assert.include(system(i), "your previous answer could not be used")
          assert.include(system(i), "mcp__echo__echo")
        }
        assert.notInclude(system(4), "could not be used")
        // Only the readable call was stored.
        const session = /^session: (\S+)$/m.exec(run.stderr)![1]!
        const show = yield* skald(["sessions", "show", "--json", "--home", home, session], {})
        const calls = (JSON.parse(show.stdout) as Json).messages.flatMap((m: Json) => m.calls) as Array<Json>
        assert.deepStrictEqual(calls.map((c) => [c.callId, c.status]), [["g0", "done"], ["g3", "done"]])
      }),
    120_000
  )

  it.scopedLive("no model configured: exit 2 with the settings' message", () =>
    Effect.gen(function*() {
      const home = makeHome()
      const run = yield* skald(["agent", "run", "--home", home, "hi"], { SKALD_LLM_MODEL: "" })
      assert.strictEqual(run.status, 2)
      assert.include(run.stderr, "no model is configured")
      const bad = yield* skald(["agent", "run", "--home", home, "hi"], {
        SKALD_LLM_PROVIDER: "bogus",
        SKALD_LLM_MODEL: "m"
      })
      assert.strictEqual(bad.status, 2)
      assert.include(bad.stderr, "the environment variable SKALD_LLM_PROVIDER cannot be used")
    }), 60_000)
})

/** Starts `skald agent run` and gives its process and output so far. */
const spawnRun = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, [skaldBin, "agent", "run", "--approve", "allow", ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  let err = ""
  child.stdout.on("data", (d: Buffer) => (out += d.toString()))
  child.stderr.on("data", (d: Buffer) => (err += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, stdout: () => out, stderr: () => err, exited }
}

describe("skald agent run: Ctrl-C", () => {
  it.scopedLive(
    "a hanging tool: SIGINT stops the turn, the server gets notifications/cancelled, exit 130",
    () =>
      Effect.gen(function*() {
        const record = tempFile("cli-agent-cancel")
        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls([{ id: "w0", name: "activate_tools", arguments: { groups: ["cancel"] } }]),
          ModelStandin.toolCalls([{ id: "w1", name: "mcp__cancel__wait", arguments: {} }])
        ])
        const home = yield* homeWith("cancel", "cancel", { FIXTURE_RECORD: record })
        const env = { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" }
        const run = spawnRun(["--json", "--home", home, "wait for it"], env)
        yield* eventually(() => readRecords(record).some((r) => r.event === "started"), "the wait call started")
        run.child.kill("SIGINT")
        const status = yield* Effect.promise(() => run.exited)
        assert.strictEqual(status, 130, run.stderr())
        yield* eventually(() => readRecords(record).some((r) => r.event === "cancelled"), "notifications/cancelled")
        const events = lines(run.stdout())
        const end = events[events.length - 1]!
        assert.strictEqual(end._tag, "TurnStopped")
        assert.deepStrictEqual(end.cancelled, ["w1"])
        const session = events[0]!.sessionId as string
        const show = yield* skald(["sessions", "show", "--json", "--home", home, session], {})
        const calls = (JSON.parse(show.stdout) as Json).messages.flatMap((m: Json) => m.calls) as Array<Json>
        assert.deepStrictEqual(calls.map((c) => [c.callId, c.status]), [["w0", "done"], ["w1", "cancelled"]])
      }),
    120_000
  )

  it.scopedLive(
    "a hanging model stream: SIGINT aborts the request (the stand-in sees it), exit 130",
    () =>
      Effect.gen(function*() {
        const standin = yield* ModelStandin.start([ModelStandin.hanging(["Hel"])])
        const home = yield* homeWith("echo", "echo")
        const env = { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" }
        const run = spawnRun(["--json", "--home", home, "say hello"], env)
        yield* eventually(() => run.stdout().includes("\"TextDelta\""), "the first text delta")
        run.child.kill("SIGINT")
        const status = yield* Effect.promise(() => run.exited)
        assert.strictEqual(status, 130, run.stderr())
        yield* standin.awaitAborted(0)
        const events = lines(run.stdout())
        const end = events[events.length - 1]!
        assert.strictEqual(end._tag, "TurnStopped")
        assert.strictEqual(end.text, "Hel")
        const show = yield* skald(["sessions", "show", "--json", "--home", home, events[0]!.sessionId], {})
        const rows = (JSON.parse(show.stdout) as Json).messages as Array<Json>
        assert.deepStrictEqual(rows.map((m) => [m.role, m.text]), [["user", "say hello"], ["assistant", "Hel"]])
      }),
    120_000
  )
})

describe("skald chat on a terminal", () => {
  it.scopedLive("Ctrl-C stops the running turn and gives the prompt back; Ctrl-D exits", () =>
    Effect.gen(function*() {
      const standin = yield* ModelStandin.start([ModelStandin.hanging(["Thinking"]), ModelStandin.text(["Second."])])
      const home = yield* homeWith("echo", "echo")
      const env = { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" }
      const chat = yield* spawnTty(["--home", home], env)
      const prompts = () => chat.output().split("> ").length - 1
      yield* eventually(() => prompts() >= 1, "the prompt", "30 seconds")
      chat.child.stdin.write("first\r")
      yield* eventually(() => chat.output().includes("Thinking"), "the streamed text", "30 seconds")
      chat.child.stdin.write("\x03")
      yield* standin.awaitAborted(0)
      yield* eventually(() => chat.output().includes("(stopped)") && prompts() >= 2, "stopped, a new prompt")
      chat.child.stdin.write("second\r")
      yield* eventually(() => chat.output().includes("Second."), "the second answer")
      yield* eventually(() => prompts() >= 3, "a third prompt")
      chat.child.stdin.write("\x04")
      assert.strictEqual(yield* Effect.promise(() => chat.exited), 0, chat.output())
      // Both turns in one session; the stopped one kept its text.
      const list = yield* skald(["sessions", "list", "--json", "--home", home], {})
      const sessions = JSON.parse(list.stdout) as Array<Json>
      assert.lengthOf(sessions, 1)
      const show = yield* skald(["sessions", "show", "--json", "--home", home, sessions[0]!.id], {})
      const rows = (JSON.parse(show.stdout) as Json).messages as Array<Json>
      assert.deepStrictEqual(rows.map((m) => [m.role, m.text]), [
        ["user", "first"],
        ["assistant", "Thinking"],
        ["user", "second"],
        ["assistant", "Second."]
      ])
    }), 120_000)
})

describe("skald chat: a server's prompt as a /command", () => {
  it.scopedLive(
    "/help lists the prompts; /SERVER:PROMPT name=value sends its messages as the user's turn",
    () =>
      Effect.gen(function*() {
        const standin = yield* ModelStandin.start([ModelStandin.text(["Sunny."])])
        const home = makeHome()
        const everything = [
          process.execPath,
          Path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
          "stdio"
        ]
        const added = yield* skald(["mcp", "add", "ev", "--home", home, "--", ...everything], {})
        assert.strictEqual(added.status, 0, added.stderr)
        const env = { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" }
        const chat = yield* spawnTty(["--home", home], env)
        const prompts = () => chat.output().split("> ").length - 1
        yield* eventually(() => prompts() >= 1, "the prompt", "30 seconds")
        chat.child.stdin.write("/help\r")
        yield* eventually(
          () => chat.output().includes("/ev:args-prompt city=… (required) state=…"),
          "the prompts listed",
          "30 seconds"
        )
        assert.include(chat.output(), "/ev:simple-prompt")
        chat.child.stdin.write("/ev:args-prompt\r")
        yield* eventually(() => chat.output().includes("/ev:args-prompt needs city=…"), "the missing argument said")
        chat.child.stdin.write("/ev:nope\r")
        yield* eventually(() => chat.output().includes("ev has no prompt \"nope\""), "an unknown prompt said")
        chat.child.stdin.write("/ev:args-prompt city=\"New York\" state=NY\r")
        yield* eventually(() => chat.output().includes("Sunny."), "the answer")
        yield* eventually(() => prompts() >= 5, "the next prompt")
        chat.child.stdin.write("\x04")
        assert.strictEqual(yield* Effect.promise(() => chat.exited), 0, chat.output())
        // Only the prompt was a turn: its message, as the server wrote it, is the user's.
        const list = JSON.parse((yield* skald(["sessions", "list", "--json", "--home", home], {})).stdout) as Array<
          Json
        >
        assert.lengthOf(list, 1)
        const show = yield* skald(["sessions", "show", "--json", "--home", home, list[0]!.id], {})
        const rows = (JSON.parse(show.stdout) as Json).messages as Array<Json>
        assert.deepStrictEqual(rows.map((m) => [m.role, m.text]), [
          ["user", "What's weather in New York, NY?"],
          ["assistant", "Sunny."]
        ])
      }),
    120_000
  )
})

describe("skald chat beside a running host: a server's prompt as a /command", () => {
  it.scopedLive(
    "/help and /SERVER:PROMPT go to the host's servers (Agent.Command); the prompt is the turn",
    () =>
      Effect.gen(function*() {
        const standin = yield* ModelStandin.start([ModelStandin.text(["Rainy."])])
        const home = makeHome()
        const everything = [
          process.execPath,
          Path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
          "stdio"
        ]
        const added = yield* skald(["mcp", "add", "ev", "--home", home, "--", ...everything], {})
        assert.strictEqual(added.status, 0, added.stderr)
        const env = { SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: standin.url, SKALD_LLM_MODEL: "m" }
        const host = yield* Effect.acquireRelease(
          Effect.promise(() => startServe(home, env)),
          (h) => Effect.promise(() => stopProcess(h.child))
        )
        yield* Effect.promise(() =>
          until(
            "ev connected in the host",
            () => runSkald(["mcp", "list", "--json", "--home", home]),
            (r) => (JSON.parse(r.stdout || "[]") as Array<Json>).some((s) => s.name === "ev" && s.state === "connected")
          )
        )
        // No model settings here: the turn is the host's.
        const chat = yield* skald(["chat", "--home", home], {}, "/help\n/ev:args-prompt city=Oslo\n")
        assert.strictEqual(chat.status, 0, chat.stderr + host.stderr())
        assert.include(chat.stderr, "via the host")
        assert.include(chat.stdout, "/ev:args-prompt city=… (required) state=…")
        assert.include(chat.stdout, "Rainy.")
        const list = JSON.parse((yield* skald(["sessions", "list", "--json", "--home", home], {})).stdout) as Array<
          Json
        >
        const show = yield* skald(["sessions", "show", "--json", "--home", home, list[0]!.id], {})
        const rows = (JSON.parse(show.stdout) as Json).messages as Array<Json>
        assert.deepStrictEqual(rows.map((m) => [m.role, m.text]), [["user", "What's weather in Oslo?"], [
          "assistant",
          "Rainy."
        ]])
      }),
    120_000
  )
})

describe("skald agent run beside a running host", () => {
  it.scopedLive(
    "the turn runs in the host (its model, its connections, not restarted); a server that failed there is its own",
    () =>
      Effect.gen(function*() {
        const mock = yield* aimock
        mock.onMessage("just answer", { content: "Answered." })
        const home = yield* homeWith("echo", "echo")
        const broken = yield* Effect.promise(() =>
          runSkald(["mcp", "add", "broken", "--home", home, "--", process.execPath, "-e", "process.exit(3)"])
        )
        assert.strictEqual(broken.status, 0, broken.stderr)
        const env = {
          SKALD_LLM_PROVIDER: "openai",
          SKALD_LLM_BASE_URL: `${mock.url}/v1`,
          SKALD_LLM_MODEL: "m",
          SKALD_MCP_START_TIMEOUT: "5"
        }
        const host = yield* Effect.acquireRelease(
          Effect.promise(() => startServe(home, env)),
          (h) => Effect.promise(() => stopProcess(h.child))
        )
        const listed = () =>
          Effect.promise(() => runSkald(["mcp", "list", "--json", "--home", home])).pipe(
            Effect.map((r) => JSON.parse(r.stdout) as Array<Json>)
          )
        yield* Effect.promise(() =>
          until(
            "echo connected in the host",
            () => runSkald(["mcp", "list", "--json", "--home", home]),
            (r) => (JSON.parse(r.stdout) as Array<Json>).find((s) => s.name === "echo")?.state === "connected"
          )
        )
        const before = (yield* listed()).find((s) => s.name === "echo")!
        yield* Effect.promise(() =>
          until("the host's address", async () => Fs.existsSync(Path.join(home, "data", "host.json")), (ok) => ok)
        )
        // This process has no model of its own: the host's runs the turn (issue 22, point 4).
        const run = yield* skald(["agent", "run", "--home", home, "just answer"], {})
        assert.strictEqual(run.status, 0, run.stderr)
        assert.strictEqual(run.stdout, "Answered.\n")
        assert.include(run.stderr, `skald: via the host at ${host.url}`)
        // The failed server is the host's (`skald mcp list` shows it), not this process's.
        assert.notInclude(run.stderr, "did not start")
        assert.notInclude(run.stderr, "already running")
        // The host still runs and still owns the statuses: echo connected since the same moment.
        assert.isNull(host.child.exitCode)
        const after = (yield* listed()).find((s) => s.name === "echo")!
        assert.strictEqual(after.state, "connected")
        assert.strictEqual(after.since, before.since)
        // The model was offered activate_tools, and the echo server in the MCP list (lazy loading).
        const request = mock.getRequests()[0]!.body as Json
        assert.include((request.tools as Array<Json>).map((t) => t.function.name), "activate_tools")
        assert.include(String(request.messages[0].content).split("**Active**")[0]!, "- `echo`")
      }),
    120_000
  )
})
