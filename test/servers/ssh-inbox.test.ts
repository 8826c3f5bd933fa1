/**
 * The sudo password through the inbox, end to end: the example SSH server (scripts/ssh-server.ts)
 * registered in a real manager with an Inbox, against the real test sshd (sshd/setup.sh, as in
 * ssh.test.ts), driven by the agent loop over the real OpenAI-compatible provider and the model
 * stand-in. The model asks for `exec(sudo=true)`; the server asks for the sudo password; the item
 * appears in the inbox; a watcher (standing in for the person) answers it — on the server's
 * one-time page, since the host declares URL mode, then `Accept` in the inbox — and the command
 * runs as root. The password (random per sshd setup) then appears in no table of skald.db, no
 * file under the home (the server logs), no request the model received, no log line and no turn
 * event.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { InboxItem, McpServerEntry, ServerConfig, ServerName, type TurnEvent } from "@skald/domain"
import { Agent } from "@skald/server/agent/Agent"
import { ChatStore } from "@skald/server/agent/ChatStore"
import * as OpenAiCompatible from "@skald/server/agent/llm/OpenAiCompatible"
import * as Approvals from "@skald/server/inbox/Approvals"
import { Inbox } from "@skald/server/inbox/Inbox"
import { InboxLog } from "@skald/server/inbox/InboxLog"
import { Chunk, Context, Effect, Layer, Logger, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as ModelStandin from "../fixtures/model-standin.js"
import { filesUnder, makeHome, startHostedManager, waitForState } from "../host-support.js"
import { tempDir } from "../support.js"
import { serverScript, setupSshd, submitPage, teardownSshd } from "./sshd/harness.js"
import type { SshdState } from "./sshd/harness.js"

// As in ssh.test.ts: a failed setup fails every test here (never a skip).
let state: SshdState | undefined
let setupError: unknown = new Error("the sshd setup did not run")

beforeAll(() => {
  try {
    state = setupSshd()
  } catch (error) {
    setupError = error
  }
}, 480_000) // a bound for apt-get update + install and setup.sh, not an expectation

afterAll(() => {
  teardownSshd()
}, 60_000)

const sshd = (): SshdState => {
  if (state === undefined) throw setupError
  return state
}

/** Every row of every table of the database, as text. */
const dumpTables = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
    const out: Array<string> = []
    for (const { name } of tables) out.push(name, JSON.stringify(yield* sql.unsafe(`SELECT * FROM "${name}"`)))
    return out.join("\n")
  })

describe("the sudo password through the inbox", () => {
  it.scopedLive(
    "exec(sudo=true) through the agent: asked in the inbox, answered, run as root; the password kept nowhere",
    () => {
      const lines: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ message }) => void lines.push(JSON.stringify(message)))
      )
      return Effect.gen(function*() {
        const s = sshd()
        const password = s.passwordUser.password
        assert.isAtLeast(password.length, 8)
        const home = makeHome()
        // The SSH server's own HOME, secrets dir and known_hosts (as harness.launch gives them).
        const dir = yield* tempDir("ssh-inbox")
        fs.mkdirSync(path.join(dir, "home"))
        const knownHosts = path.join(dir, "known_hosts")
        fs.writeFileSync(knownHosts, fs.readFileSync(s.knownHosts, "utf8"), { mode: 0o600 })
        const { context, manager } = yield* startHostedManager(home, { callTimeout: "90 seconds" })
        yield* manager.register(McpServerEntry.McpServerEntry.make({
          name: ServerName.make("ssh"),
          config: ServerConfig.StdioServerConfig.make({
            command: process.execPath,
            args: ["--import", "tsx", serverScript],
            env: {
              HOME: path.join(dir, "home"),
              SKALD_SECRETS_DIR: path.join(dir, "secrets"),
              SSH_MCP_KNOWN_HOSTS: knownHosts,
              SSH_AUTH_SOCK: "",
              SSH_MCP_KEY_PASSPHRASE: ""
            }
          }),
          enabled: true
        })).pipe(Effect.orDie)
        yield* waitForState(manager, "ssh", "connected", "60 seconds")
        const inbox = Context.get(context, Inbox)

        // The person: answers the sudo question on the server's page (URL mode), then in the inbox.
        const asked: Array<InboxItem.Elicitation> = []
        yield* inbox.watch.pipe(
          Stream.runForEach((change) =>
            Effect.gen(function*() {
              if (change._tag !== "ItemAdded" || change.item._tag !== "Elicitation") return
              const item = change.item
              asked.push(item)
              if (item.mode === "url" && item.url !== undefined) {
                const url = item.url
                yield* Effect.promise(() => submitPage(url, password))
                yield* inbox.resolve(item.id, new InboxItem.Accept({}))
              } else {
                const field = item.fields[0]?.name ?? "password"
                yield* inbox.resolve(item.id, new InboxItem.Accept({ content: { [field]: password } }))
              }
            }).pipe(Effect.orDie)
          ),
          Effect.forkScoped
        )

        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls([{
            id: "a1",
            name: "mcp__ssh__add_alias",
            arguments: {
              name: "box",
              host: s.host,
              port: s.port,
              user: s.passwordUser.name,
              key_path: s.passwordUser.key
            }
          }]),
          ModelStandin.toolCalls([{
            id: "x1",
            name: "mcp__ssh__exec",
            arguments: { alias: "box", command: "id -u", sudo: true }
          }]),
          ModelStandin.text("It ran as root.")
        ])
        const model = Layer.effect(
          LanguageModel.LanguageModel,
          OpenAiCompatible.make({ baseUrl: standin.url, model: "standin", retryBaseDelay: "1 millis" })
        ).pipe(Layer.provide(NodeHttpClient.dispatcherLayer))
        const built = yield* Layer.build(
          Agent.Default({ alwaysOffered: "all" }).pipe(
            Layer.provideMerge(ChatStore.Default),
            // The tool calls run unasked (the approvals have their own tests); the sudo password is
            // still asked, by the server, through the same inbox.
            Layer.provide(Approvals.Approvals.Default({ mode: "allow" })),
            Layer.provide(model),
            Layer.provide(Layer.succeedContext(context))
          )
        )
        const agent = Context.get(built, Agent)
        const events: Array<TurnEvent.TurnEvent> = Chunk.toArray(
          yield* Stream.runCollect(agent.run({ message: "run id -u as root on box" }))
        )

        const done = events.filter((e): e is TurnEvent.ToolDone => e._tag === "ToolDone")
        assert.deepStrictEqual(done.map((e) => [e.name, e.status]), [
          ["mcp__ssh__add_alias", "done"],
          ["mcp__ssh__exec", "done"]
        ])
        assert.include(done[1]!.result, "\"exit_code\":0")
        assert.match(done[1]!.result, /"stdout":"0\\n"/)
        assert.strictEqual(events[events.length - 1]!._tag, "TurnDone")
        // Asked once, in the inbox, by the ssh server.
        assert.strictEqual(asked.length, 1)
        assert.strictEqual(asked[0]!.origin.server, "ssh")
        assert.match(asked[0]!.message, /sudo/i)
        // The host declares URL mode, so the server asks for the secret on its own page.
        assert.strictEqual(asked[0]!.mode, "url")
        const rows = (yield* Context.get(context, InboxLog).list).filter((r) => r.kind === "elicitation")
        assert.deepStrictEqual(rows.map((r) => [r.server, r.outcome]), [["ssh", "accepted"]])

        // The password: nowhere.
        assert.notInclude(yield* dumpTables(Context.get(context, SqlClient.SqlClient)), password)
        const files = filesUnder(home)
        assert.isNotEmpty(files.filter((f) => f.includes("log")), "the server's log file is searched")
        for (const file of files) assert.notInclude(fs.readFileSync(file, "latin1"), password, file)
        assert.lengthOf(standin.requests, 3)
        for (const request of standin.requests) assert.notInclude(JSON.stringify(request.body), password)
        assert.notInclude(JSON.stringify(events), password)
        assert.notInclude(lines.join("\n"), password)
      }).pipe(Effect.provide(capture))
    },
    180_000
  )
})
