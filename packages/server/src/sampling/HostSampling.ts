/**
 * Hosted sampling (docs/inbox.md, *Sampling*): the host's servers' `sampling/createMessage`
 * answered by the host's configured model (agent/llm/Model.ts), each request approved by a person
 * through the inbox.
 *
 * A request, in order:
 * 1. the server's **rate limit** (default 10 requests a minute, a sliding window on the `Clock`):
 *    over it, refused at once (`-1`), nobody is asked;
 * 2. the **model**, resolved from the model settings as they are now: none configured (or
 *    unusable), refused (`-1`) saying why;
 * 3. the **approval**: the rules `sampling:<server>` (exact) and `sampling:*`-style globs decide
 *    (ApprovalRules.ts; tool rules such as `*` never do); with none, an `Approval` item in the inbox
 *    (tool `sampling:<server>`, origin the server, arguments a summary of the messages, the system
 *    prompt, the tools offered and the effective `maxTokens`). `Approve {always}` also stores the
 *    rule `sampling:<server> → allow`; `Deny` or the deadline refuses with the spec's "User
 *    rejected sampling request" (`-1`). Where no person is there (mode `allow` / `deny`, as the
 *    approval gate's), an `ask` is allowed or refused without an item;
 * 4. **one generation** (`generateText`), with `maxTokens` capped by the host's maximum (default
 *    4096), the request's temperature and stop sequences, the server's tools offered unresolved:
 *    the model's calls go back as `tool_use` blocks (stop reason `toolUse`) — the host never runs
 *    the server's tools; the server runs them and asks again with `tool_result`. Bounded by a
 *    timeout (default 2 minutes).
 *
 * The model's key never reaches an answer, a log line or the inbox: errors are redacted with it.
 * A server's `notifications/cancelled` interrupts all of this (the item is `withdrawn`, the model's
 * request aborted).
 *
 * @since 0.1.0
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import type { InboxItem } from "@skald/domain"
import { Sampling } from "@skald/mcp"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as GenerationConfig from "../agent/llm/GenerationConfig.js"
import * as JsonSchemaTool from "../agent/llm/JsonSchemaTool.js"
import * as Model from "../agent/llm/Model.js"
import { ModelSettings } from "../agent/llm/ModelSettings.js"
import * as ToolNames from "../agent/llm/ToolNames.js"
import * as Redactor from "../host/Redactor.js"
import { SamplingSource } from "../host/SamplingSource.js"
import { ApprovalRules, type Decision, mostSpecific } from "../inbox/ApprovalRules.js"
import type * as Approvals from "../inbox/Approvals.js"
import { Inbox } from "../inbox/Inbox.js"

/** The settings; each has a default, and the limits an environment variable. */
export interface Options {
  /** What an `ask` becomes (default `ask`: the inbox), as the approval gate's mode. */
  readonly mode?: Approvals.Mode | undefined
  /** How long an approval waits for its answer (default 5 minutes); then refused. */
  readonly deadline?: Duration.DurationInput | undefined
  /** The most tokens a request may ask for (default `SKALD_SAMPLING_MAX_TOKENS`, else 4096). */
  readonly maxTokens?: number | undefined
  /** Requests a server may make per minute (default `SKALD_SAMPLING_PER_MINUTE`, else 10). */
  readonly perMinute?: number | undefined
  /** How long the model has to answer (default 2 minutes). */
  readonly timeout?: Duration.DurationInput | undefined
  /** The provider's retries (tests shorten them). */
  readonly tuning?: Model.Tuning | undefined
}

/** The defaults of `Options`. */
export const defaults = {
  mode: "ask" as Approvals.Mode,
  deadline: Duration.minutes(5),
  maxTokens: 4096,
  perMinute: 10,
  timeout: Duration.minutes(2)
} as const

/** The rule key of a server's sampling (a server name never holds `:`, a tool name never does). */
export const ruleKey = (server: string): string => `sampling:${server}`

const RULE_PREFIX = "sampling:"

const refused = (message: string, code: number = Sampling.REJECTED) => new Sampling.SamplingRefused({ code, message })

const INTERNAL_ERROR = -32603

const clip = (text: string, max = 500): string => text.length > max ? `${text.slice(0, max)}…` : text

/** A content block as the person reads it (media as its type and size, never its bytes). */
const describeBlock = (block: Sampling.Block | Readonly<Record<string, unknown>>): string => {
  switch (block.type) {
    case "text":
      return String(block.text)
    case "image":
    case "audio":
      return `[${block.type} ${String(block.mimeType)}, ${String(block.data).length} base64 characters]`
    case "tool_use":
      return `[tool_use ${String(block.name)} ${JSON.stringify(block.input)}]`
    case "tool_result": {
      const inner = Array.isArray(block.content)
        ? block.content.map((b) => describeBlock(b as Record<string, unknown>)).join(" ")
        : ""
      return `[tool_result${block.isError === true ? " (error)" : ""} ${inner}]`
    }
    case "resource_link":
      return `[resource_link ${String(block.uri)}]`
    case "resource":
      return "[embedded resource]"
    default:
      return `[${String(block.type)}]`
  }
}

/** What the approval shows: the messages (clipped), the system prompt, the tools, the token budget. */
export const summaryOf = (request: Sampling.Request, maxTokens: number) => ({
  messages: request.messages.map((m) => ({ role: m.role, text: clip(m.content.map(describeBlock).join("\n")) })),
  ...(request.systemPrompt === undefined ? {} : { systemPrompt: clip(request.systemPrompt) }),
  maxTokens,
  ...(maxTokens < request.maxTokens ? { requestedMaxTokens: request.maxTokens } : {}),
  ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
  ...(request.tools.length === 0 ? {} : { tools: request.tools.map((t) => t.name), toolChoice: request.toolChoice })
})

/** The text a tool result gives the model: its structured content, else its blocks as text. */
const toolResultValue = (block: typeof Sampling.ToolResultContent.Type): unknown =>
  block.structuredContent ?? block.content.map((b) => b.type === "text" ? String(b.text) : describeBlock(b)).join("\n")

/** The request as a prompt, tools named as the provider takes them. */
export const promptOf = (request: Sampling.Request, names: ToolNames.ToolNameMap): Array<Prompt.MessageEncoded> => {
  const out: Array<Prompt.MessageEncoded> = []
  if (request.systemPrompt !== undefined && request.systemPrompt.length > 0) {
    out.push({ role: "system", content: request.systemPrompt })
  }
  const calledAs = new Map<string, string>()
  for (const message of request.messages) {
    if (message.role === "assistant") {
      const content: Array<Prompt.AssistantMessagePartEncoded> = []
      for (const block of message.content) {
        if (block.type === "tool_use") {
          const name = names.toProvider(block.name)
          calledAs.set(block.id, name)
          content.push({ type: "tool-call", id: block.id, name, params: block.input, providerExecuted: false })
        } else {
          content.push({ type: "text", text: describeBlock(block) })
        }
      }
      out.push({ role: "assistant", content })
    } else if (message.content.some((b) => b.type === "tool_result")) {
      out.push({
        role: "tool",
        content: message.content.flatMap((block) =>
          block.type === "tool_result"
            ? [{
              type: "tool-result" as const,
              id: block.toolUseId,
              name: calledAs.get(block.toolUseId) ?? "tool",
              isFailure: block.isError === true,
              result: toolResultValue(block),
              providerExecuted: false
            }]
            : []
        )
      })
    } else {
      out.push({
        role: "user",
        content: message.content.map((block): Prompt.UserMessagePartEncoded =>
          block.type === "image" || block.type === "audio"
            ? { type: "file", mediaType: block.mimeType, data: block.data }
            : { type: "text", text: describeBlock(block) }
        )
      })
    }
  }
  return out
}

const stopReasonOf = (reason: string, toolCalls: number): string | undefined => {
  switch (reason) {
    case "tool-calls":
      return toolCalls > 0 ? "toolUse" : "endTurn"
    case "length":
      return "maxTokens"
    case "stop":
      return "endTurn"
    case "unknown":
      return undefined
    default:
      return reason
  }
}

/** Makes the answerer in the current context (the inbox, the rules, the model settings, Node's HTTP client and dispatcher). */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const inbox = yield* Inbox
    const rules = yield* ApprovalRules
    const settings = yield* ModelSettings
    const http = yield* HttpClient.HttpClient
    const dispatcher = yield* NodeHttpClient.Dispatcher
    const mode = options.mode ?? defaults.mode
    const deadline = options.deadline ?? defaults.deadline
    const hostMax = options.maxTokens ??
      (yield* Config.integer("SKALD_SAMPLING_MAX_TOKENS").pipe(Config.withDefault(defaults.maxTokens)))
    const perMinute = options.perMinute ??
      (yield* Config.integer("SKALD_SAMPLING_PER_MINUTE").pipe(Config.withDefault(defaults.perMinute)))
    const timeout = Duration.decode(options.timeout ?? defaults.timeout)

    /** Each server's request times in the last minute. */
    const recent = new Map<string, Array<number>>()
    const admit = (server: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const window = (recent.get(server) ?? []).filter((t) => t > now - 60_000)
        recent.set(server, window)
        if (window.length >= perMinute) {
          const wait = Math.max(1, Math.ceil((window[0]! + 60_000 - now) / 1000))
          return Effect.fail(
            refused(
              `sampling rate limit reached for server ${server}: at most ${perMinute} requests a minute; ` +
                `try again in ${wait} s`
            )
          )
        }
        window.push(now)
        return Effect.void
      })

    /** Whether the person (or a rule, or the mode) lets this request reach the model. */
    const approve = (request: Sampling.Request, maxTokens: number) =>
      Effect.gen(function*() {
        const key = ruleKey(request.server)
        const all = yield* rules.list.pipe(
          Effect.mapError(() => refused("the host could not read its approval rules", INTERNAL_ERROR))
        )
        const rule = mostSpecific(all.filter((r) => r.pattern.startsWith(RULE_PREFIX)), key)
        const decision: Decision = rule?.decision ?? "ask"
        if (decision === "allow") return
        if (decision === "deny") {
          return yield* refused(
            `User rejected sampling request: the approval rule ${
              rule!.pattern
            } denies sampling for server ${request.server}`
          )
        }
        if (mode === "allow") return
        if (mode === "deny") return yield* refused("User rejected sampling request: no person was there to approve it")
        const answer: InboxItem.InboxAnswer = yield* inbox.ask({
          _tag: "Approval",
          origin: { server: request.server },
          tool: key,
          arguments: summaryOf(request, maxTokens),
          annotations: {},
          reason: rule === undefined
            ? `the server ${request.server} asks to use the host's model`
            : `the rule ${rule.pattern} says ask`
        }, { deadline })
        if (answer._tag !== "Approve") {
          return yield* refused("User rejected sampling request: the person denied it (or did not answer in time)")
        }
        if (answer.always) {
          yield* rules.set(key, "allow").pipe(
            Effect.catchAll((error) =>
              Effect.logWarning(`sampling was approved, but the rule ${key} could not be stored: ${error.message}`)
            )
          )
        }
      })

    const createMessage = Effect.fn("HostSampling.createMessage")(function*(request: Sampling.Request) {
      yield* Effect.annotateCurrentSpan({ "mcp.server": request.server, "sampling.max_tokens": request.maxTokens })
      yield* admit(request.server)
      const resolved = yield* settings.resolve.pipe(
        Effect.mapError((error) => refused(`the host cannot sample: ${error.message}`))
      )
      const redactor = Redactor.make(resolved.apiKey === undefined ? [] : [resolved.apiKey])
      const maxTokens = Math.min(request.maxTokens, hostMax)
      yield* approve(request, maxTokens)

      const names = ToolNames.make(request.tools.map((t) => t.name))
      const tools: Record<string, Tool.Any> = {}
      for (const t of request.tools) {
        const name = names.toProvider(t.name)
        tools[name] = JsonSchemaTool.fromJsonSchema(name, t.description, t.inputSchema)
      }
      const toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> = {
        tools,
        handle: () => Effect.dieMessage("the server runs its own tools")
      }
      const generated = Effect.flatMap(LanguageModel.LanguageModel, (model) =>
        model.generateText({
          prompt: promptOf(request, names),
          ...(request.tools.length === 0 ? {} : { toolkit, toolChoice: request.toolChoice }),
          disableToolCallResolution: true
        })).pipe(
          GenerationConfig.withConfig({
            maxTokens,
            temperature: request.temperature,
            stopSequences: request.stopSequences
          }),
          Effect.provide(Model.providerLayer(resolved, options.tuning)),
          Effect.provideService(HttpClient.HttpClient, http),
          Effect.provideService(NodeHttpClient.Dispatcher, dispatcher)
        )
      const response = yield* generated.pipe(
        Effect.timeoutFail({
          duration: timeout,
          onTimeout: () => refused(`the host's model did not answer within ${Duration.format(timeout)}`, INTERNAL_ERROR)
        }),
        Effect.catchAll((error) =>
          Effect.fail(
            error instanceof Sampling.SamplingRefused
              ? error
              : refused(`the host's model failed: ${redactor.redact(error.message)}`, INTERNAL_ERROR)
          )
        )
      )
      const text = response.content.flatMap((p) => p.type === "text" ? [p.text] : []).join("")
      const calls = request.tools.length === 0
        ? []
        : response.content.flatMap((p) =>
          p.type === "tool-call"
            ? [{
              type: "tool_use" as const,
              id: p.id,
              name: names.fromProvider(p.name) ?? p.name,
              input: (typeof p.params === "object" && p.params !== null ? p.params : {}) as Record<string, unknown>
            }]
            : []
        )
      const content: Array<Sampling.ResultBlock> = [
        ...(text.length > 0 || calls.length === 0 ? [{ type: "text" as const, text }] : []),
        ...calls
      ]
      return {
        model: resolved.model,
        stopReason: stopReasonOf(response.finishReason, calls.length),
        content
      } satisfies Sampling.Result
    })

    /** Whether a model is configured now. */
    const available = settings.resolve.pipe(Effect.as(true), Effect.orElseSucceed(() => false))

    return { handler: { tools: true, createMessage }, available } as const
  })

/**
 * The host's sampling as the manager's `SamplingSource`, over the inbox, the home's database and
 * secret store (the rules, the model settings) and Node's HTTP client (`Model.http`).
 */
export const layer = (options: Options = {}) =>
  Layer.effect(SamplingSource, make(options)).pipe(
    Layer.provide(Layer.mergeAll(ApprovalRules.Default, ModelSettings.Default, Model.http))
  )
