/**
 * What the tests of the real binary around a running host share: a home with a fixture server
 * registered by `skald mcp add`, the stand-in model's environment, a `skald serve` stopped with the
 * test's scope, the RPC client of it once the server is connected, and the vault script (the model
 * activates the `vault` fixture — `elicit` — and calls its `ask_secret`, which asks for a password).
 */
import { assert } from "@effect/vitest"
import * as RpcHost from "@skald/server/cli/RpcHost"
import * as Effect from "effect/Effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runSkald, spawnTty, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { eventually, eventuallyEffect, readRecords } from "./support.js"

/** The environment that points a `skald` process at the stand-in model (the OpenAI-compatible provider). */
export const modelEnv = (url: string): Record<string, string> => ({
  SKALD_LLM_PROVIDER: "openai",
  SKALD_LLM_BASE_URL: url,
  SKALD_LLM_MODEL: "m"
})

/**
 * `skald mcp add NAME --home HOME OPTIONS… -- <the fixture's command>`, which must succeed;
 * `options` are `mcp add`'s own (`--env K=V`, `--secret-env K=V`, …).
 */
export const addFixture = (
  home: string,
  name: string,
  fixtureName: string,
  options: ReadonlyArray<string> = []
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const server = fixture(fixtureName)
    const added = yield* Effect.promise(() =>
      runSkald(["mcp", "add", name, "--home", home, ...options, "--", server.command, ...server.args])
    )
    assert.strictEqual(added.status, 0, added.stderr)
  })

/** `skald serve --home HOME` with `env`, stopped (SIGTERM, waited for) when the scope closes. */
export const serve = (home: string, env: Record<string, string> = {}, args: ReadonlyArray<string> = []) =>
  Effect.acquireRelease(
    Effect.promise(() => startServe(home, env, args)),
    (served) => Effect.promise(() => stopProcess(served.child))
  )

/**
 * The RPC client of the home's running host, once the host has recorded its address
 * (`data/host.json`, written when /rpc answers) and the server `name` is connected.
 */
export const hostClient = (home: string, url: string, name: string) =>
  Effect.gen(function*() {
    const address = Path.join(home, "data", "host.json")
    yield* eventually(() => Fs.existsSync(address), "the host's address", "60 seconds")
    const client = yield* RpcHost.connectTo(url, undefined)
    yield* eventuallyEffect(
      client.Mcp.List(),
      (all) => all.some((s) => s.name === name && s.state === "connected"),
      `${name} to connect`,
      "60 seconds"
    )
    return client
  })

/** The model's three rounds of the vault tests: activate `vault`, call its `ask_secret`, answer `text`. */
export const vaultScript = (text: string): ReadonlyArray<ModelStandin.Reply> => [
  ModelStandin.toolCalls([{ id: "g0", name: "activate_tools", arguments: { groups: ["vault"] } }]),
  ModelStandin.toolCalls([{ id: "s1", name: "mcp__vault__ask_secret", arguments: {} }]),
  ModelStandin.text(text)
]

/** The content of the last `tool` message of the stand-in's request `index` (what the model read). */
export const lastToolResult = (standin: ModelStandin.ModelStandin, index: number): string =>
  String(standin.requests[index]!.body.messages.findLast((m: { role: string }) => m.role === "tool")?.content)

/**
 * `skald chat ARGS…` on a terminal, with `vaultScript("Opened.")` as the model: asks to open the
 * vault, types `secret` at the masked question, confirms, waits for the turn's end and ends the chat
 * (exit 0); the secret is never echoed and the server (recording to `record`) got it.
 */
export const openVaultOnTerminal = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  secret: string,
  record: string
) =>
  Effect.gen(function*() {
    const chat = yield* spawnTty(args, env)
    yield* eventually(() => chat.output().includes("> "), "the prompt", "30 seconds")
    chat.child.stdin.write("open the vault\r")
    yield* eventually(
      () => chat.output().includes("asks: Enter the password for the vault") && chat.output().includes("Password ("),
      "the question",
      "30 seconds"
    )
    chat.child.stdin.write(`${secret}\r`)
    yield* eventually(() => chat.output().includes("Send?"), "the send question")
    chat.child.stdin.write("y\r")
    yield* eventually(() => chat.output().includes("Opened."), "the turn's end", "30 seconds")
    yield* eventually(() => chat.output().split("> ").length - 1 >= 2, "the prompt again")
    chat.child.stdin.write("\x04")
    assert.strictEqual(yield* Effect.promise(() => chat.exited), 0, chat.output())
    assert.notInclude(chat.output(), secret)
    assert.deepInclude(readRecords(record).find((r) => r.event === "secret"), { matched: true })
  })
