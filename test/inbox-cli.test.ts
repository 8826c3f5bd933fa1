/**
 * Answering the inbox from the CLI. InboxPrompt (cli/InboxPrompt.ts) over a real Inbox: it asks
 * each pending elicitation through its handler, one at a time, oldest first, resolves the item with
 * the answer, and abandons a question whose item ended elsewhere. Through the real binary:
 * `skald agent run` with stdin not a terminal declines a server's elicitation and says so on
 * stderr, and the tool reads `decline`.
 */
import { assert, describe, it } from "@effect/vitest"
import { InboxItem } from "@skald/domain"
import type { Elicitation } from "@skald/mcp"
import * as InboxPrompt from "@skald/server/cli/InboxPrompt"
import { Inbox } from "@skald/server/inbox/Inbox"
import { InboxLog } from "@skald/server/inbox/InboxLog"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { runSkald } from "./cli-support.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { makeHome, servicesLayer, tempHome } from "./host-support.js"
import { addFixture, lastToolResult, modelEnv, openVaultOnTerminal, vaultScript } from "./serve-support.js"
import { eventuallyEffect, readRecords, tempFile } from "./support.js"

const inboxLayer = Layer.unwrapScoped(
  Effect.map(
    tempHome,
    (home) => Layer.provideMerge(Inbox.Default, Layer.provideMerge(InboxLog.Default, servicesLayer(home)))
  )
)

const form = (message: string) => ({
  _tag: "Elicitation" as const,
  origin: { server: "vault" },
  mode: "form" as const,
  message,
  fields: [{ name: "password", required: true, masked: true, kind: "string" as const }],
  confirmation: false
})

describe("InboxPrompt", () => {
  it.scopedLive("asks each elicitation through its handler, oldest first, and resolves it with the answer", () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox
      const asked: Array<Elicitation.Request> = []
      const handler: Elicitation.Handler = {
        url: true,
        elicit: (request) =>
          Effect.sync(() => {
            asked.push(request)
            return request._tag === "Form" && request.message === "first"
              ? { action: "accept", content: { password: "typed" } }
              : { action: "decline" }
          })
      }
      const first = yield* Effect.fork(inbox.ask(form("first")))
      const second = yield* Effect.fork(inbox.ask(form("second")))
      yield* eventuallyEffect(inbox.list, (items) => items.length === 2, "both items")
      yield* InboxPrompt.start(handler)
      assert.deepStrictEqual(yield* Fiber.join(first), new InboxItem.Accept({ content: { password: "typed" } }))
      assert.deepStrictEqual(yield* Fiber.join(second), new InboxItem.Decline())
      assert.deepStrictEqual(asked.map((r) => [r._tag, r.server, r.message]), [
        ["Form", "vault", "first"],
        ["Form", "vault", "second"]
      ])
      // Notifications are not its to answer.
      const note = yield* inbox.notify({ origin: {}, title: "hello", body: "" })
      yield* Effect.sleep("50 millis")
      assert.deepStrictEqual((yield* inbox.list).map((i) => i.id), [note])
    }).pipe(Effect.provide(inboxLayer)))

  it.scopedLive("a question whose item ends elsewhere is abandoned (the handler interrupted)", () =>
    Effect.gen(function*() {
      const inbox = yield* Inbox
      const interrupted = yield* Deferred.make<void>()
      const handler: Elicitation.Handler = {
        url: true,
        elicit: () => Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)))
      }
      let befores = 0
      let afters = 0
      yield* InboxPrompt.start(handler, {
        before: Effect.sync(() => void befores++),
        after: Effect.sync(() => void afters++)
      })
      const asker = yield* Effect.fork(inbox.ask(form("never answered here")))
      const [item] = yield* eventuallyEffect(inbox.list, (items) => items.length === 1, "the item")
      yield* eventuallyEffect(Effect.sync(() => befores), (n) => n === 1, "the question to be asked")
      yield* inbox.resolve(item!.id, new InboxItem.Cancel())
      yield* Deferred.await(interrupted)
      assert.deepStrictEqual(yield* Fiber.join(asker), new InboxItem.Cancel())
      yield* eventuallyEffect(Effect.sync(() => afters), (n) => n === 1, "the terminal to be taken back")
    }).pipe(Effect.provide(inboxLayer)))
})

describe("skald agent run, stdin not a terminal", () => {
  it.scopedLive("declines a server's elicitation, says so on stderr, and the tool reads decline", () =>
    Effect.gen(function*() {
      const home = makeHome()
      const record = tempFile("elicit-cli")
      yield* addFixture(home, "vault", "elicit", ["--env", `FIXTURE_RECORD=${record}`])
      const standin = yield* ModelStandin.start(vaultScript("No password."))
      const env = modelEnv(standin.url)
      const run = yield* Effect.promise(() =>
        runSkald(["agent", "run", "--home", home, "--approve", "allow", "open the vault"], { env, input: "" })
      )
      assert.strictEqual(run.status, 0, run.stderr)
      assert.include(run.stderr, "skald: MCP server 'vault' asks: Enter the password for the vault")
      assert.include(run.stderr, "declined — stdin is not a terminal")
      assert.strictEqual(run.stdout, "No password.\n")
      // The client declared elicitation (the inbox's), and the server read decline.
      const initialized = readRecords(record).find((r) => r.event === "initialized")
      assert.deepStrictEqual((initialized?.capabilities as { elicitation?: unknown }).elicitation, {
        form: {},
        url: {}
      })
      assert.deepInclude(readRecords(record).find((r) => r.event === "answer"), { action: "decline" })
      assert.include(lastToolResult(standin, 2), "ask_secret: decline")
    }))
})

describe("skald chat on a terminal", () => {
  it.scopedLive(
    "asks a server's password inline, masked (never echoed), and the server gets it",
    () =>
      Effect.gen(function*() {
        const secret = "typed-secret-4b1e"
        const home = makeHome()
        const record = tempFile("elicit-tty")
        yield* addFixture(home, "vault", "elicit", [
          "--env",
          `FIXTURE_RECORD=${record}`,
          "--env",
          `EXPECTED_SECRET=${secret}`
        ])
        const standin = yield* ModelStandin.start(vaultScript("Opened."))
        const env = modelEnv(standin.url)
        yield* openVaultOnTerminal(["--home", home, "--approve", "allow"], env, secret, record)
        assert.include(lastToolResult(standin, 2), "ask_secret: accept")
      }),
    120_000
  )
})
