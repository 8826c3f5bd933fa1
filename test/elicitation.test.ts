/**
 * Elicitation end to end over stdio: server-everything's form, URL and task (input_required)
 * elicitations, the `elicit` fixture (masking, confirmations, URL completion, a person slower than
 * the call timeout or than the user deadline, no handler at all), the tasks fixture's
 * `input_required_task`, and a secret that must not leak into anything the client produces.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { McpError } from "@skald/domain"
import { Elicitation, McpClient, McpLog, StdioTransport } from "@skald/mcp"
import { Cause, Effect, Exit, Fiber, Layer, Logger, LogLevel, Option, Stream, Tracer } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { accept, scripted } from "./elicitation-support.js"
import { everything, fixture } from "./fixtures/fixtures.js"
import { eventually, expectText, makeLogCapture, readRecords, tempDir, tempFile } from "./support.js"

// --- helpers -------------------------------------------------------------------------------

/** The only request the handler saw, as a form. */
const onlyForm = (requests: ReadonlyArray<Elicitation.Request>): Elicitation.FormRequest => {
  assert.strictEqual(requests.length, 1, `expected one elicitation, got ${requests.length}`)
  const request = requests[0]!
  if (request._tag !== "Form") return assert.fail(`expected a Form request, got ${request._tag}`)
  return request
}

/** The only request the handler saw, as a URL request. */
const onlyUrl = (requests: ReadonlyArray<Elicitation.Request>): Elicitation.UrlRequest => {
  assert.strictEqual(requests.length, 1, `expected one elicitation, got ${requests.length}`)
  const request = requests[0]!
  if (request._tag !== "Url") return assert.fail(`expected a Url request, got ${request._tag}`)
  return request
}

/** Plain data (undefined-valued keys dropped), for deepStrictEqual. */
const plain = (u: unknown): unknown => JSON.parse(JSON.stringify(u))

/** Waits (bounded) until the client's tool list contains every one of `names`; returns the names. */
const awaitTools = (client: McpClient.Service, names: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    yield* client.tools
    return yield* client.toolListChanges.pipe(
      Stream.map((list) => list.tools.map((t) => t.name)),
      Stream.filter((listed) => names.every((n) => listed.includes(n))),
      Stream.runHead,
      Effect.flatMap(Option.match({
        onNone: () => Effect.dieMessage("the tool list stream ended"),
        onSome: Effect.succeed
      })),
      Effect.timeoutFail({
        duration: "15 seconds",
        onTimeout: () => new Error(`the tool list never had ${names.join(", ")}`)
      }),
      Effect.orDie
    )
  })

/** The JSON after "Raw result: " in server-everything's answer. */
const rawResult = (wire: McpClient.JsonObject): Record<string, unknown> => {
  const content = Array.isArray(wire.content) ? (wire.content as Array<{ type?: string; text?: string }>) : []
  const raw = content.find((c) => c.type === "text" && c.text?.includes("Raw result: "))
  if (raw?.text === undefined) return assert.fail(`no "Raw result" block in ${JSON.stringify(wire)}`)
  return JSON.parse(raw.text.slice(raw.text.indexOf("Raw result: ") + "Raw result: ".length))
}

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) return assert.fail(`expected a failure, got ${JSON.stringify(exit.value)}`)
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure)) return assert.fail(`expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return failure.value
}

/** The `elicit` fixture with its record file; a handler, client options, env and a sink as given. */
const connectElicit = (options: {
  readonly handler?: Elicitation.Handler
  readonly client?: McpClient.Options
  readonly env?: Record<string, string>
  readonly sink?: McpLog.Sink
  readonly record?: string
} = {}) => {
  const record = options.record ?? tempFile("elicit")
  let connecting = StdioTransport.client(
    {
      server: "elicit",
      ...fixture("elicit", { FIXTURE_RECORD: record, ...options.env }),
      stdinGrace: "500 millis",
      termGrace: "500 millis"
    },
    options.client
  )
  if (options.handler !== undefined) {
    connecting = Effect.provideService(connecting, Elicitation.ElicitationHandler, options.handler)
  }
  // The lines are kept (off the console) unless the test brings its own sink.
  const logs = makeLogCapture()
  connecting = Effect.provideService(connecting, McpLog.McpLogSink, options.sink ?? logs.sink)
  return Effect.map(connecting, (client) => ({ client, record, logs }))
}

/** Keeps a connection's log lines off the console. */
const quietly = <A, E, R>(self: Effect.Effect<A, E, R>) => makeLogCapture().provide(self)

const answers = (record: string, tool?: string) =>
  readRecords(record).filter((r) => r.event === "answer" && (tool === undefined || r.tool === tool))

const textOf = (outcome: McpClient.CallOutcome) => expectText(outcome.result).text

// --- server-everything, one connection declaring form and url ---------------------------------

const everythingScript = scripted(true)
const everythingLogs = makeLogCapture()
const EverythingWithElicitation = Layer.scoped(
  McpClient.McpClient,
  StdioTransport.client({ server: "everything", ...everything() }).pipe(
    Effect.provideService(Elicitation.ElicitationHandler, everythingScript.handler),
    everythingLogs.provide
  )
)

const EVERYTHING_ELICITATION_TOOLS = [
  "trigger-elicitation-request",
  "trigger-url-elicitation",
  "simulate-research-query"
]

layer(EverythingWithElicitation, { excludeTestServices: true })(
  "server-everything with an elicitation handler",
  (it) => {
    it.effect("declares form and url elicitation, so the elicitation tools are offered", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const names = yield* awaitTools(client, EVERYTHING_ELICITATION_TOOLS)
        for (const name of EVERYTHING_ELICITATION_TOOLS) assert.include(names, name)
      }))

    it.effect("the handler is told every field: types, required, formats, bounds, enum choices with titles, defaults", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        yield* awaitTools(client, EVERYTHING_ELICITATION_TOOLS)
        everythingScript.state.reset(() => Effect.succeed({ action: "decline" }))
        yield* client.callTool("trigger-elicitation-request", {})
        const form = onlyForm(everythingScript.state.requests)
        assert.strictEqual(form.server, "everything")
        assert.strictEqual(form.message, "Please provide inputs for the following fields:")
        assert.isFalse(form.confirmation)
        assert.deepStrictEqual(plain(form.fields), [
          {
            name: "name",
            title: "String",
            description: "Your full, legal name",
            required: true,
            masked: false,
            kind: "string"
          },
          {
            name: "check",
            title: "Boolean",
            description: "Agree to the terms and conditions",
            required: false,
            masked: false,
            kind: "boolean"
          },
          {
            name: "firstLine",
            title: "String with default",
            description: "Favorite first line of a story",
            required: false,
            masked: false,
            kind: "string",
            default: "It was a dark and stormy night."
          },
          {
            name: "email",
            title: "String with email format",
            description: "Your email address (will be verified, and never shared with anyone else)",
            required: false,
            masked: false,
            kind: "string",
            format: "email"
          },
          {
            name: "homepage",
            title: "String with uri format",
            description: "Portfolio / personal website",
            required: false,
            masked: false,
            kind: "string",
            format: "uri"
          },
          {
            name: "birthdate",
            title: "String with date format",
            description: "Your date of birth",
            required: false,
            masked: false,
            kind: "string",
            format: "date"
          },
          {
            name: "integer",
            title: "Integer",
            description: "Your favorite integer (do not give us your phone number, pin, or other sensitive info)",
            required: false,
            masked: false,
            kind: "integer",
            minimum: 1,
            maximum: 100,
            default: 42
          },
          {
            name: "number",
            title: "Number in range 1-1000",
            description: "Favorite number (there are no wrong answers)",
            required: false,
            masked: false,
            kind: "number",
            minimum: 0,
            maximum: 1000,
            default: 3.14
          },
          {
            name: "untitledSingleSelectEnum",
            title: "Untitled Single Select Enum",
            description: "Choose your favorite friend",
            required: false,
            masked: false,
            kind: "enum",
            choices: ["Monica", "Rachel", "Joey", "Chandler", "Ross", "Phoebe"].map((value) => ({ value })),
            default: "Monica"
          },
          {
            name: "untitledMultipleSelectEnum",
            title: "Untitled Multiple Select Enum",
            description: "Choose your favorite instruments",
            required: false,
            masked: false,
            kind: "multi-enum",
            choices: ["Guitar", "Piano", "Violin", "Drums", "Bass"].map((value) => ({ value })),
            minItems: 1,
            maxItems: 3,
            default: ["Guitar"]
          },
          {
            name: "titledSingleSelectEnum",
            title: "Titled Single Select Enum",
            description: "Choose your favorite hero",
            required: false,
            masked: false,
            kind: "enum",
            choices: [
              { value: "hero-1", title: "Superman" },
              { value: "hero-2", title: "Green Lantern" },
              { value: "hero-3", title: "Wonder Woman" }
            ],
            default: "hero-1"
          },
          {
            name: "titledMultipleSelectEnum",
            title: "Titled Multiple Select Enum",
            description: "Choose your favorite types of fish",
            required: false,
            masked: false,
            kind: "multi-enum",
            choices: [
              { value: "fish-1", title: "Tuna" },
              { value: "fish-2", title: "Salmon" },
              { value: "fish-3", title: "Trout" }
            ],
            minItems: 1,
            maxItems: 3,
            default: ["fish-1"]
          },
          {
            name: "legacyTitledEnum",
            title: "Legacy Titled Single Select Enum",
            description: "Choose your favorite type of pet",
            required: false,
            masked: false,
            kind: "enum",
            choices: [
              { value: "pet-1", title: "Cats" },
              { value: "pet-2", title: "Dogs" },
              { value: "pet-3", title: "Birds" },
              { value: "pet-4", title: "Fish" },
              { value: "pet-5", title: "Reptiles" }
            ],
            default: "pet-1"
          }
        ])
      }))

    it.effect("an accepted form reaches the server with what was answered and the defaults filled in (SEP-1034)", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        yield* awaitTools(client, EVERYTHING_ELICITATION_TOOLS)
        everythingScript.state.reset(() =>
          accept({ name: "Ada Lovelace", check: true, email: "ada@example.org", titledSingleSelectEnum: "hero-3" })
        )
        const outcome = yield* client.callTool("trigger-elicitation-request", {})
        const text = textOf(outcome)
        assert.include(text, "✅ User provided the requested information!")
        assert.include(text, "- Name: Ada Lovelace")
        assert.include(text, "- Agreed to terms: true")
        assert.include(text, "- Email: ada@example.org")
        assert.include(text, "- Favorite Integer: 42")
        assert.include(text, "- Favorite Number: 3.14")
        assert.deepStrictEqual(rawResult(outcome.wire), {
          action: "accept",
          content: {
            name: "Ada Lovelace",
            check: true,
            firstLine: "It was a dark and stormy night.",
            email: "ada@example.org",
            integer: 42,
            number: 3.14,
            untitledSingleSelectEnum: "Monica",
            untitledMultipleSelectEnum: ["Guitar"],
            titledSingleSelectEnum: "hero-3",
            titledMultipleSelectEnum: ["fish-1"],
            legacyTitledEnum: "pet-1"
          }
        })
      }))

    it.effect("a decline and a cancel reach the server as such, without content", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        yield* awaitTools(client, EVERYTHING_ELICITATION_TOOLS)
        everythingScript.state.reset(() => Effect.succeed({ action: "decline" }))
        const declined = yield* client.callTool("trigger-elicitation-request", {})
        assert.include(textOf(declined), "❌ User declined to provide the requested information.")
        assert.deepStrictEqual(rawResult(declined.wire), { action: "decline" })

        everythingScript.state.reset(() => Effect.succeed({ action: "cancel" }))
        const cancelled = yield* client.callTool("trigger-elicitation-request", {})
        assert.include(textOf(cancelled), "⚠️ User cancelled the elicitation dialog.")
        assert.deepStrictEqual(rawResult(cancelled.wire), { action: "cancel" })
      }))

    it.effect("an accept that breaks the form is declined, with a warning naming the field but not the value", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        yield* awaitTools(client, EVERYTHING_ELICITATION_TOOLS)
        const before = everythingLogs.withTag("warning").length
        everythingScript.state.reset(() => accept({ name: "Ada", integer: 4711 }))
        const outcome = yield* client.callTool("trigger-elicitation-request", {})
        assert.deepStrictEqual(rawResult(outcome.wire), { action: "decline" })
        const warnings = everythingLogs.withTag("warning").slice(before)
        assert.strictEqual(warnings.length, 1, warnings.join("\n"))
        assert.include(warnings[0]!, "'integer' is above 100")
        assert.notInclude(warnings[0]!, "4711")
      }))

    it.effect("trigger-url-elicitation (request path): the handler gets the URL and its id; accept completes the call", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        yield* awaitTools(client, EVERYTHING_ELICITATION_TOOLS)
        everythingScript.state.reset(() => accept())
        const url = "https://example.com/consent?step=1"
        const outcome = yield* client.callTool("trigger-url-elicitation", {
          url,
          message: "Consent, please",
          elicitationId: "elicit-url-1"
        })
        const request = onlyUrl(everythingScript.state.requests)
        assert.deepStrictEqual(
          { server: request.server, message: request.message, url: request.url, elicitationId: request.elicitationId },
          { server: "everything", message: "Consent, please", url, elicitationId: "elicit-url-1" }
        )
        const text = textOf(outcome)
        assert.include(text, "✅ User completed the URL elicitation flow.")
        assert.include(text, "Elicitation ID: elicit-url-1")
        assert.include(text, `URL: ${url}`)
        // Accept in URL mode carries no content.
        assert.deepStrictEqual(rawResult(outcome.wire), { action: "accept" })
      }))

    it.effect("trigger-url-elicitation with errorPath: -32042 is McpUrlElicitationRequired with the URL; the retry asks", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        yield* awaitTools(client, EVERYTHING_ELICITATION_TOOLS)
        everythingScript.state.reset(() => accept())
        const args = { url: "https://example.com/authorize", errorPath: true }
        const error = failureOf(yield* Effect.exit(client.callTool("trigger-url-elicitation", args)))
        assert.instanceOf(error, McpError.McpUrlElicitationRequired)
        if (!(error instanceof McpError.McpUrlElicitationRequired)) return
        assert.strictEqual(error.server, "everything")
        assert.strictEqual(error.method, "tools/call")
        // The SDK puts its "MCP error <code>: " prefix into the wire message.
        assert.strictEqual(error.reason, "MCP error -32042: This request requires browser-based authorization.")
        assert.strictEqual(error.urls.length, 1)
        const required = error.urls[0]!
        assert.strictEqual(required.url, "https://modelcontextprotocol.io")
        assert.strictEqual(required.message, "Open this link to satisfy the prerequisite, then retry the request.")
        assert.match(required.elicitationId ?? "", /^[0-9a-f-]{36}$/)
        assert.include(error.message, "https://modelcontextprotocol.io")
        // The error path asks nobody; the retry goes through the request path.
        assert.strictEqual(everythingScript.state.requests.length, 0)
        const retried = yield* client.callTool("trigger-url-elicitation", args)
        assert.strictEqual(onlyUrl(everythingScript.state.requests).url, "https://example.com/authorize")
        assert.include(textOf(retried), "✅ User completed the URL elicitation flow.")
      }))

    it.effect(
      "simulate-research-query {ambiguous}: input_required, the handler picks an interpretation, the task completes",
      () =>
        Effect.gen(function*() {
          const client = yield* McpClient.McpClient
          yield* awaitTools(client, EVERYTHING_ELICITATION_TOOLS)
          everythingScript.state.reset(() => accept({ interpretation: "historical" }))
          const statuses: Array<string> = []
          const outcome = yield* client.callTool("simulate-research-query", { topic: "otters", ambiguous: true }, {
            onTaskStatus: (p) => Effect.sync(() => void statuses.push(p.status))
          })
          const form = onlyForm(everythingScript.state.requests)
          assert.include(form.message, `The research query "otters" could have multiple interpretations`)
          assert.deepStrictEqual(plain(form.fields), [
            {
              name: "interpretation",
              title: "Clarification",
              description: "Which interpretation of the topic do you mean?",
              required: true,
              masked: false,
              kind: "enum",
              choices: [
                { value: "technical", title: "Technical/scientific perspective" },
                { value: "historical", title: "Historical perspective" },
                { value: "current", title: "Current events/news perspective" }
              ]
            }
          ])
          assert.include(statuses, "input_required")
          // tasks/result returned once the task was terminal: the poller reports that too.
          assert.strictEqual(statuses.at(-1), "completed")
          const text = textOf(outcome)
          assert.include(text, "# Research Report: otters (historical)")
          assert.include(text, "- **Clarification**: historical")
        }),
      { timeout: 30_000 }
    )
  }
)

// --- capabilities ------------------------------------------------------------------------

describe("what the client declares", () => {
  it.scopedLive(
    "without a handler nothing is declared: server-everything leaves out its elicitation tools",
    () =>
      Effect.gen(function*() {
        const client = yield* quietly(StdioTransport.client({ server: "everything", ...everything() }))
        // simulate-research-query is registered (unconditionally) in the same step as the elicitation tools.
        const names = yield* awaitTools(client, ["simulate-research-query"])
        assert.notInclude(names, "trigger-elicitation-request")
        assert.notInclude(names, "trigger-url-elicitation")
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "a handler without url declares form only: server-everything offers the form tool, not the URL one",
    () =>
      Effect.gen(function*() {
        const script = scripted(false)
        const client = yield* StdioTransport.client({ server: "everything", ...everything() }).pipe(
          Effect.provideService(Elicitation.ElicitationHandler, script.handler),
          quietly
        )
        const names = yield* awaitTools(client, ["simulate-research-query", "trigger-elicitation-request"])
        assert.notInclude(names, "trigger-url-elicitation")
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "without a handler: no elicitation capability, and an elicitation/create is declined",
    () =>
      Effect.gen(function*() {
        const { client, record } = yield* connectElicit()
        const outcome = yield* client.callTool("confirm", {})
        assert.strictEqual(textOf(outcome), "confirm: decline")
        const initialized = readRecords(record).find((r) => r.event === "initialized")
        assert.isDefined(initialized)
        assert.notProperty(initialized!.capabilities as object, "elicitation")
        assert.deepStrictEqual(answers(record).map((a) => a.action), ["decline"])
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "the capabilities are {form, url} or {form}; a URL request to a form-only client is an error",
    () =>
      Effect.gen(function*() {
        const both = yield* connectElicit({ handler: scripted(true).handler })
        const formOnly = scripted(false, () => accept())
        const form = yield* connectElicit({ handler: formOnly.handler })
        // Each client listed nothing yet: call something so initialization is surely recorded.
        yield* both.client.callTool("confirm", {})
        yield* form.client.callTool("confirm", {})
        const capabilitiesOf = (record: string) =>
          readRecords(record).find((r) => r.event === "initialized")?.capabilities as Record<string, unknown>
        assert.deepStrictEqual(capabilitiesOf(both.record).elicitation, { form: {}, url: {} })
        assert.deepStrictEqual(capabilitiesOf(form.record).elicitation, { form: {} })

        formOnly.state.reset(() => accept())
        const outcome = yield* form.client.callTool("url_flow", {})
        assert.strictEqual(textOf(outcome), "url_flow: error -32602")
        // The handler was never asked about a mode it did not declare.
        assert.strictEqual(formOnly.state.requests.length, 0)
      }),
    { timeout: 30_000 }
  )
})

// --- the elicit fixture ----------------------------------------------------------------------

describe("elicit fixture", () => {
  it.scopedLive("a field named password is masked; an empty form is a confirmation", () =>
    Effect.gen(function*() {
      const script = scripted(false, () => Effect.succeed({ action: "decline" }))
      const { client, record } = yield* connectElicit({ handler: script.handler })
      assert.strictEqual(textOf(yield* client.callTool("ask_secret", {})), "ask_secret: decline")
      const secret = onlyForm(script.state.requests)
      assert.strictEqual(secret.server, "elicit")
      assert.strictEqual(secret.message, "Enter the password for the vault")
      assert.isFalse(secret.confirmation)
      assert.deepStrictEqual(plain(secret.fields), [
        {
          name: "password",
          title: "Password",
          description: "The vault password",
          required: true,
          masked: true,
          kind: "string"
        }
      ])

      script.state.reset(() => accept())
      assert.strictEqual(textOf(yield* client.callTool("confirm", { message: "Push to main?" })), "confirm: accept")
      const confirmation = onlyForm(script.state.requests)
      assert.strictEqual(confirmation.message, "Push to main?")
      assert.isTrue(confirmation.confirmation)
      assert.deepStrictEqual(confirmation.fields, [])
      assert.deepStrictEqual(answers(record).map((a) => [a.tool, a.action, a.keys]), [
        ["ask_secret", "decline", []],
        ["confirm", "accept", []]
      ])
    }), { timeout: 30_000 })

  it.scopedLive(
    "a handler that dies: the server is answered -32603 at once, and the defect's text is not logged",
    () =>
      Effect.gen(function*() {
        const logs = makeLogCapture()
        const { client, record } = yield* connectElicit({
          handler: { url: false, elicit: () => Effect.die(new Error("handler broke: hunter2")) },
          sink: logs.sink
        })
        const outcome = yield* client.callTool("confirm", { timeout: 20_000 })
        assert.include(textOf(outcome), "confirm:")
        const errors = readRecords(record).filter((r) => r.event === "error")
        assert.strictEqual(errors.length, 1)
        assert.strictEqual(errors[0]!.code, -32603)
        const warnings = logs.lines.filter((l) => l.tag === "warning").map((l) => l.text)
        assert.isTrue(warnings.some((w) => w.includes("elicitation/create")))
        assert.isFalse(warnings.some((w) => w.includes("hunter2")))
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "a person slower than the user deadline: the handler is interrupted and the server gets cancel",
    () =>
      Effect.gen(function*() {
        let interrupted = false
        const script = scripted(
          false,
          () => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true))))
        )
        const { client, record } = yield* connectElicit({
          handler: script.handler,
          client: { userDeadline: "500 millis" }
        })
        const outcome = yield* client.callTool("confirm", {})
        assert.strictEqual(textOf(outcome), "confirm: cancel")
        assert.strictEqual(script.state.requests.length, 1)
        assert.isTrue(interrupted)
        assert.deepStrictEqual(answers(record).map((a) => [a.action, a.hasContent]), [["cancel", false]])
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "a server that gives up on its elicitation (notifications/cancelled) stops the handler",
    () =>
      Effect.gen(function*() {
        let interrupted = false
        const script = scripted(
          false,
          () => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true))))
        )
        const { client, record } = yield* connectElicit({ handler: script.handler })
        const outcome = yield* client.callTool("confirm", { timeout: 300 })
        assert.strictEqual(textOf(outcome), "confirm: error -32001")
        assert.strictEqual(script.state.requests.length, 1)
        // The cancellation and the call's answer race on the client side: wait for the interruption.
        yield* eventually(() => interrupted, "the handler was interrupted")
        assert.deepStrictEqual(answers(record), [])
        // The paused timeouts were resumed: a later call under a short timeout still times out.
        const late = yield* Effect.exit(client.callTool("ask_slowly", { before: 3000 }, { timeout: "500 millis" }))
        assert.instanceOf(failureOf(late), McpError.McpTimeout)
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "the call timeout pauses while a person answers: a 2.5 s answer under a 1 s call timeout",
    () =>
      Effect.gen(function*() {
        const script = scripted(false, () => Effect.as(Effect.sleep("2500 millis"), { action: "accept" } as const))
        const { client, record } = yield* connectElicit({
          handler: script.handler,
          client: { callTimeout: "1 second" }
        })
        const outcome = yield* client.callTool("ask_slowly", {})
        assert.strictEqual(textOf(outcome), "ask_slowly: accept")
        assert.deepStrictEqual(answers(record).map((a) => a.action), ["accept"])
        // Without an elicitation the same timeout does fire (so the pause above is what saved the call).
        const slow = yield* Effect.exit(client.callTool("ask_slowly", { before: 2500 }))
        assert.instanceOf(failureOf(slow), McpError.McpTimeout)
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "after the answer the call timeout restarts in full, not from what was left",
    () =>
      Effect.gen(function*() {
        // 1.5 s call timeout; the tool works 0.9 s, asks (answered after 2 s), then works 0.9 s more.
        // Resumed with what was left (~0.6 s) the call would time out; restarted in full it does not.
        const script = scripted(false, () => Effect.as(Effect.sleep("2 seconds"), { action: "accept" } as const))
        const { client } = yield* connectElicit({ handler: script.handler, client: { callTimeout: "1500 millis" } })
        const outcome = yield* client.callTool("ask_slowly", { before: 900, after: 900 })
        assert.strictEqual(textOf(outcome), "ask_slowly: accept")
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "url_flow: the handler gets the fixture's URL; after accept the completion notification resolves `completed`",
    () =>
      Effect.gen(function*() {
        const script = scripted(true, () => accept())
        const { client, record } = yield* connectElicit({ handler: script.handler })
        const outcome = yield* client.callTool("url_flow", {})
        const request = onlyUrl(script.state.requests)
        assert.strictEqual(request.server, "elicit")
        assert.strictEqual(request.message, "Open this page to finish signing in")
        assert.strictEqual(
          request.url,
          `${request.url.slice(0, request.url.indexOf("/elicit/"))}/elicit/${request.elicitationId}`
        )
        assert.match(request.url, /^http:\/\/127\.0\.0\.1:\d+\/elicit\/[0-9a-f-]{36}$/)
        assert.strictEqual(textOf(outcome), `url_flow: accept, completed ${request.elicitationId}`)
        // The notification came before the call's answer, so `completed` is already resolved.
        const completed = yield* request.completed.pipe(Effect.timeout("5 seconds"), Effect.option)
        assert.isTrue(Option.isSome(completed), "completed did not resolve after notifications/elicitation/complete")
        assert.deepStrictEqual(answers(record).map((a) => [a.action, a.hasContent]), [["accept", false]])
        assert.deepStrictEqual(
          readRecords(record).filter((r) => r.event === "completion-sent").map((r) => r.elicitationId),
          [request.elicitationId]
        )
      }),
    { timeout: 30_000 }
  )

  it.scopedLive(
    "url_flow {visit}: the user opens the page out of band, then the server completes the elicitation",
    () =>
      Effect.gen(function*() {
        const script = scripted(true, () => accept())
        const { client, record } = yield* connectElicit({ handler: script.handler })
        const call = yield* Effect.fork(client.callTool("url_flow", { visit: true }))
        yield* eventually(() => script.state.requests.length === 1, "the URL request")
        const request = onlyUrl(script.state.requests)
        // Not completed before the page was opened.
        const early = yield* request.completed.pipe(Effect.timeout("200 millis"), Effect.option)
        assert.isTrue(Option.isNone(early), "completed resolved before the flow happened")
        const page = yield* Effect.promise(() => fetch(request.url).then((r) => r.text()))
        assert.strictEqual(page, "done, you may close this page\n")
        const completed = yield* request.completed.pipe(Effect.timeout("10 seconds"), Effect.option)
        assert.isTrue(Option.isSome(completed), "completed did not resolve")
        const outcome = yield* Fiber.join(call)
        assert.strictEqual(textOf(outcome), `url_flow: accept, completed ${request.elicitationId}`)
        const events = readRecords(record).map((r) => r.event).filter((e) => e === "visited" || e === "completion-sent")
        assert.deepStrictEqual(events, ["visited", "completion-sent"])
      }),
    { timeout: 30_000 }
  )
})

// --- tasks -------------------------------------------------------------------------------

describe("tasks fixture", () => {
  it.scopedLive("input_required_task completes through the elicitation", () =>
    Effect.gen(function*() {
      const script = scripted(false, () => accept({ name: "Ada" }))
      const client = yield* StdioTransport.client({
        server: "tasks",
        ...fixture("tasks"),
        stdinGrace: "500 millis",
        termGrace: "500 millis"
      }).pipe(Effect.provideService(Elicitation.ElicitationHandler, script.handler), quietly)
      const statuses: Array<string> = []
      const outcome = yield* client.callTool("input_required_task", { message: "Who are you?" }, {
        onTaskStatus: (p) => Effect.sync(() => void statuses.push(p.status))
      })
      const form = onlyForm(script.state.requests)
      assert.strictEqual(form.server, "tasks")
      assert.strictEqual(form.message, "Who are you?")
      assert.deepStrictEqual(plain(form.fields), [
        { name: "name", title: "Name", required: true, masked: false, kind: "string" }
      ])
      assert.strictEqual(textOf(outcome), `input_required_task: {"action":"accept","content":{"name":"Ada"}}`)
      assert.include(statuses, "input_required")
      assert.strictEqual(statuses.at(-1), "completed")
    }), { timeout: 30_000 })
})

// --- secrets -----------------------------------------------------------------------------

describe("secrets", () => {
  it.scopedLive(
    "an elicited password reaches the server and nothing else: no log line, span, result, error or file",
    () =>
      Effect.gen(function*() {
        const marker = `s3cr3t-${Crypto.randomBytes(12).toString("hex")}`
        const dir = yield* tempDir("secret")
        const record = Path.join(dir, "record.jsonl")

        // Everything the client produces is kept here.
        const { lines: mcpLines, sink } = makeLogCapture()
        const effectLogs: Array<string> = []
        const logger = Logger.make(({ annotations, cause, logLevel, message }) => {
          effectLogs.push(JSON.stringify({
            level: logLevel.label,
            message: Array.isArray(message) ? message.map(String) : String(message),
            cause: Cause.isEmpty(cause) ? "" : Cause.pretty(cause),
            annotations: [...annotations].map(([k, v]) => [k, String(v)])
          }))
        })
        const native = yield* Effect.tracer
        const spans: Array<Tracer.Span> = []
        const tracer = Tracer.make({
          span: (...args) => {
            const span = native.span(...args)
            spans.push(span)
            return span
          },
          context: native.context
        })

        let answered = 0
        const script = scripted(false, (request) => {
          answered++
          if (request._tag !== "Form") return Effect.succeed({ action: "decline" })
          // First a good answer; then one that breaks the form (a list for a string), which is logged.
          return accept({ password: answered === 1 ? marker : [marker] })
        })

        const exits = yield* Effect.scoped(
          Effect.gen(function*() {
            const { client } = yield* connectElicit({
              handler: script.handler,
              env: { EXPECTED_SECRET: marker },
              sink,
              record
            })
            const first = yield* Effect.exit(client.callTool("ask_secret", {}))
            const second = yield* Effect.exit(client.callTool("ask_secret", {}))
            return [first, second] as const
          })
        ).pipe(
          Effect.withTracer(tracer),
          Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
          Logger.withMinimumLogLevel(LogLevel.All)
        )

        // The server got the value (so it was really sent), and recorded only that it matched.
        assert.deepStrictEqual(readRecords(record).filter((r) => r.event === "secret").map((r) => r.matched), [true])
        assert.deepStrictEqual(answers(record, "ask_secret").map((a) => [a.action, a.keys]), [
          ["accept", ["password"]],
          ["decline", []]
        ])
        const [first, second] = exits
        assert.isTrue(Exit.isSuccess(first) && Exit.isSuccess(second))
        if (Exit.isSuccess(first)) assert.strictEqual(textOf(first.value), "ask_secret: accept")
        if (Exit.isSuccess(second)) assert.strictEqual(textOf(second.value), "ask_secret: decline")
        // The bad answer was logged (naming the field), and the client did log and trace this session.
        const warnings = mcpLines.filter((l) => l.tag === "warning").map((l) => l.text)
        assert.strictEqual(warnings.length, 1, warnings.join("\n"))
        assert.include(warnings[0]!, "'password' must be a string")
        assert.isTrue(mcpLines.some((l) => l.tag === "lifecycle"))
        assert.isTrue(spans.some((s) => s.name === "tools/call ask_secret"))

        // Now look for the value everywhere.
        const places: Array<[string, string]> = []
        for (const line of mcpLines) places.push([`log line ${line.tag}`, JSON.stringify(line)])
        for (const line of effectLogs) places.push(["Effect log", line])
        for (const span of spans) {
          places.push([`span name`, span.name])
          for (const [key, value] of span.attributes) {
            places.push([`span ${span.name} attribute ${key}`, `${key}=${JSON.stringify(value)}`])
          }
          const events =
            (span as { readonly events?: ReadonlyArray<readonly [string, bigint, Record<string, unknown>]> }).events
          for (const [name, , attributes] of events ?? []) {
            places.push([`span ${span.name} event`, `${name} ${JSON.stringify(attributes)}`])
          }
          for (const link of span.links) {
            places.push([`span ${span.name} link`, JSON.stringify(link.attributes)])
          }
          if (span.status._tag === "Ended") {
            const exit = span.status.exit
            places.push([`span ${span.name} exit`, Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "success"])
          }
        }
        for (const exit of exits) {
          places.push(["call exit", Exit.isSuccess(exit) ? JSON.stringify(exit.value) : Cause.pretty(exit.cause)])
          if (Exit.isFailure(exit)) places.push(["call error message", String(Cause.squash(exit.cause))])
        }
        for (const file of Fs.readdirSync(dir, { recursive: true, encoding: "utf8" })) {
          const full = Path.join(dir, file)
          if (Fs.statSync(full).isFile()) places.push([`file ${file}`, Fs.readFileSync(full, "utf8")])
        }
        assert.isAbove(places.length, 10)
        const leaks = places.filter(([, text]) => text.includes(marker)).map(([where]) => where)
        assert.deepStrictEqual(leaks, [], "the secret leaked")
      }),
    { timeout: 30_000 }
  )
})
