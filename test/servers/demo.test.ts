/**
 * The offline demo server (scripts/demo-server.ts) through our client engine: every tool over
 * stdio (text, structured, PNG, WAV, embedded resource, resource_link, the long job as a task and
 * as a plain call — progress, status messages, both kinds of cancellation — form, confirmation
 * and URL-mode elicitation), its events and logging, `--help`, the `skald` CLI against it, and
 * the Streamable HTTP mode.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { McpError } from "@skald/domain"
import { Elicitation, JsonRpc, McpClient, StdioTransport } from "@skald/mcp"
import { Cause, Chunk, Effect, Exit, Fiber, Layer, Option, Queue, Stream } from "effect"
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { repoRoot } from "../fixtures/fixtures.js"
import { connectHttp } from "../http-support.js"
import {
  eventually,
  expectJson,
  expectMedia,
  expectText,
  makeLogCapture,
  readRecords,
  tempFile,
  tempRecordFile
} from "../support.js"
import {
  decodePng,
  decodeWav,
  demoCommand,
  demoScript,
  fillInPage,
  onlyForm,
  onlyUrl,
  plain,
  scripted,
  startDemoHttp,
  upwardCrossings
} from "./demo-support.js"

const TOOL_NAMES = [
  "echo",
  "word_stats",
  "gradient_png",
  "sine_wav",
  "embedded_file",
  "resource_link",
  "long_job",
  "fill_form",
  "confirm_action",
  "set_api_key"
]

/** Fast task polling: the demo's jobs take tens of milliseconds per step here. */
const clientOptions: McpClient.Options = { pollIntervalBounds: { min: "20 millis", max: "2 seconds" } }

const stdioOptions = (env: Record<string, string>, args: ReadonlyArray<string> = []): StdioTransport.Options => ({
  server: "demo",
  ...demoCommand(env, args),
  stdinGrace: "2 seconds",
  termGrace: "1 second"
})

const textOf = (outcome: McpClient.CallOutcome) => expectText(outcome.result).text

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) return assert.fail(`expected a failure, got ${JSON.stringify(exit.value)}`)
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure)) return assert.fail(`expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return failure.value
}

/** Collects a stream into a queue from now on (the subscription is made before this returns). */
const collect = <A>(stream: Stream.Stream<A>) =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<A>()
    yield* stream.pipe(Stream.runForEach((a) => Queue.offer(queue, a)), Effect.forkScoped)
    // Let the forked fiber run up to its first wait: it has subscribed by then.
    for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
    return queue
  })

/** Takes the first `n` items of `queue` that satisfy `keep`, failing after 20 s (a hang bound). */
const takeMatching = <A>(queue: Queue.Queue<A>, n: number, keep: (a: A) => boolean, what: string) =>
  Effect.gen(function*() {
    const out: Array<A> = []
    while (out.length < n) {
      const a = yield* Queue.take(queue)
      if (keep(a)) out.push(a)
    }
    return out
  }).pipe(
    Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error(`gave up waiting for ${what}`) }),
    Effect.orDie
  )

const paramsOf = (n: JsonRpc.Notification): Record<string, unknown> =>
  typeof n.params === "object" && n.params !== null ? (n.params as Record<string, unknown>) : {}

// --- one shared stdio connection: a handler declaring form and url, ticks from the env ----------

const record = tempFile("demo")
const script = scripted(true)
const logs = makeLogCapture()
const EXPECTED_KEY = "demo-key-Zq7!x"

const Demo = Layer.scoped(
  McpClient.McpClient,
  StdioTransport.client(
    stdioOptions({ DEMO_RECORD_FILE: record, DEMO_TICK_SECONDS: "0.25", DEMO_EXPECTED_API_KEY: EXPECTED_KEY }),
    clientOptions
  ).pipe(
    Effect.provideService(Elicitation.ElicitationHandler, script.handler),
    logs.provide
  )
)

const records = (event: string) => readRecords(record).filter((r) => r.event === event)

layer(Demo, { excludeTestServices: true })("demo server over stdio", (it) => {
  it.effect("says who it is, declares tools, resources, logging and tasks, and lists every tool", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      assert.strictEqual(client.identity.serverInfo.name, "skald-demo")
      const capabilities = client.identity.capabilities
      for (const key of ["tools", "resources", "logging", "tasks"]) assert.property(capabilities, key)
      assert.deepStrictEqual(plain(capabilities.tasks), { list: {}, cancel: {}, requests: { tools: { call: {} } } })
      const list = yield* client.refreshTools
      assert.deepStrictEqual(list.tools.map((t) => t.name), TOOL_NAMES)
      const byName = new Map(list.wire.map((t) => [t.name as string, t]))
      assert.deepStrictEqual(byName.get("long_job")!.execution, { taskSupport: "optional" })
      assert.deepStrictEqual(byName.get("echo")!.execution, { taskSupport: "forbidden" })
      assert.isDefined(byName.get("word_stats")!.outputSchema)
      for (const tool of list.wire) assert.isString(tool.description, `${String(tool.name)} has a description`)
      // The banner went to stderr (it reached the log sink as stderr lines).
      const banner = logs.withTag("stderr").find((l) => l.includes("offline demo"))
      assert.isDefined(banner)
      assert.include(banner!, "over stdio")
      assert.include(banner!, "ticks every 0.25 s")
    }))

  it.effect("echo answers its message as text, and logs the call (notifications/message)", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      const outcome = yield* client.callTool("echo", { message: "hello, demo" })
      assert.strictEqual(textOf(outcome), "hello, demo")
      assert.isUndefined(outcome.wire.isError)
      // Notifications come before the answer on the one stdio stream, so the line is in already.
      assert.include(logs.withTag("info"), "demo: echo called: 11 characters")
    }))

  it.effect("word_stats: structuredContent matches its outputSchema (Json, no warning) and the text mirrors it", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      const warningsBefore = logs.withTag("warning").length
      const outcome = yield* client.callTool("word_stats", { text: "The cat saw the other cat.\nThe end" })
      const expected = {
        characters: 34,
        words: 8,
        lines: 2,
        longestWord: "other",
        topWords: [
          { word: "the", count: 3 },
          { word: "cat", count: 2 },
          { word: "end", count: 1 },
          { word: "other", count: 1 },
          { word: "saw", count: 1 }
        ]
      }
      assert.deepStrictEqual(expectJson(outcome.result).value, expected)
      const content = outcome.wire.content as Array<{ type: string; text: string }>
      assert.strictEqual(content.length, 1)
      assert.strictEqual(content[0]!.type, "text")
      assert.deepStrictEqual(JSON.parse(content[0]!.text), expected)
      // Our engine checks structuredContent against the outputSchema and warns on a mismatch.
      assert.deepStrictEqual(logs.withTag("warning").slice(warningsBefore), [])
    }))

  it.effect("gradient_png returns a valid PNG of the asked size whose corners are the asked colours", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      const outcome = yield* client.callTool("gradient_png", { width: 40, height: 20, from: "#ff0000", to: "#0000ff" })
      const media = expectMedia(outcome.result)
      assert.include(media.text, "40×20 gradient from #ff0000 to #0000ff")
      assert.strictEqual(media.items.length, 1)
      const item = media.items[0]!
      if (item._tag !== "Inline") return assert.fail("expected inline media")
      assert.strictEqual(item.kind, "image")
      assert.strictEqual(item.mimeType, "image/png")
      const png = decodePng(item.data)
      assert.deepStrictEqual(
        { width: png.width, height: png.height, bitDepth: png.bitDepth, colorType: png.colorType },
        { width: 40, height: 20, bitDepth: 8, colorType: 2 }
      )
      assert.deepStrictEqual(png.chunkTypes, ["IHDR", "IDAT", "IEND"])
      assert.deepStrictEqual(png.pixel(0, 0), [255, 0, 0])
      assert.deepStrictEqual(png.pixel(39, 0), [0, 0, 255])
      // Darker towards the bottom (by a quarter).
      assert.deepStrictEqual(png.pixel(0, 19), [191, 0, 0])

      const defaults = decodePng(
        (expectMedia((yield* client.callTool("gradient_png", {})).result).items[0] as { data: Uint8Array }).data
      )
      assert.deepStrictEqual([defaults.width, defaults.height], [256, 128])

      const bad = yield* client.callTool("gradient_png", { from: "red" })
      assert.isTrue(bad.wire.isError)
      assert.include(textOf(bad), "#rrggbb")
    }))

  it.effect("sine_wav returns a valid 16-bit mono PCM WAV of the asked length and pitch", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      const outcome = yield* client.callTool("sine_wav", { frequency: 500, durationMs: 200, sampleRate: 8000 })
      const media = expectMedia(outcome.result)
      const item = media.items[0]!
      if (item._tag !== "Inline") return assert.fail("expected inline media")
      assert.strictEqual(item.kind, "audio")
      assert.strictEqual(item.mimeType, "audio/wav")
      const wav = decodeWav(item.data)
      assert.deepStrictEqual(
        {
          format: wav.format,
          channels: wav.channels,
          sampleRate: wav.sampleRate,
          byteRate: wav.byteRate,
          blockAlign: wav.blockAlign,
          bitsPerSample: wav.bitsPerSample,
          samples: wav.samples.length
        },
        { format: 1, channels: 1, sampleRate: 8000, byteRate: 16000, blockAlign: 2, bitsPerSample: 16, samples: 1600 }
      )
      // 500 Hz for 0.2 s: about 100 upward zero crossings.
      const crossings = upwardCrossings(wav.samples)
      assert.isAtLeast(crossings, 98)
      assert.isAtMost(crossings, 101)
      const peak = wav.samples.reduce((m, s) => Math.max(m, Math.abs(s)), 0)
      assert.isAbove(peak, 15000)
      assert.isBelow(peak, 16500)
    }))

  it.effect("embedded_file returns a resource blob (a CSV) and resource_link a link the server can read back", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      const file = expectMedia((yield* client.callTool("embedded_file", { rows: 3 })).result)
      assert.strictEqual(file.text, "A CSV table of 3 rows.")
      const blob = file.items[0]!
      if (blob._tag !== "Inline") return assert.fail("expected inline media")
      assert.strictEqual(blob.kind, "resource")
      assert.strictEqual(blob.mimeType, "text/csv")
      assert.strictEqual(blob.uri, "demo://files/powers-3.csv")
      assert.strictEqual(Buffer.from(blob.data).toString("utf8"), "n,square,cube\n1,1,1\n2,4,8\n3,9,27\n")

      const linked = expectMedia((yield* client.callTool("resource_link", {})).result)
      const link = linked.items[0]!
      if (link._tag !== "Link") return assert.fail("expected a resource link")
      assert.deepStrictEqual({ uri: link.uri, mimeType: link.mimeType, name: link.name }, {
        uri: "demo://notes/readme.md",
        mimeType: "text/markdown",
        name: "readme.md"
      })
      const read = (yield* client.request("resources/read", { uri: link.uri })) as {
        contents: Array<{ uri: string; mimeType: string; text: string }>
      }
      assert.strictEqual(read.contents[0]!.uri, "demo://notes/readme.md")
      assert.include(read.contents[0]!.text, "# Skald demo server")
    }))

  it.effect("long_job runs as a task: status messages per step, then the result", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      const statuses: Array<McpClient.TaskProgress> = []
      const outcome = yield* client.callTool("long_job", { steps: 3, intervalMs: 40 }, {
        onTaskStatus: (p) => Effect.sync(() => void statuses.push(p))
      })
      assert.strictEqual(textOf(outcome), "long_job: done, 3 steps of 40 ms")
      assert.isAbove(statuses.length, 1)
      const taskId = statuses[0]!.taskId
      assert.isTrue(statuses.every((s) => s.taskId === taskId))
      assert.strictEqual(statuses.at(-1)!.status, "completed")
      // Every message the poller saw is a step report (a poll before the first step has none).
      const messages = statuses.flatMap((s) => (s.statusMessage === undefined ? [] : [s.statusMessage]))
      assert.isAbove(messages.length, 0)
      for (const message of messages) assert.match(message, /^step [1-3] of 3$/)
      const started = records("long_job_started").find((r) => r.taskId === taskId)
      assert.deepStrictEqual({ steps: started?.steps, intervalMs: started?.intervalMs }, { steps: 3, intervalMs: 40 })
      assert.isTrue(records("long_job_completed").some((r) => r.taskId === taskId))
    }))

  it.effect("long_job as a task, stopped mid-way: the client sends tasks/cancel and the job stops", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      const statuses: Array<McpClient.TaskProgress> = []
      const fiber = yield* client.callTool("long_job", { steps: 1000, intervalMs: 30 }, {
        onTaskStatus: (p) => Effect.sync(() => void statuses.push(p))
      }).pipe(Effect.fork)
      yield* eventually(
        () => statuses.some((s) => /^step \d+ of 1000$/.test(s.statusMessage ?? "")),
        "a step was reported"
      )
      yield* Fiber.interrupt(fiber)
      const taskId = statuses[0]!.taskId
      yield* eventually(
        () => records("long_job_cancelled").some((r) => r.taskId === taskId),
        "the job saw the cancellation"
      )
      const cancelled = records("long_job_cancelled").find((r) => r.taskId === taskId)!
      assert.strictEqual(cancelled.via, "tasks/cancel")
      assert.isAtLeast(cancelled.step as number, 1)
      assert.isBelow(cancelled.step as number, 1000)
      const task = (yield* client.request("tasks/get", { taskId })) as { status: string; statusMessage?: string }
      assert.strictEqual(task.status, "cancelled")
      assert.isFalse(records("long_job_completed").some((r) => r.taskId === taskId))
    }))

  it.scoped("long_job as a plain call with a progressToken: notifications/progress for every step", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      const notifications = yield* collect(client.notifications)
      const result = (yield* client.request("tools/call", {
        name: "long_job",
        arguments: { steps: 4, intervalMs: 20 },
        _meta: { progressToken: "demo-progress-1" }
      })) as { content: Array<{ type: string; text: string }>; task?: unknown }
      assert.isUndefined(result.task, "a plain call gets a plain result")
      assert.deepStrictEqual(result.content, [{ type: "text", text: "long_job: done, 4 steps of 20 ms" }])
      const progress = yield* takeMatching(
        notifications,
        4,
        (n) => n.method === "notifications/progress" && paramsOf(n).progressToken === "demo-progress-1",
        "four progress notifications"
      )
      assert.deepStrictEqual(
        progress.map((n) => plain(n.params)),
        [1, 2, 3, 4].map((step) => ({
          progressToken: "demo-progress-1",
          progress: step,
          total: 4,
          message: `step ${step} of 4`
        }))
      )
    }))

  it.scoped("long_job as a plain call, interrupted: the client sends notifications/cancelled and the job stops", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      const notifications = yield* collect(client.notifications)
      const before = new Set(records("long_job_started").map((r) => r.taskId))
      const fiber = yield* client.request("tools/call", {
        name: "long_job",
        arguments: { steps: 1000, intervalMs: 30 },
        _meta: { progressToken: "demo-progress-2" }
      }).pipe(Effect.fork)
      yield* takeMatching(
        notifications,
        1,
        (n) => n.method === "notifications/progress" && paramsOf(n).progressToken === "demo-progress-2",
        "the first progress notification"
      )
      yield* Fiber.interrupt(fiber)
      const started = records("long_job_started").find((r) => !before.has(r.taskId))
      assert.isDefined(started)
      const taskId = started!.taskId
      yield* eventually(
        () => records("long_job_cancelled").some((r) => r.taskId === taskId),
        "the job saw the cancellation"
      )
      const cancelled = records("long_job_cancelled").find((r) => r.taskId === taskId)!
      assert.strictEqual(cancelled.via, "notifications/cancelled")
      assert.isBelow(cancelled.step as number, 1000)
    }))

  it.effect("fill_form: the handler is told every field (types, bounds, enum choices, defaults); accept fills defaults", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      script.state.reset(() => Effect.succeed({ action: "accept", content: { name: "Ada", age: 36, colour: "green" } }))
      const outcome = yield* client.callTool("fill_form", { message: "Who are you?" })
      const form = onlyForm(script.state.requests)
      assert.strictEqual(form.server, "demo")
      assert.strictEqual(form.message, "Who are you?")
      assert.isFalse(form.confirmation)
      assert.deepStrictEqual(plain(form.fields), [
        {
          name: "name",
          title: "Name",
          description: "What should we call you?",
          required: true,
          masked: false,
          kind: "string",
          minLength: 1,
          maxLength: 80
        },
        {
          name: "age",
          title: "Age",
          description: "In years",
          required: true,
          masked: false,
          kind: "integer",
          minimum: 0,
          maximum: 150
        },
        {
          name: "height",
          title: "Height",
          description: "In metres",
          required: false,
          masked: false,
          kind: "number",
          minimum: 0.3,
          maximum: 3,
          default: 1.7
        },
        {
          name: "newsletter",
          title: "Newsletter",
          description: "Subscribe to the (imaginary) newsletter",
          required: false,
          masked: false,
          kind: "boolean",
          default: false
        },
        {
          name: "colour",
          title: "Favourite colour",
          required: false,
          masked: false,
          kind: "enum",
          choices: [{ value: "red", title: "Red" }, { value: "green", title: "Green" }, {
            value: "blue",
            title: "Blue"
          }],
          default: "blue"
        }
      ])
      const [head, json] = textOf(outcome).split("\n")
      assert.strictEqual(head, "fill_form: accept")
      assert.deepStrictEqual(JSON.parse(json!), {
        name: "Ada",
        age: 36,
        height: 1.7,
        newsletter: false,
        colour: "green"
      })
      const answer = records("answer").filter((r) => r.tool === "fill_form").at(-1)
      assert.deepStrictEqual(answer?.keys, ["name", "age", "height", "newsletter", "colour"])
    }))

  it.effect("fill_form: decline and cancel reach the server as such", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      script.state.reset(() => Effect.succeed({ action: "decline" }))
      assert.strictEqual(textOf(yield* client.callTool("fill_form", {})), "fill_form: decline")
      assert.strictEqual(onlyForm(script.state.requests).message, "Tell the demo server about yourself")
      script.state.reset(() => Effect.succeed({ action: "cancel" }))
      assert.strictEqual(textOf(yield* client.callTool("fill_form", {})), "fill_form: cancel")
    }))

  it.effect("confirm_action is a confirmation (no fields): accept, decline and cancel", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      script.state.reset(() => Effect.succeed({ action: "accept" }))
      const yes = yield* client.callTool("confirm_action", { action: "launch the rocket" })
      const form = onlyForm(script.state.requests)
      assert.isTrue(form.confirmation)
      assert.deepStrictEqual(form.fields, [])
      assert.strictEqual(form.message, "Really launch the rocket?")
      assert.strictEqual(
        textOf(yes),
        "confirm_action: confirmed; would launch the rocket now (nothing was done: this is a demo)"
      )
      script.state.reset(() => Effect.succeed({ action: "decline" }))
      assert.strictEqual(
        textOf(yield* client.callTool("confirm_action", {})),
        "confirm_action: declined; did not delete the demo files"
      )
      script.state.reset(() => Effect.succeed({ action: "cancel" }))
      assert.strictEqual(textOf(yield* client.callTool("confirm_action", {})), "confirm_action: cancelled")
    }))

  it.effect("set_api_key in URL mode: a one-time 127.0.0.1 page takes the key, then elicitation/complete", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      const visits: Array<Promise<unknown>> = []
      // "Opening" the URL: a person fills in the page after saying yes to opening it.
      script.state.reset((request) =>
        Effect.sync(() => {
          if (request._tag === "Url") visits.push(fillInPage(request.url, { token: EXPECTED_KEY }))
          return { action: "accept" } as const
        })
      )
      const outcome = yield* client.callTool("set_api_key", { service: "Example Cloud" })
      const request = onlyUrl(script.state.requests)
      assert.strictEqual(request.message, "Enter your API key for Example Cloud (a demo: any text will do)")
      assert.match(request.url, /^http:\/\/127\.0\.0\.1:\d+\/elicit\/[\w-]+$/)
      // The server told the client the flow is complete.
      yield* request.completed.pipe(
        Effect.timeoutFail({
          duration: "10 seconds",
          onTimeout: () => new Error("no notifications/elicitation/complete")
        }),
        Effect.orDie
      )
      const visit = (yield* Effect.promise(() => visits[0]!)) as Awaited<ReturnType<typeof fillInPage>>
      assert.match(visit.form, /<input[^>]*name="token"[^>]*type="password"/)
      assert.strictEqual(visit.submitStatus, 200)
      assert.strictEqual(
        textOf(outcome),
        `set_api_key: received a key of ${EXPECTED_KEY.length} characters for Example Cloud (a demo: it is not stored)`
      )
      const answer = records("answer").filter((r) => r.tool === "set_api_key").at(-1)
      assert.deepStrictEqual({ action: answer?.action, matched: answer?.matched }, { action: "accept", matched: true })
      // The key is nowhere the client or the model could see it.
      assert.notInclude(JSON.stringify(outcome.wire), EXPECTED_KEY)
      assert.isFalse(logs.lines.some((l) => l.text.includes(EXPECTED_KEY)))
      assert.notInclude(Fs.readFileSync(record, "utf8"), EXPECTED_KEY)
      // One time only: the page is gone.
      const again = yield* Effect.promise(() => fetch(request.url).then((r) => r.status, () => "refused"))
      assert.notStrictEqual(again, 200)
    }))

  it.effect("set_api_key in URL mode, declined: the tool says so and the page is closed", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      script.state.reset(() => Effect.succeed({ action: "decline" }))
      assert.strictEqual(textOf(yield* client.callTool("set_api_key", {})), "set_api_key: decline")
      const request = onlyUrl(script.state.requests)
      const status = yield* Effect.promise(() => fetch(request.url).then((r) => r.status, () => "refused"))
      assert.notStrictEqual(status, 200)
      script.state.reset(() => Effect.succeed({ action: "cancel" }))
      assert.strictEqual(textOf(yield* client.callTool("set_api_key", {})), "set_api_key: cancel")
    }))

  it.scoped("event/demo_tick events arrive on the events stream (DEMO_TICK_SECONDS)", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      const events = yield* collect(client.events)
      const ticks = yield* takeMatching(events, 3, (n) => n.method === "event/demo_tick", "three ticks")
      const seqs = ticks.map((t) => paramsOf(t).seq as number)
      assert.deepStrictEqual(seqs, [seqs[0]!, seqs[0]! + 1, seqs[0]! + 2])
      for (const tick of ticks) {
        assert.isFalse(Number.isNaN(Date.parse(paramsOf(tick).at as string)))
        assert.isNumber(paramsOf(tick).uptimeSeconds)
      }
      // Events are not protocol notifications: they do not show up on the other stream.
      const notifications = yield* collect(client.notifications)
      yield* takeMatching(events, 1, (n) => n.method === "event/demo_tick", "one more tick")
      const other = yield* Queue.takeAll(notifications)
      assert.isFalse(Chunk.toReadonlyArray(other).some((n) => n.method === "event/demo_tick"))
    }))
})

// --- connections of their own ----------------------------------------------------------------

describe("demo server: other clients", () => {
  it.scopedLive(
    "a form-only client gets set_api_key as a masked form field named token; no ticks by default",
    () =>
      Effect.gen(function*() {
        const own = yield* tempRecordFile("demo-form")
        const formOnly = scripted(false, () => Effect.succeed({ action: "accept", content: { token: "form-key-123" } }))
        const capture = makeLogCapture()
        const client = yield* StdioTransport.client(
          stdioOptions({ DEMO_RECORD_FILE: own, DEMO_EXPECTED_API_KEY: "form-key-123" }),
          clientOptions
        ).pipe(Effect.provideService(Elicitation.ElicitationHandler, formOnly.handler), capture.provide)
        const outcome = yield* client.callTool("set_api_key", {})
        const form = onlyForm(formOnly.state.requests)
        assert.deepStrictEqual(plain(form.fields), [
          {
            name: "token",
            title: "API key for the demo service",
            required: true,
            masked: true,
            kind: "string",
            minLength: 1
          }
        ])
        assert.strictEqual(
          textOf(outcome),
          "set_api_key: received a key of 12 characters for the demo service (a demo: it is not stored)"
        )
        const answer = readRecords(own).find((r) => r.event === "answer")
        assert.deepStrictEqual({ action: answer?.action, matched: answer?.matched }, {
          action: "accept",
          matched: true
        })
        const initialized = readRecords(own).find((r) => r.event === "initialized")
        assert.deepStrictEqual((initialized?.capabilities as Record<string, unknown>).elicitation, { form: {} })
        assert.isTrue(capture.withTag("stderr").some((l) => l.includes("ticks off")))
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "without an elicitation handler the elicitation tools answer isError, saying why",
    () =>
      Effect.gen(function*() {
        const client = yield* StdioTransport.client(stdioOptions({}), clientOptions).pipe(makeLogCapture().provide)
        for (const tool of ["fill_form", "confirm_action", "set_api_key"]) {
          const outcome = yield* client.callTool(tool, {})
          assert.isTrue(outcome.wire.isError, tool)
          assert.include(textOf(outcome), `${tool}: `)
          assert.match(textOf(outcome), /form elicitation/)
        }
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "logging/setLevel is honoured: at warning, the info line of a call is not sent",
    () =>
      Effect.gen(function*() {
        const capture = makeLogCapture()
        const client = yield* StdioTransport.client(stdioOptions({}), clientOptions).pipe(capture.provide)
        yield* client.callTool("echo", { message: "one" })
        assert.include(capture.withTag("info"), "demo: echo called: 3 characters")
        yield* client.request("logging/setLevel", { level: "warning" })
        yield* client.callTool("echo", { message: "two!" })
        assert.notInclude(capture.withTag("info"), "demo: echo called: 4 characters")
        yield* client.request("logging/setLevel", { level: "info" })
        yield* client.callTool("echo", { message: "three" })
        assert.include(capture.withTag("info"), "demo: echo called: 5 characters")
      }),
    { timeout: 60_000 }
  )

  it.scopedLive("an unknown tool is McpUnknownTool listing the demo's tools", () =>
    Effect.gen(function*() {
      const client = yield* StdioTransport.client(stdioOptions({}), clientOptions).pipe(makeLogCapture().provide)
      const error = failureOf(yield* Effect.exit(client.callTool("nope", {})))
      assert.instanceOf(error, McpError.McpUnknownTool)
      if (error instanceof McpError.McpUnknownTool) assert.deepStrictEqual([...error.available], TOOL_NAMES)
    }), { timeout: 60_000 })
})

// --- HTTP mode ---------------------------------------------------------------------------------

/** A raw GET with a chosen Host header (fetch does not let one set it). */
const rawGet = (url: string, host: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const u = new URL(url)
    const req = Http.request(
      { hostname: u.hostname, port: u.port, path: u.pathname, method: "GET", headers: { host } },
      (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      }
    )
    req.on("error", reject)
    req.end()
  })

describe("demo server over Streamable HTTP", () => {
  it.scopedLive(
    "--http --port 0: prints its URL, lists tools, answers a call, streams events and logs",
    () =>
      Effect.gen(function*() {
        const running = yield* startDemoHttp(["--tick-seconds", "0.2"])
        assert.include(running.stderr(), "over Streamable HTTP")
        const capture = makeLogCapture()
        // The HTTP client layer lives as long as the test's scope (connectHttp builds it there).
        const client = yield* connectHttp("demo-http", running.url, { client: clientOptions }).pipe(capture.provide)
        const events = yield* collect(client.events)
        assert.deepStrictEqual((yield* client.tools).map((t) => t.name), TOOL_NAMES)
        assert.strictEqual(textOf(yield* client.callTool("echo", { message: "over http" })), "over http")
        const structured = yield* client.callTool("word_stats", { text: "a b a" })
        assert.deepStrictEqual(expectJson(structured.result).value, {
          characters: 5,
          words: 3,
          lines: 1,
          longestWord: "a",
          topWords: [{ word: "a", count: 2 }, { word: "b", count: 1 }]
        })
        const tick = yield* takeMatching(events, 1, (n) => n.method === "event/demo_tick", "a tick over HTTP")
        assert.isNumber(paramsOf(tick[0]!).seq)
        yield* eventually(() => capture.withTag("info").includes("demo: echo called: 9 characters"), "the log line")
        // The long job as a task works over HTTP too.
        assert.strictEqual(
          textOf(yield* client.callTool("long_job", { steps: 2, intervalMs: 20 })),
          "long_job: done, 2 steps of 20 ms"
        )
      }),
    { timeout: 60_000 }
  )

  it.scopedLive("refuses a foreign Host header and paths other than /mcp", () =>
    Effect.gen(function*() {
      const running = yield* startDemoHttp()
      const port = new URL(running.url).port
      assert.strictEqual(yield* Effect.promise(() => rawGet(running.url, "evil.example")), 403)
      assert.strictEqual(yield* Effect.promise(() => rawGet(running.url, `evil.example:${port}`)), 403)
      assert.strictEqual(
        yield* Effect.promise(() => rawGet(running.url.replace("/mcp", "/other"), `127.0.0.1:${port}`)),
        404
      )
      // A GET without a session is a protocol error, not a crash.
      assert.strictEqual(yield* Effect.promise(() => rawGet(running.url, `127.0.0.1:${port}`)), 400)
    }), { timeout: 60_000 })
})

// --- the command line --------------------------------------------------------------------------

interface Run {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `node ARGV…` from the repository root. */
const run = (argv: ReadonlyArray<string>): Promise<Run> =>
  new Promise((resolve) => {
    execFile(process.execPath, argv, { cwd: repoRoot }, (error, stdout, stderr) => {
      resolve({ status: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr })
    })
  })

const skald = Path.join(repoRoot, "packages", "server", "bin", "skald.js")
const demoArgv = ["node", "--import", "tsx", "scripts/demo-server.ts"]

describe("demo server: command line", () => {
  it("--help prints usage (flags, env, tools) on stdout and exits 0", async () => {
    const r = await run(["--import", "tsx", demoScript, "--help"])
    assert.strictEqual(r.status, 0, r.stderr)
    for (
      const needle of ["--http", "--port", "--tick-seconds", "DEMO_TICK_SECONDS", "DEMO_RECORD_FILE", ...TOOL_NAMES]
    ) {
      assert.include(r.stdout, needle)
    }
  })

  it("an unknown flag or a bad number is a usage error (exit 2)", async () => {
    const unknown = await run(["--import", "tsx", demoScript, "--nope"])
    assert.strictEqual(unknown.status, 2)
    assert.include(unknown.stderr, "--nope")
    const bad = await run(["--import", "tsx", demoScript, "--tick-seconds", "soon"])
    assert.strictEqual(bad.status, 2)
    assert.include(bad.stderr, "--tick-seconds must be")
  })

  it("`skald tools -- node --import tsx scripts/demo-server.ts` lists every tool, one a line", async () => {
    const r = await run([skald, "tools", "--", ...demoArgv])
    assert.strictEqual(r.status, 0, r.stderr)
    const names = r.stdout.trim().split("\n").map((line) => line.split(/\s+/)[0])
    assert.deepStrictEqual(names, TOOL_NAMES)
  })

  it("`skald call word_stats` prints the structured result as JSON", async () => {
    const r = await run([skald, "call", "word_stats", "--args", "{\"text\":\"to be or not to be\"}", "--", ...demoArgv])
    assert.strictEqual(r.status, 0, r.stderr)
    assert.deepStrictEqual(JSON.parse(r.stdout), {
      characters: 18,
      words: 6,
      lines: 1,
      longestWord: "not",
      topWords: [{ word: "be", count: 2 }, { word: "to", count: 2 }, { word: "not", count: 1 }, {
        word: "or",
        count: 1
      }]
    })
  })
})
