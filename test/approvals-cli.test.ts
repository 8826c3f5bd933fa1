/**
 * Approvals from the command line, through the real `skald` binary on a temp home, with the model
 * stand-in and the notes fixture (`delete_note` destructive, `read_note` read-only):
 * - `skald agent run` without a terminal defaults to `--approve deny`: the destructive call is
 *   refused (it never reaches the server), stderr names it and says how to allow it, the session
 *   keeps it `denied`; the read-only call runs;
 * - `--approve allow` runs it; a `deny` rule from `skald approvals set` refuses it even then;
 * - `skald approvals list|set|rm`;
 * - `skald chat` on a terminal asks inline: `a` (always) runs the call and adds the rule, so the
 *   next turn's call of that tool runs without a question.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runSkald, spawnTty } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { makeHome } from "./host-support.js"
import { eventually, readRecords, tempFile } from "./support.js"

type Json = Record<string, any>

const skald = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.promise(() => runSkald(args, { env }))

/** A home with the notes fixture registered, recording the calls that reach it. */
const notesHome = Effect.gen(function*() {
  const home = makeHome()
  const record = tempFile("approvals-cli")
  const f = fixture("notes")
  const added = yield* skald([
    "mcp",
    "add",
    "notes",
    "--home",
    home,
    "--env",
    `FIXTURE_RECORD=${record}`,
    "--",
    f.command,
    ...f.args
  ])
  assert.strictEqual(added.status, 0, added.stderr)
  return { home, ran: () => readRecords(record).map((r) => String(r.tool)) }
})

/** A model that activates the notes server, deletes a note and reads one, then answers. */
const script = () =>
  ModelStandin.start([
    ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["notes"] } }]),
    ModelStandin.toolCalls([
      { id: "d1", name: "mcp__notes__delete_note", arguments: { name: "draft" } },
      { id: "r1", name: "mcp__notes__read_note", arguments: { name: "todo" } }
    ]),
    ModelStandin.text(["Finished."])
  ])

const modelEnv = (url: string) => ({ SKALD_LLM_PROVIDER: "openai", SKALD_LLM_BASE_URL: url, SKALD_LLM_MODEL: "m" })

describe("skald agent run --approve", () => {
  it.scopedLive(
    "without a terminal the default is deny: the call is refused, stderr says which and how to allow it",
    () =>
      Effect.gen(function*() {
        const { home, ran } = yield* notesHome
        const standin = yield* script()
        const run = yield* skald(["agent", "run", "--home", home, "tidy my notes"], modelEnv(standin.url))
        assert.strictEqual(run.status, 0, run.stderr)
        assert.strictEqual(run.stdout, "Finished.\n")
        assert.include(run.stderr, `skald: tool mcp__notes__delete_note {"name":"draft"} → denied`)
        assert.include(run.stderr, `skald: tool mcp__notes__read_note {"name":"todo"} → done`)
        assert.include(run.stderr, "skald: denied (did not run): mcp__notes__delete_note.")
        assert.include(run.stderr, "--approve allow")
        assert.include(run.stderr, "skald approvals set mcp__notes__delete_note allow")
        assert.deepStrictEqual(ran(), ["read_note"])
        // The model read the refusal as the call's result.
        const toolMessages = standin.requests[2]!.body.messages.filter((m: Json) => m.role === "tool")
        const denied = toolMessages.find((m: Json) => m.tool_call_id === "d1")
        assert.include(String(denied.content), "was denied because no person was there to approve it")
        const session = /^session: (\S+)$/m.exec(run.stderr)![1]!
        const show = yield* skald(["sessions", "show", "--json", "--home", home, session])
        const calls = (JSON.parse(show.stdout) as Json).messages.flatMap((m: Json) => m.calls) as Array<Json>
        assert.deepStrictEqual(calls.map((c) => [c.callId, c.status]), [["a1", "done"], ["d1", "denied"], [
          "r1",
          "done"
        ]])
      }),
    120_000
  )

  it.scopedLive(
    "--approve allow runs it; a deny rule refuses it even then; approvals list|set|rm",
    () =>
      Effect.gen(function*() {
        const { home, ran } = yield* notesHome
        const allowed = yield* skald(
          ["agent", "run", "--approve", "allow", "--home", home, "tidy my notes"],
          modelEnv((yield* script()).url)
        )
        assert.strictEqual(allowed.status, 0, allowed.stderr)
        assert.include(allowed.stderr, `skald: tool mcp__notes__delete_note {"name":"draft"} → done`)
        assert.notInclude(allowed.stderr, "denied")
        assert.deepStrictEqual(ran().sort(), ["delete_note", "read_note"])

        const empty = yield* skald(["approvals", "list", "--home", home])
        assert.strictEqual(empty.status, 0, empty.stderr)
        assert.strictEqual(empty.stdout, "")
        assert.include(empty.stderr, "no approval rules")
        const set = yield* skald(["approvals", "set", "--home", home, "mcp__notes__delete*", "deny"])
        assert.strictEqual(set.status, 0, set.stderr)
        const bad = yield* skald(["approvals", "set", "--home", home, "mcp__*__x", "allow"])
        assert.strictEqual(bad.status, 2)
        assert.include(bad.stderr, "is not an approval rule pattern")
        const listed = yield* skald(["approvals", "list", "--json", "--home", home])
        assert.deepStrictEqual(
          (JSON.parse(listed.stdout) as Array<Json>).map((r) => [r.pattern, r.decision]),
          [["mcp__notes__delete*", "deny"]]
        )

        const refused = yield* skald(
          ["agent", "run", "--approve", "allow", "--home", home, "tidy my notes"],
          modelEnv((yield* script()).url)
        )
        assert.strictEqual(refused.status, 0, refused.stderr)
        assert.include(refused.stderr, `skald: tool mcp__notes__delete_note {"name":"draft"} → denied`)
        assert.include(refused.stderr, "a rule refused them")
        assert.deepStrictEqual(ran().filter((t) => t === "delete_note"), ["delete_note"])

        const rm = yield* skald(["approvals", "rm", "--home", home, "mcp__notes__delete*"])
        assert.strictEqual(rm.status, 0, rm.stderr)
        const again = yield* skald(["approvals", "rm", "--home", home, "mcp__notes__delete*"])
        assert.strictEqual(again.status, 2)
        assert.include(again.stderr, "no approval rule for mcp__notes__delete*")
      }),
    120_000
  )
})

describe("skald chat on a terminal", () => {
  it.scopedLive(
    "an approval is asked inline; `a` runs it and allows the tool from then on",
    () =>
      Effect.gen(function*() {
        const { home, ran } = yield* notesHome
        const standin = yield* ModelStandin.start([
          ModelStandin.toolCalls([{ id: "a1", name: "activate_tools", arguments: { groups: ["notes"] } }]),
          ModelStandin.toolCalls([{ id: "d1", name: "mcp__notes__delete_note", arguments: { name: "draft" } }]),
          ModelStandin.text(["Deleted."]),
          ModelStandin.toolCalls([{ id: "d2", name: "mcp__notes__delete_note", arguments: { name: "old" } }]),
          ModelStandin.text(["Deleted again."])
        ])
        const chat = yield* spawnTty(["--home", home], modelEnv(standin.url))
        const count = (text: string) => chat.output().split(text).length - 1
        const question = "approve mcp__notes__delete_note? (not marked read-only)"
        yield* eventually(() => count("> ") >= 1, "the prompt", "30 seconds")
        chat.child.stdin.write("delete the draft\r")
        yield* eventually(() => count(question) === 1, "the approval question", "30 seconds")
        // Held while the question is open.
        assert.deepStrictEqual(ran(), [])
        assert.include(chat.output(), "a = always allow mcp__notes__delete_note")
        chat.child.stdin.write("a\r")
        yield* eventually(() => chat.output().includes("Deleted.") && count("> ") >= 2, "the answer, a new prompt")
        chat.child.stdin.write("and the old one\r")
        yield* eventually(() => chat.output().includes("Deleted again.") && count("> ") >= 3, "the second answer")
        chat.child.stdin.write("\x04")
        assert.strictEqual(yield* Effect.promise(() => chat.exited), 0, chat.output())
        // Asked once: the second call ran by the rule `a` added.
        assert.strictEqual(count(question), 1, chat.output())
        assert.deepStrictEqual(ran(), ["delete_note", "delete_note"])
        const listed = yield* skald(["approvals", "list", "--json", "--home", home])
        assert.deepStrictEqual(
          (JSON.parse(listed.stdout) as Array<Json>).map((r) => [r.pattern, r.decision]),
          [["mcp__notes__delete_note", "allow"]]
        )
      }),
    120_000
  )
})
