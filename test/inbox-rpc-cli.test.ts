/**
 * `skald inbox` and `skald inbox answer` (issues 21/22, point 4): the real binary as an RPC client
 * of a real `skald serve` of the same home, found through the address the host records. A turn
 * started over RPC is held for approval and answered with `--yes`; its server's masked question is
 * answered with `--accept --field password=@-` (the marker value on stdin only: in no output, table,
 * log or model request); a value on argv and an answer that does not fit the form are refused
 * (exit 2); with no host running (or only a dead one's record) the commands say so (exit 2).
 */
import { assert, describe, it } from "@effect/vitest"
import { type InboxItem, type TurnEvent } from "@skald/domain"
import { Chunk, Effect, Fiber, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runSkald, stopProcess } from "./cli-support.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { filesUnder, makeHome } from "./host-support.js"
import { addFixture, hostClient, modelEnv, serve, vaultScript } from "./serve-support.js"
import { eventually, eventuallyEffect, readRecords, tempFile } from "./support.js"

const MARKER = "vault-marker-7c3d19e2"

describe("skald inbox through the running host", () => {
  it.scopedLive(
    "an approval answered with --yes, then a masked field with --accept --field password=@-",
    () =>
      Effect.gen(function*() {
        const home = makeHome()
        const record = tempFile("inbox-rpc")
        yield* addFixture(home, "vault", "elicit", [
          "--env",
          `FIXTURE_RECORD=${record}`,
          // The value the server expects: kept in the secret store (the one place it may be).
          "--secret-env",
          `EXPECTED_SECRET=${MARKER}`
        ])
        const standin = yield* ModelStandin.start(vaultScript("Opened."))
        const host = yield* serve(home, modelEnv(standin.url))
        const cli = (args: ReadonlyArray<string>, input?: string) =>
          Effect.promise(() => runSkald([...args, "--home", home], input === undefined ? {} : { input }))
        // The host records its address once /rpc answers; the turn starts once the vault is connected.
        const address = Path.join(home, "data", "host.json")
        const client = yield* hostClient(home, host.url, "vault")
        const pending = (tag: InboxItem.Kind) =>
          eventuallyEffect(
            client.Inbox.List(),
            (items) => items.some((i) => i._tag === tag),
            `a pending ${tag}`,
            "60 seconds"
          )
            .pipe(Effect.map((items) => items.find((i) => i._tag === tag)!))
        const turn = yield* Effect.fork(
          Stream.runCollect(client.Agent.Send({ message: "open the vault" })).pipe(Effect.map(Chunk.toArray))
        )

        // The tool call waits for approval: listed with its tool and arguments, answered with --yes.
        const approval = yield* pending("Approval")
        const listed = yield* cli(["inbox"])
        assert.strictEqual(listed.status, 0, listed.stderr)
        assert.match(
          listed.stdout,
          new RegExp(`^approval  ${approval.id}  .*tool mcp__vault__ask_secret.*deadline`, "m")
        )
        assert.include(listed.stdout, "  tool mcp__vault__ask_secret (")
        assert.include(listed.stdout, "  arguments {}")
        const yes = yield* cli(["inbox", "answer", approval.id, "--yes"])
        assert.deepStrictEqual([yes.status, yes.stderr.trim()], [0, `skald: ${approval.id} approved`])
        // Answered once: a second answer finds nothing pending.
        const again = yield* cli(["inbox", "answer", approval.id, "--no"])
        assert.strictEqual(again.status, 2)
        assert.include(again.stderr, `no pending inbox item '${approval.id}'`)

        // The server's question: its field marked masked; JSON has the items as the RPC gives them.
        const question = yield* pending("Elicitation")
        const json = yield* cli(["inbox", "--json"])
        assert.strictEqual(json.status, 0, json.stderr)
        const items = JSON.parse(json.stdout) as Array<{ id: string; _tag: string; fields: Array<{ masked: boolean }> }>
        assert.deepStrictEqual(items.map((i) => [i.id, i._tag, i.fields[0]!.masked]), [[
          question.id,
          "Elicitation",
          true
        ]])
        const text = yield* cli(["inbox"])
        assert.include(text.stdout, `elicitation  ${question.id}  server vault`)
        assert.include(text.stdout, "  field password (string, required, masked): Password")

        // A value on argv is refused before anything is sent, without repeating it.
        const onArgv = yield* cli(["inbox", "answer", question.id, "--accept", "--field", `password=${MARKER}`])
        assert.strictEqual(onArgv.status, 2)
        assert.include(onArgv.stderr, "values come from stdin only")
        assert.notInclude(onArgv.stderr, MARKER)
        // An answer without the required field: the host's check, the item stays pending.
        const empty = yield* cli(["inbox", "answer", question.id, "--accept"])
        assert.strictEqual(empty.status, 2)
        assert.include(empty.stderr, "does not fit its form")
        assert.include(empty.stderr, "password")
        const two = yield* cli(["inbox", "answer", question.id, "--yes", "--no"])
        assert.strictEqual(two.status, 2)
        assert.include(two.stderr, "exactly one of")

        const accepted = yield* cli(
          ["inbox", "answer", question.id, "--accept", "--field", "password=@-"],
          `${MARKER}\n`
        )
        assert.deepStrictEqual([accepted.status, accepted.stderr.trim()], [0, `skald: ${question.id} accepted`])
        const events = yield* Fiber.join(turn)
        const done = events.filter((e): e is TurnEvent.ToolDone => e._tag === "ToolDone").map((d) => [d.name, d.result])
        assert.deepStrictEqual(done[1], ["mcp__vault__ask_secret", "ask_secret: accept"])
        assert.deepInclude(readRecords(record).find((r) => r.event === "secret"), { matched: true })
        const empty2 = yield* cli(["inbox"])
        assert.deepStrictEqual([empty2.status, empty2.stdout], [0, ""])
        assert.include(empty2.stderr, "is empty")

        // The marker went only to the server: no CLI output, model request, host log or file
        // of the home but the secret store (where the test put the expected value).
        for (const run of [listed, yes, json, text, onArgv, empty, accepted, empty2]) {
          assert.notInclude(run.stdout + run.stderr, MARKER)
        }
        assert.notInclude(JSON.stringify(standin.requests.map((r) => r.body)), MARKER)
        assert.notInclude(host.stderr(), MARKER)
        for (const file of filesUnder(home, [Path.join(home, "secrets")])) {
          assert.notInclude(Fs.readFileSync(file).toString("latin1"), MARKER, file)
        }
        // The host recorded where it listens (never the token), and removes the record on exit.
        assert.deepStrictEqual(JSON.parse(Fs.readFileSync(address, "utf8")), {
          pid: host.child.pid,
          url: host.url
        })
        yield* Effect.promise(() => stopProcess(host.child))
        assert.isFalse(Fs.existsSync(address))
      }),
    180_000
  )

  it.scopedLive(
    "a host with an access token: the token from SKALD_TOKEN or --token is presented; none is refused",
    () =>
      Effect.gen(function*() {
        const token = "inbox-token-0123456789abcdef"
        const home = makeHome()
        const host = yield* serve(home, { SKALD_TOKEN: token })
        const address = Path.join(home, "data", "host.json")
        yield* eventually(() => Fs.existsSync(address), "the host's address", "60 seconds")
        assert.notInclude(Fs.readFileSync(address, "utf8"), token)
        const without = yield* Effect.promise(() => runSkald(["inbox", "--home", home], { env: { SKALD_TOKEN: "" } }))
        assert.strictEqual(without.status, 2)
        assert.include(without.stderr, `the host at ${host.url} did not take the connection`)
        const fromEnv = yield* Effect.promise(() =>
          runSkald(["inbox", "--home", home], { env: { SKALD_TOKEN: token } })
        )
        assert.deepStrictEqual([fromEnv.status, fromEnv.stdout], [0, ""], fromEnv.stderr)
        const fromFlag = yield* Effect.promise(() =>
          runSkald(["inbox", "--json", "--home", home, "--token", token], { env: { SKALD_TOKEN: "" } })
        )
        assert.deepStrictEqual([fromFlag.status, JSON.parse(fromFlag.stdout)], [0, []], fromFlag.stderr)
      }),
    60_000
  )
  it.live(
    "no host for the home (none ever, or a dead one's record): exit 2 saying skald serve is not running",
    () =>
      Effect.gen(function*() {
        const home = makeHome()
        const none = yield* Effect.promise(() => runSkald(["inbox", "--home", home]))
        assert.strictEqual(none.status, 2)
        assert.include(none.stderr, `\`skald serve\` is not running for the home ${home}`)
        Fs.mkdirSync(Path.join(home, "data"), { recursive: true })
        Fs.writeFileSync(
          Path.join(home, "data", "host.json"),
          JSON.stringify({ pid: 999_999_999, url: "http://127.0.0.1:9" })
        )
        const dead = yield* Effect.promise(() => runSkald(["inbox", "answer", "x", "--decline", "--home", home]))
        assert.strictEqual(dead.status, 2)
        assert.include(dead.stderr, "is not running for the home")
      }),
    60_000
  )
})
