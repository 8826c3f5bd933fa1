/**
 * The demo MCP server's tools, built on the official SDK's `McpServer`: one fresh server per
 * connection (stdio has one; streamable HTTP one per session). Everything is generated locally —
 * no network, no files read — so a first run of the host works offline.
 *
 * Tools: `echo`, `word_stats` (outputSchema + structuredContent), `gradient_png` (image),
 * `sine_wav` (audio), `embedded_file` (an embedded resource blob), `resource_link`, `long_job`
 * (progress, task support "optional", cancellation), `fill_form` (form elicitation),
 * `confirm_action` (a yes/no confirmation), `set_api_key` (URL-mode elicitation on a one-time
 * 127.0.0.1 page). Plus `event/demo_tick` events and `notifications/message` logging.
 */
import {
  type CreateTaskRequestHandlerExtra,
  InMemoryTaskMessageQueue
} from "@modelcontextprotocol/sdk/experimental/tasks"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import {
  type CallToolResult,
  type LoggingLevel,
  type ServerNotification,
  SetLevelRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { setTimeout as delay } from "node:timers/promises"
import { z } from "zod"
import { askSecret, ElicitationUnsupported } from "../lib/url-elicitation.js"
import { encodePng, encodeSineWav, gradientPixels, parseColor } from "./media.js"
import { isTerminal, WatchedTaskStore } from "./tasks.js"

export const SERVER_NAME = "skald-demo"
export const SERVER_VERSION = "1.0.0"

/** One line of the record file (`DEMO_RECORD_FILE`): what happened, never a value the user typed. */
export type Recorder = (entry: Record<string, unknown>) => void

export interface DemoOptions {
  /** Seconds between `event/demo_tick` events; undefined or 0: no ticks. */
  readonly tickSeconds?: number | undefined
  /** Where notable events go (tests read them); default: nowhere. */
  readonly record?: Recorder | undefined
  /** A value `set_api_key` compares its answer with, recording only whether it matched (tests). */
  readonly expectedApiKey?: string | undefined
}

/** The tools, in the order they are registered (for `--help` and the banner). */
export const TOOLS: ReadonlyArray<{ readonly name: string; readonly summary: string }> = [
  { name: "echo", summary: "text: echoes a message" },
  { name: "word_stats", summary: "structured: counts in a text (outputSchema + structuredContent + text mirror)" },
  { name: "gradient_png", summary: "image: a generated PNG gradient" },
  { name: "sine_wav", summary: "audio: a generated WAV sine tone" },
  { name: "embedded_file", summary: "embedded resource: a generated CSV file as a base64 blob" },
  { name: "resource_link", summary: "resource_link: a link to demo://notes/readme.md (resources/read)" },
  { name: "long_job", summary: "progress, task support (optional) and cancellation" },
  { name: "fill_form", summary: "form elicitation: string, integer, number, boolean and enum fields with defaults" },
  { name: "confirm_action", summary: "elicitation: a yes/no confirmation" },
  { name: "set_api_key", summary: "URL-mode elicitation: a one-time page on 127.0.0.1 asks for a key" }
]

const README = `# Skald demo server

This resource is served by the demo MCP server itself (\`resources/read demo://notes/readme.md\`).
The \`resource_link\` tool returns a link to it.
`

const text = (value: string): CallToolResult => ({ content: [{ type: "text", text: value }] })
const failure = (value: string): CallToolResult => ({ ...text(value), isError: true })

const LEVELS: ReadonlyArray<LoggingLevel> = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency"
]

type Extra = {
  readonly signal: AbortSignal
  readonly requestId: string | number
  readonly _meta?: { readonly progressToken?: string | number | undefined } | undefined
  readonly sendNotification: (notification: ServerNotification) => Promise<void>
}

/** The demo server for one connection; closing it stops its ticks and running jobs. */
export const makeDemoServer = (options: DemoOptions = {}): McpServer => {
  const record: Recorder = options.record ?? (() => {})
  const taskStore = new WatchedTaskStore()
  const server = new McpServer(
    { name: SERVER_NAME, version: SERVER_VERSION, title: "Skald demo server" },
    {
      capabilities: {
        tools: {},
        resources: {},
        logging: {},
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } }
      },
      taskStore,
      taskMessageQueue: new InMemoryTaskMessageQueue(),
      instructions:
        "An offline demo of every MCP feature Skald supports. Nothing here touches the network or your files."
    }
  )

  // --- lifecycle: ticks start once the client is initialized, everything stops on close -------
  const closing = new AbortController()
  let ticker: NodeJS.Timeout | undefined
  let tickSeq = 0
  const startedAt = Date.now()
  server.server.oninitialized = () => {
    record({ event: "initialized", capabilities: server.server.getClientCapabilities() ?? {} })
    const seconds = options.tickSeconds ?? 0
    if (seconds <= 0 || ticker !== undefined) return
    ticker = setInterval(() => {
      tickSeq++
      const params = {
        seq: tickSeq,
        at: new Date().toISOString(),
        uptimeSeconds: Math.round((Date.now() - startedAt) / 1000)
      }
      // A custom notification (an "event" in the seed's sense), not one of the protocol's own.
      server.server.notification({ method: "event/demo_tick", params } as unknown as ServerNotification).catch(() => {})
    }, seconds * 1000)
  }
  server.server.onclose = () => {
    if (ticker !== undefined) clearInterval(ticker)
    ticker = undefined
    closing.abort()
  }

  // --- logging: notifications/message, honouring logging/setLevel -------------------------------
  let minLevel: LoggingLevel = "debug"
  server.server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    minLevel = request.params.level
    record({ event: "set-level", level: minLevel })
    return {}
  })
  const log = (extra: Extra, level: LoggingLevel, data: string) => {
    if (LEVELS.indexOf(level) < LEVELS.indexOf(minLevel)) return Promise.resolve()
    return extra
      .sendNotification({ method: "notifications/message", params: { level, logger: "demo", data } })
      .catch(() => {})
  }
  const called = (extra: Extra, tool: string, detail = "") => {
    record({ event: "tool", tool })
    return log(extra, "info", `${tool} called${detail === "" ? "" : `: ${detail}`}`)
  }

  // --- text ----------------------------------------------------------------------------------
  server.registerTool(
    "echo",
    {
      title: "Echo",
      description: "Answers with the message it was given (a plain text result).",
      inputSchema: { message: z.string().describe("What to echo back") },
      annotations: { readOnlyHint: true, openWorldHint: false }
    },
    async ({ message }, extra) => {
      await called(extra, "echo", `${message.length} characters`)
      return text(message)
    }
  )

  // --- structured ----------------------------------------------------------------------------
  const wordStats = {
    characters: z.number().int().describe("Characters (UTF-16 code units)"),
    words: z.number().int().describe("Words (runs of letters, digits, apostrophes)"),
    lines: z.number().int().describe("Lines"),
    longestWord: z.string().describe("The longest word (the first one if several)"),
    topWords: z.array(z.object({ word: z.string(), count: z.number().int() }))
      .describe("The most frequent words, lower-cased, most frequent first (at most 5)")
  }
  server.registerTool(
    "word_stats",
    {
      title: "Word statistics",
      description:
        "Counts characters, words and lines of a text. Returns structuredContent matching its outputSchema, " +
        "and the same object as JSON text.",
      inputSchema: { text: z.string().describe("The text to count") },
      outputSchema: wordStats,
      annotations: { readOnlyHint: true, openWorldHint: false }
    },
    async ({ text: input }, extra) => {
      await called(extra, "word_stats")
      const words = input.match(/[\p{L}\p{N}']+/gu) ?? []
      const counts = new Map<string, number>()
      for (const word of words) counts.set(word.toLowerCase(), (counts.get(word.toLowerCase()) ?? 0) + 1)
      const topWords = [...counts.entries()]
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
        .slice(0, 5)
        .map(([word, count]) => ({ word, count }))
      const structured = {
        characters: input.length,
        words: words.length,
        lines: input === "" ? 0 : input.split(/\r\n|\r|\n/).length,
        longestWord: words.reduce((best, w) => (w.length > best.length ? w : best), ""),
        topWords
      }
      return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured }
    }
  )

  // --- media ---------------------------------------------------------------------------------
  server.registerTool(
    "gradient_png",
    {
      title: "Gradient image",
      description: "Draws a left-to-right colour gradient (darker towards the bottom) and returns it as a PNG image.",
      inputSchema: {
        width: z.number().int().min(1).max(1024).optional().describe("Width in pixels (default 256)"),
        height: z.number().int().min(1).max(1024).optional().describe("Height in pixels (default 128)"),
        from: z.string().optional().describe("Left colour, #rrggbb (default #1e3a8a)"),
        to: z.string().optional().describe("Right colour, #rrggbb (default #f59e0b)")
      },
      annotations: { readOnlyHint: true, openWorldHint: false }
    },
    async (args, extra) => {
      await called(extra, "gradient_png")
      const width = args.width ?? 256
      const height = args.height ?? 128
      const fromText = args.from ?? "#1e3a8a"
      const toText = args.to ?? "#f59e0b"
      const from = parseColor(fromText)
      const to = parseColor(toText)
      if (from === undefined || to === undefined) {
        return failure(
          `gradient_png: colours must look like #rrggbb (got ${JSON.stringify(from === undefined ? fromText : toText)})`
        )
      }
      const png = encodePng(width, height, gradientPixels(width, height, from, to))
      return {
        content: [
          {
            type: "text",
            text: `A ${width}×${height} gradient from ${fromText} to ${toText} (${png.length} bytes of PNG).`
          },
          { type: "image", data: png.toString("base64"), mimeType: "image/png" }
        ]
      }
    }
  )

  server.registerTool(
    "sine_wav",
    {
      title: "Sine tone",
      description: "Synthesises a sine tone and returns it as a WAV file (16-bit PCM, mono).",
      inputSchema: {
        frequency: z.number().min(20).max(20000).optional().describe("Hz (default 440)"),
        durationMs: z.number().int().min(10).max(10000).optional().describe("Milliseconds (default 1000)"),
        sampleRate: z.number().int().min(8000).max(48000).optional().describe("Samples per second (default 16000)")
      },
      annotations: { readOnlyHint: true, openWorldHint: false }
    },
    async (args, extra) => {
      await called(extra, "sine_wav")
      const tone = {
        frequency: args.frequency ?? 440,
        durationMs: args.durationMs ?? 1000,
        sampleRate: args.sampleRate ?? 16000
      }
      const wav = encodeSineWav(tone)
      return {
        content: [
          {
            type: "text",
            text:
              `A ${tone.frequency} Hz sine tone, ${tone.durationMs} ms at ${tone.sampleRate} Hz (${wav.length} bytes of WAV).`
          },
          { type: "audio", data: wav.toString("base64"), mimeType: "audio/wav" }
        ]
      }
    }
  )

  server.registerTool(
    "embedded_file",
    {
      title: "Embedded file",
      description: "Returns a generated CSV table (n, n², n³) as an embedded resource with a base64 blob.",
      inputSchema: { rows: z.number().int().min(1).max(1000).optional().describe("Rows after the header (default 5)") },
      annotations: { readOnlyHint: true, openWorldHint: false }
    },
    async ({ rows }, extra) => {
      await called(extra, "embedded_file")
      const n = rows ?? 5
      const lines = ["n,square,cube"]
      for (let i = 1; i <= n; i++) lines.push(`${i},${i * i},${i * i * i}`)
      const csv = lines.join("\n") + "\n"
      return {
        content: [
          { type: "text", text: `A CSV table of ${n} rows.` },
          {
            type: "resource",
            resource: {
              uri: `demo://files/powers-${n}.csv`,
              mimeType: "text/csv",
              blob: Buffer.from(csv, "utf8").toString("base64")
            }
          }
        ]
      }
    }
  )

  server.registerResource(
    "readme",
    "demo://notes/readme.md",
    { title: "Demo server readme", description: "A note served by the demo server", mimeType: "text/markdown" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/markdown", text: README }] })
  )

  server.registerTool(
    "resource_link",
    {
      title: "Resource link",
      description:
        "Returns a resource_link to demo://notes/readme.md, which this server serves through resources/read.",
      annotations: { readOnlyHint: true, openWorldHint: false }
    },
    async (extra) => {
      await called(extra, "resource_link")
      return {
        content: [
          { type: "text", text: "The demo server's readme:" },
          {
            type: "resource_link",
            uri: "demo://notes/readme.md",
            name: "readme.md",
            title: "Demo server readme",
            mimeType: "text/markdown",
            description: "Read it with resources/read"
          }
        ]
      }
    }
  )

  // --- the long job: progress, tasks, cancellation -----------------------------------------
  const longJobArgs = {
    steps: z.number().int().min(1).max(1000).optional().describe("How many steps (default 10)"),
    intervalMs: z.number().int().min(0).max(60000).optional().describe("Milliseconds per step (default 1000)")
  }
  type LongJobArgs = { steps?: number | undefined; intervalMs?: number | undefined }

  /**
   * Runs the job in the background. Stops early when the call is cancelled
   * (`notifications/cancelled`: the request's signal) or the task is (`tasks/cancel`: the SDK
   * writes `cancelled` into the store). Reports each step as `notifications/progress` (when the
   * call carried a progressToken), a task status message and a debug log line.
   */
  const runLongJob = async (taskId: string, args: LongJobArgs, extra: CreateTaskRequestHandlerExtra) => {
    const steps = args.steps ?? 10
    const intervalMs = args.intervalMs ?? 1000
    const progressToken = extra._meta?.progressToken
    const stop = new AbortController()
    let via: string | undefined
    const cancel = (reason: string) => {
      via ??= reason
      stop.abort()
    }
    const unwatch = taskStore.watch(taskId, (status) => {
      if (status === "cancelled") cancel("tasks/cancel")
    })
    const onCallCancelled = () => cancel("notifications/cancelled")
    if (extra.signal.aborted) onCallCancelled()
    else extra.signal.addEventListener("abort", onCallCancelled, { once: true })
    const onClose = () => cancel("connection closed")
    closing.signal.addEventListener("abort", onClose, { once: true })
    let step = 0
    try {
      for (step = 1; step <= steps; step++) {
        await delay(intervalMs, undefined, { signal: stop.signal })
        const message = `step ${step} of ${steps}`
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken, progress: step, total: steps, message }
          }).catch(() => {})
        }
        await extra.taskStore.updateTaskStatus(taskId, "working", message).catch(() => {})
        await log(extra, "debug", `long_job ${message}`)
      }
      await extra.taskStore.storeTaskResult(
        taskId,
        "completed",
        text(`long_job: done, ${steps} steps of ${intervalMs} ms`)
      )
      record({ event: "long_job_completed", taskId, steps })
    } catch (error) {
      if (!stop.signal.aborted) {
        record({ event: "long_job_failed", taskId, error: String(error) })
        const task = await taskStore.getTask(taskId)
        if (task !== null && !isTerminal(task.status)) {
          await taskStore.updateTaskStatus(taskId, "failed", `long_job failed: ${String(error)}`)
        }
        return
      }
      record({ event: "long_job_cancelled", taskId, via, step: step - 1, steps })
      // A cancelled plain call: end its hidden task, so the SDK's poll of it ends too.
      const task = await taskStore.getTask(taskId)
      if (task !== null && !isTerminal(task.status)) {
        await taskStore.updateTaskStatus(taskId, "cancelled", `long_job stopped: ${via}`)
      }
    } finally {
      unwatch()
      extra.signal.removeEventListener("abort", onCallCancelled)
      closing.signal.removeEventListener("abort", onClose)
    }
  }

  server.experimental.tasks.registerToolTask(
    "long_job",
    {
      title: "Long job",
      description:
        "Works through `steps` steps of `intervalMs` ms each, reporting progress (notifications/progress with a " +
        "progressToken; task status messages as a task). Can run as a task (optional). Stops when cancelled " +
        "(notifications/cancelled or tasks/cancel).",
      inputSchema: longJobArgs,
      execution: { taskSupport: "optional" },
      annotations: { readOnlyHint: true, openWorldHint: false }
    },
    {
      createTask: async (args, extra) => {
        const steps = args.steps ?? 10
        const intervalMs = args.intervalMs ?? 1000
        const task = await extra.taskStore.createTask({
          ttl: extra.taskRequestedTtl ?? 10 * 60 * 1000,
          pollInterval: Math.min(1000, Math.max(100, intervalMs))
        })
        record({ event: "tool", tool: "long_job" })
        record({ event: "long_job_started", taskId: task.taskId, steps, intervalMs })
        await log(extra, "info", `long_job called: ${steps} steps of ${intervalMs} ms`)
        void runLongJob(task.taskId, args, extra)
        return { task }
      },
      // The SDK answers tasks/get and tasks/result from the store itself; these are never called.
      getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult
    }
  )

  // --- elicitation ---------------------------------------------------------------------------
  /** Elicitation needs the client's consent: without the capability the tool says so. */
  const unsupported = (tool: string, error: unknown): CallToolResult | undefined => {
    if (error instanceof ElicitationUnsupported) return failure(`${tool}: ${error.message}`)
    if (error instanceof Error && /does not support/.test(error.message)) return failure(`${tool}: ${error.message}`)
    return undefined
  }

  server.registerTool(
    "fill_form",
    {
      title: "Fill in a form",
      description:
        "Asks the user to fill in a small profile form (form elicitation: string, integer, number, boolean and " +
        "enum fields, some with defaults) and returns what was answered.",
      inputSchema: { message: z.string().optional().describe("The question shown above the form") }
    },
    async ({ message }, extra) => {
      await called(extra, "fill_form")
      try {
        const answer = await server.server.elicitInput(
          {
            mode: "form",
            message: message ?? "Tell the demo server about yourself",
            requestedSchema: {
              type: "object",
              properties: {
                name: {
                  type: "string",
                  title: "Name",
                  description: "What should we call you?",
                  minLength: 1,
                  maxLength: 80
                },
                age: { type: "integer", title: "Age", description: "In years", minimum: 0, maximum: 150 },
                height: {
                  type: "number",
                  title: "Height",
                  description: "In metres",
                  minimum: 0.3,
                  maximum: 3,
                  default: 1.7
                },
                newsletter: {
                  type: "boolean",
                  title: "Newsletter",
                  description: "Subscribe to the (imaginary) newsletter",
                  default: false
                },
                colour: {
                  type: "string",
                  title: "Favourite colour",
                  oneOf: [
                    { const: "red", title: "Red" },
                    { const: "green", title: "Green" },
                    { const: "blue", title: "Blue" }
                  ],
                  default: "blue"
                }
              },
              required: ["name", "age"]
            }
          },
          { relatedRequestId: extra.requestId, signal: extra.signal, timeout: 10 * 60 * 1000 }
        )
        record({ event: "answer", tool: "fill_form", action: answer.action, keys: Object.keys(answer.content ?? {}) })
        if (answer.action !== "accept") return text(`fill_form: ${answer.action}`)
        return text(`fill_form: accept\n${JSON.stringify(answer.content ?? {})}`)
      } catch (error) {
        const result = unsupported("fill_form", error)
        if (result !== undefined) return result
        throw error
      }
    }
  )

  server.registerTool(
    "confirm_action",
    {
      title: "Confirm an action",
      description: "Asks the user a yes/no question (a form elicitation without fields) before a pretend action.",
      inputSchema: { action: z.string().optional().describe("What would be done (default: \"delete the demo files\")") }
    },
    async ({ action }, extra) => {
      const what = action ?? "delete the demo files"
      await called(extra, "confirm_action")
      try {
        const answer = await server.server.elicitInput(
          { mode: "form", message: `Really ${what}?`, requestedSchema: { type: "object", properties: {} } },
          { relatedRequestId: extra.requestId, signal: extra.signal, timeout: 10 * 60 * 1000 }
        )
        record({
          event: "answer",
          tool: "confirm_action",
          action: answer.action,
          keys: Object.keys(answer.content ?? {})
        })
        switch (answer.action) {
          case "accept":
            return text(`confirm_action: confirmed; would ${what} now (nothing was done: this is a demo)`)
          case "decline":
            return text(`confirm_action: declined; did not ${what}`)
          case "cancel":
            return text("confirm_action: cancelled")
        }
      } catch (error) {
        const result = unsupported("confirm_action", error)
        if (result !== undefined) return result
        throw error
      }
    }
  )

  server.registerTool(
    "set_api_key",
    {
      title: "Set an API key",
      description: "Asks for an API key the safe way: on a one-time page this server serves on 127.0.0.1 (URL-mode " +
        "elicitation) when the client supports it, else a form with a masked field named token. The key is never " +
        "stored or returned.",
      inputSchema: { service: z.string().optional().describe("Whose key (default \"the demo service\")") }
    },
    async ({ service }, extra) => {
      const whose = service ?? "the demo service"
      await called(extra, "set_api_key")
      try {
        const answer = await askSecret(server, {
          title: `API key for ${whose}`,
          message: `Enter your API key for ${whose} (a demo: any text will do)`,
          field: "token",
          signal: extra.signal,
          relatedRequestId: extra.requestId
        })
        if (answer.action !== "accept") {
          record({ event: "answer", tool: "set_api_key", action: answer.action })
          return text(`set_api_key: ${answer.action}${answer.reason !== undefined ? ` (${answer.reason})` : ""}`)
        }
        record({
          event: "answer",
          tool: "set_api_key",
          action: "accept",
          ...(options.expectedApiKey !== undefined ? { matched: answer.value === options.expectedApiKey } : {})
        })
        return text(
          `set_api_key: received a key of ${answer.value.length} characters for ${whose} (a demo: it is not stored)`
        )
      } catch (error) {
        const result = unsupported("set_api_key", error)
        if (result !== undefined) return result
        throw error
      }
    }
  )

  return server
}
