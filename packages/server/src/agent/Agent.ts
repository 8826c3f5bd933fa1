/**
 * The turn loop. A turn is: the agent's system prompt (`<agents dir>/<agent>/AGENT.md`), the
 * session's history replayed from the database, the user's message; then rounds — the model
 * streams its answer; if it called tools, the loop runs them (concurrently, bounded), gives it
 * the results and asks again — until it answers without a tool call or the round limit ends the
 * turn with a note. Every message is persisted as it is made (agent/History.ts, agent/ChatStore.ts).
 *
 * - Tools are the connected MCP servers' (`mcp__<server>__<tool>`), routed by the manager; any
 *   failure of a tool is an error result the model reads (status `error`): a tool never ends a turn.
 * - A result over the size cap is cut with a note; media are the manager's markdown with
 *   `/api/mcp-media/…` URLs.
 * - Stop = interruption: `stop(session)`, or interrupting the stream of events. The model request
 *   is aborted, in-flight MCP calls are interrupted (the engine sends `notifications/cancelled`, or
 *   `tasks/cancel` for a task), the partial text and the finished results are kept, unfinished
 *   calls are recorded `cancelled` with a result saying so: the history stays valid for the model.
 * - One turn per session at a time: a second one is refused with `SessionBusy` (in this process).
 * - Detached turns (`start`, for the RPC): the turn runs in the Agent's scope, its events go to a
 *   bounded, index-addressed log (TurnLog.ts) that any number of readers `attach` to from an index;
 *   a reader going away does not stop the turn. The last turn's log of a session stays readable
 *   after it ended, until the session's next turn (at most `recentTurns` logs are kept).
 *
 * @since 0.1.0
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import { ToolResult, TurnEvent } from "@skald/domain"
import type { McpClient } from "@skald/mcp"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import type { CorruptRow, DatabaseError } from "../host/HostError.js"
import { McpManager } from "../host/McpManager.js"
import type { McpServerRepo } from "../host/McpServerRepo.js"
import * as Redactor from "../host/Redactor.js"
import type { Registration } from "../host/Registration.js"
import { SecretStore } from "../host/SecretStore.js"
import * as Approvals from "../inbox/Approvals.js"
import { Inbox } from "../inbox/Inbox.js"
import * as Catalog from "./Catalog.js"
import { ChatStore, type Session } from "./ChatStore.js"
import { Grants, type Scope as GrantScope, sessionScope } from "./Grants.js"
import * as History from "./History.js"
import * as JsonSchemaTool from "./llm/JsonSchemaTool.js"
import * as ModelSettings from "./llm/ModelSettings.js"
import * as StreamParts from "./llm/StreamParts.js"
import * as ToolNames from "./llm/ToolNames.js"
import * as McpList from "./McpList.js"
import * as AgentTelemetry from "./Telemetry.js"
import * as ActivateTools from "./tools/ActivateTools.js"
import * as ConfigTools from "./tools/ConfigTools.js"
import * as DispatchAgent from "./tools/DispatchAgent.js"
import * as Notify from "./tools/Notify.js"
import * as ReadResource from "./tools/ReadResource.js"
import * as TurnLog from "./TurnLog.js"

/** A turn is already running in that session. */
export class SessionBusy extends Schema.TaggedError<SessionBusy>("@skald/server/SessionBusy")("SessionBusy", {
  sessionId: Schema.String
}) {
  override get message(): string {
    return `chat session ${this.sessionId} is busy with another turn: wait for it to end (or stop it), ` +
      "then send the message again"
  }
}

/** No session has that id. */
export class UnknownSession extends Schema.TaggedError<UnknownSession>("@skald/server/UnknownSession")(
  "UnknownSession",
  { sessionId: Schema.String }
) {
  override get message(): string {
    return `no chat session has the id ${this.sessionId}: list the sessions to find it, or start a new one`
  }
}

/** No agent of that name (no readable `AGENT.md`), or a name that cannot be one. */
export class UnknownAgent extends Schema.TaggedError<UnknownAgent>("@skald/server/UnknownAgent")("UnknownAgent", {
  agent: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `no agent named '${this.agent}': ${this.reason}`
  }
}

/** The session has no running or recent detached turn (`attach`). */
export class NoTurn extends Schema.TaggedError<NoTurn>("@skald/server/NoTurn")("NoTurn", { sessionId: Schema.String }) {
  override get message(): string {
    return `chat session ${this.sessionId} has no running or recent turn to attach to`
  }
}

/** Why a turn could not begin (once it has begun, what happens is told by its events). */
export type RunError = SessionBusy | UnknownSession | UnknownAgent | DatabaseError | CorruptRow

/** The loop's settings. */
export interface Options {
  /** The folder of agents (`<dir>/<agent>/AGENT.md`); default `SKALD_AGENTS_DIR`, else the repository's `agents/`. */
  readonly agentsDir?: string | undefined
  /** Model rounds per turn before the turn ends with a note (default 50). */
  readonly maxRounds?: number | undefined
  /** Tool calls of one round run at once at most (default 8). */
  readonly toolConcurrency?: number | undefined
  /** A tool result over this many bytes (UTF-8) is cut with a note (default 100 KB). */
  readonly resultCap?: number | undefined
  /**
   * Answers of the model that cannot be read (a tool it was not given, arguments that are not JSON)
   * asked again per turn, with a note saying what was wrong, before the turn fails (default 2).
   */
  readonly malformedRetries?: number | undefined
  /**
   * Servers whose tools every round offers without `activate_tools` (`"all"`: every connected
   * server, as before lazy loading); default none (docs/agent.md, *Lazy tool loading*).
   */
  readonly alwaysOffered?: "all" | ReadonlyArray<string> | undefined
  /** How deep sub-agents (`dispatch_agent`) nest at most (default 3). */
  readonly maxDepth?: number | undefined
  /** Events a detached turn's log keeps at least (default 10,000; TurnLog.ts). */
  readonly turnEvents?: number | undefined
  /** Logs of ended detached turns kept for `attach` (default 100; one per session, the latest). */
  readonly recentTurns?: number | undefined
}

/** The defaults of `Options`. */
export const defaults = {
  maxRounds: 50,
  toolConcurrency: 8,
  resultCap: 100 * 1024,
  malformedRetries: 2,
  agent: "main"
} as const

/** The repository's `agents/` folder (this file is `packages/server/{src,dist}/agent/Agent.*`). */
export const repositoryAgentsDir = (): string => fileURLToPath(new URL("../../../../agents/", import.meta.url))

/** What to run. */
export interface RunInput {
  /** The session to continue; a new one when absent. */
  readonly sessionId?: string | undefined
  /** The agent of a new session (default `main`); a session keeps the agent it started with. */
  readonly agent?: string | undefined
  readonly message: string
}

const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/

interface Running {
  readonly stop: Deferred.Deferred<void>
  readonly ended: Deferred.Deferred<void>
}

/** What a stop keeps, as the round goes. */
interface Kept {
  text: string
  finished: Array<string>
  cancelled: Array<string>
}

/** How a call that was not stopped ended (what `ChatStore.finishCall` records). */
interface Finished {
  readonly status: "done" | "error" | "denied"
  readonly result: string
  readonly resultType: ToolResult.ResultKind
  readonly truncated: boolean
}

/** Where a round runs: a root agent's session (depth 0), or a sub-agent's stack frame. */
interface Frame {
  readonly scope: GrantScope
  readonly depth: number
  /** The agent running in it (the `tic` agent is offered `notify`). */
  readonly agent: string
  /** The chat session it writes to: the root's, or the sub-agent's own (whose parent is the caller's). */
  readonly session: string
}

/** The agent's turn loop. */
export class Agent extends Effect.Service<Agent>()("@skald/server/Agent", {
  dependencies: [Grants.Default],
  scoped: (options: Options = {}) =>
    Effect.gen(function*() {
      const store = yield* ChatStore
      const manager = yield* McpManager
      const approvals = yield* Approvals.Approvals
      // The built-in tools' services (agent/tools/*).
      const services = yield* Effect.context<Grants | McpManager | McpServerRepo | Registration | SecretStore>()
      // `notify` posts here (offered to the `tic` agent when there is an inbox).
      const inbox = yield* Effect.serviceOption(Inbox)
      const maxDepth = options.maxDepth ?? DispatchAgent.DEFAULT_MAX_DEPTH
      // The provider's parts as it builds them, pulled, without @effect/ai's per-request decode (StreamParts.ts).
      const openParts = StreamParts.openOf(yield* LanguageModel.LanguageModel)
      // A tool's `@effect/ai` form, kept while its definition is the same object (the manager's list).
      const toolCache = new Map<string, { readonly source: unknown; readonly tool: JsonSchemaTool.JsonSchemaTool }>()
      const agentsDir = options.agentsDir ??
        (yield* Config.string("SKALD_AGENTS_DIR").pipe(Config.withDefault(repositoryAgentsDir())))
      const maxRounds = options.maxRounds ?? defaults.maxRounds
      const concurrency = options.toolConcurrency ?? defaults.toolConcurrency
      const resultCap = options.resultCap ?? defaults.resultCap
      const malformedRetries = options.malformedRetries ?? defaults.malformedRetries
      const running = yield* Ref.make<ReadonlyMap<string, Running>>(new Map())
      /** Detached turns' logs by session, oldest first (TurnLog.ts). */
      const logs = new Map<string, TurnLog.TurnLog>()
      const agentScope = yield* Effect.scope
      // SKALD_OTEL_RECORD_CONTENT (agent/Telemetry.ts): the redaction of recorded content, built
      // per tool call from every secret-store value and the model's api key (read anew: a secret
      // set while the host runs is redacted too); undefined when recording is off.
      const recording = yield* AgentTelemetry.recordContent
      const contentRedactor: Effect.Effect<((text: string) => string) | undefined> = recording
        ? Effect.gen(function*() {
          const secrets = yield* SecretStore
          const values: Array<Redacted.Redacted<string> | string> = []
          for (const name of yield* secrets.list) {
            const value = yield* secrets.get(name)
            if (Option.isSome(value)) values.push(value.value)
          }
          const apiKey = yield* Config.option(Config.redacted(ModelSettings.API_KEY_SECRET))
          if (Option.isSome(apiKey)) values.push(apiKey.value)
          const settings = yield* Effect.serviceOption(ModelSettings.ModelSettings)
          if (Option.isSome(settings)) {
            const resolved = yield* Effect.option(settings.value.resolve)
            if (Option.isSome(resolved) && resolved.value.apiKey !== undefined) values.push(resolved.value.apiKey)
          }
          return Redactor.make(values).redact
        }).pipe(
          Effect.provide(services),
          // Content that could not be redacted is not recorded at all.
          Effect.orElseSucceed(() => () => "[not recorded: the secrets to redact could not be read]")
        )
        : Effect.succeed(undefined)

      /** The agent's system prompt. */
      const systemPrompt = (agent: string) =>
        Effect.gen(function*() {
          if (!AGENT_NAME.test(agent)) {
            return yield* new UnknownAgent({
              agent,
              reason: "an agent's name is letters, digits, '-' and '_' (at most 64)"
            })
          }
          const file = Path.join(agentsDir, agent, "AGENT.md")
          const text = yield* Effect.try({
            try: () => Fs.readFileSync(file, "utf8"),
            catch: (error) =>
              new UnknownAgent({
                agent,
                reason: `${file} could not be read (${(error as NodeJS.ErrnoException).code ?? String(error)}); ` +
                  "create it (the agent's system prompt, in Markdown) or set SKALD_AGENTS_DIR to the folder of agents"
              })
          })
          // `<!-- include: <file> -->`: a file under the agents folder, resolved before `<!-- MCP_LIST -->`.
          return yield* McpList.resolveIncludes(text, (included) => {
            const path = Path.resolve(agentsDir, included)
            return path.startsWith(Path.resolve(agentsDir) + Path.sep)
              ? Effect.try(() => Fs.readFileSync(path, "utf8"))
              : Effect.fail(new Error("outside the agents folder"))
          })
        })

      const session = (input: RunInput) =>
        Effect.gen(function*() {
          if (input.sessionId === undefined) {
            const agent = input.agent ?? defaults.agent
            const prompt = yield* systemPrompt(agent)
            return { session: yield* store.createSession({ agent, title: titleOf(input.message) }), prompt }
          }
          const found = yield* store.getSession(input.sessionId)
          if (Option.isNone(found)) return yield* new UnknownSession({ sessionId: input.sessionId })
          return { session: found.value, prompt: yield* systemPrompt(found.value.agent) }
        })

      /**
       * The round's tools under the names the provider accepts (ToolNames.ts), and the mapping:
       * the model sees provider names; the loop, the database and the events see the MCP ones.
       */
      // The server list and the grants, kept per frame (a turn, a sub-agent) until a built-in runs (Catalog.Kept).
      const listed = new WeakMap<Frame, Catalog.Kept>()
      // What a round's tools and system prompt are made into, kept while the round is the same
      // object (Catalog.round gives the last one again while nothing it is made of changed).
      const toolkits = new WeakMap<Catalog.Round, Toolkit>()
      const systems = new WeakMap<Catalog.Round, { readonly text: string; readonly message: Prompt.SystemMessage }>()
      const toolkitOf = (frame: Frame): Effect.Effect<Toolkit> =>
        Effect.map(
          Effect.flatMap(manager.version, (version) => {
            const input: Catalog.RoundInput = {
              scope: frame.scope,
              dispatch: frame.depth < maxDepth,
              notify: frame.agent === Notify.TIC_AGENT && Option.isSome(inbox),
              always: options.alwaysOffered,
              kept: listed.get(frame) ?? listed.set(frame, Catalog.kept()).get(frame)
            }
            // The last round again, without providing the services (a context merge) every round.
            const last = Catalog.lastRound(input, version)
            return last !== undefined ? Effect.succeed(last) : Catalog.round(input).pipe(
              Effect.provide(services),
              Effect.orDie
            )
          }),
          (round) => {
            const known = toolkits.get(round)
            if (known !== undefined) return known
            // Lazy loading (docs/agent.md): the base tools, the granted servers' and `config`'s, asked every round.
            const tools = [
              ...[...round.builtins.values()].map((d) => ({
                name: d.name,
                description: d.description,
                inputSchema: d.inputSchema
              })),
              ...round.mcp.map((t) => ({
                name: t.name,
                description: t.tool.description,
                inputSchema: t.tool.inputSchema
              }))
            ]
            const mcpNames = tools.map((t) => t.name)
            const names = ToolNames.make(mcpNames)
            const offered = tools.map((t) => {
              const name = names.toProvider(t.name)
              const cached = toolCache.get(name)
              if (
                cached !== undefined && cached.source === t.inputSchema && cached.tool.description === t.description
              ) {
                return cached.tool
              }
              const tool = JsonSchemaTool.fromJsonSchema(name, t.description, t.inputSchema)
              toolCache.set(name, { source: t.inputSchema, tool })
              return tool
            })
            // The tool set decides the provider names (ToolNames.make is a function of it).
            const made: Toolkit = { tools: offered, names, namesKey: mcpNames.join("\u0000"), mcpNames, round }
            toolkits.set(round, made)
            return made
          }
        )

      /** The round's system prompt (`<!-- MCP_LIST -->` rendered for its grants, docs/agent.md) as a message. */
      const systemOf = (systemText: string, round: Catalog.Round): Effect.Effect<Prompt.SystemMessage> => {
        const known = systems.get(round)
        if (known !== undefined && known.text === systemText) return Effect.succeed(known.message)
        return Effect.map(Catalog.systemPrompt(systemText, round).pipe(Effect.provide(services)), (content) => {
          const message = History.system(content)
          systems.set(round, { text: systemText, message })
          return message
        })
      }

      /** Runs one call; every failure is an error result; an interruption records it `cancelled`. */
      const runCall = (
        emit: (event: TurnEvent.TurnEvent) => Effect.Effect<void>,
        messageId: Effect.Effect<number, AppendError>,
        call: History.CallRow,
        kept: Kept,
        frame: Frame,
        round: Catalog.Round,
        record: (write: Effect.Effect<void, WriteError>) => Effect.Effect<void>
      ) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            // The loop's events are made of values it built (typed): not validated again, on every call's path.
            yield* emit(
              TurnEvent.ToolStarted.make({ callId: call.callId, name: call.name, arguments: call.arguments }, true)
            )
            // The approval gate (inbox/Approvals.ts): waiting for a person is interruptible (a stop
            // withdraws the item); a refused call does not run and is recorded `denied`. The tool's span
            // (agent/Telemetry.ts) covers the wait and the run.
            const gate = gated(call, frame, round)
            const exit = yield* restore(
              AgentTelemetry.tool(
                call,
                contentRedactor,
                Effect.flatMap(gate, (gate): Effect.Effect<Finished, unknown> =>
                  gate._tag === "Denied"
                    ? Effect.succeed({
                      status: "denied" as const,
                      result: Approvals.deniedResult(call, gate),
                      resultType: "string" as const,
                      truncated: false
                    })
                    : (round.builtins.has(call.name)
                      ? Effect.map(
                        builtin(call, frame, round),
                        (text): ToolResult.ToolResult => ToolResult.TextResult.make({ text })
                      )
                      : manager.call(call.name, call.arguments as McpClient.JsonObject) as Effect.Effect<
                        ToolResult.ToolResult,
                        unknown
                      >).pipe(
                        Effect.map((result) =>
                          ToolResult.isError(result)
                            // The tool's own report of a failure: recorded `error`, marked for the model.
                            ? {
                              status: "error" as const,
                              ...History.capResult(
                                ToolResult.TextResult.make({
                                  text: History.TOOL_ERROR_PREFIX + ToolResult.toWire(result)
                                }),
                                resultCap
                              )
                            }
                            : { status: "done" as const, ...History.capResult(result, resultCap) }
                        )
                      ))
              )
            ).pipe(Effect.exit)
            const outcome = Exit.match(exit, {
              onSuccess: (done) => done,
              onFailure: (cause) =>
                Cause.isInterruptedOnly(cause)
                  ? {
                    status: "cancelled" as const,
                    result: History.CANCELLED_RESULT,
                    resultType: "string" as const,
                    truncated: false
                  }
                  : {
                    status: "error" as const,
                    result: `The tool call failed: ${failureText(cause)}`,
                    resultType: "string" as const,
                    truncated: false
                  }
            })
            // Written while the next answer streams (`Writes`), or before a stop records the rest.
            yield* record(Effect.flatMap(messageId, (id) => store.finishCall(id, call.callId, outcome)))
            if (outcome.status === "cancelled") kept.cancelled.push(call.callId)
            else kept.finished.push(call.callId)
            yield* emit(TurnEvent.ToolDone.make({
              callId: call.callId,
              name: call.name,
              status: outcome.status,
              result: outcome.result,
              resultType: outcome.resultType,
              mediaUrls: History.mediaUrls(outcome.result),
              truncated: outcome.truncated
            }, true))
            return { ...call, status: outcome.status, result: outcome.result, resultType: outcome.resultType }
          })
        )

      /**
       * Whether a call may run (inbox/Approvals.ts). `activate_tools` and `dispatch_agent` are always
       * allowed: they only widen what the model is offered or delegate, and every call they lead to
       * passes the gate itself.
       */
      const gated = (call: History.CallRow, frame: Frame, round: Catalog.Round) => {
        if (call.name === ActivateTools.NAME || call.name === DispatchAgent.NAME || call.name === Notify.NAME) {
          return Effect.succeed<Approvals.Gate>({
            _tag: "Allowed",
            verdict: { decision: "allow", reason: "a base tool" }
          })
        }
        const mcp = round.mcp.find((t) => t.name === call.name)
        return approvals.check({
          name: call.name,
          arguments: call.arguments,
          annotations: mcp?.tool.annotations ?? round.builtins.get(call.name)?.annotations,
          origin: {
            sessionId: frame.scope.session,
            tool: call.name,
            callId: call.callId,
            ...(mcp === undefined ? {} : { server: mcp.server })
          }
        })
      }

      /** Runs a built-in tool (agent/tools/*); its answer is the text the model reads. */
      const builtin = (call: History.CallRow, frame: Frame, round: Catalog.Round): Effect.Effect<string, unknown> => {
        // Reading a resource changes nothing the round keeps.
        if (call.name === ReadResource.NAME) {
          return ReadResource.run(call.arguments, round.readable).pipe(Effect.provide(services))
        }
        // It may change the grants or the servers: the next round reads them again.
        const kept = listed.get(frame)
        if (kept !== undefined) Catalog.forget(kept)
        switch (call.name) {
          case ActivateTools.NAME:
            return ActivateTools.run(frame.scope, call.arguments, round.servers).pipe(
              Effect.map(ActivateTools.answer),
              Effect.provide(services)
            )
          case DispatchAgent.NAME:
            return DispatchAgent.run(frame, call.arguments, subAgent(frame.session), maxDepth).pipe(
              Effect.provide(services)
            )
          case Notify.NAME:
            return Option.isNone(inbox)
              ? Effect.fail(new Error("there is no inbox to post to"))
              : Notify.run(call.arguments, { sessionId: frame.scope.session, callId: call.callId }).pipe(
                Effect.provideService(Inbox, inbox.value)
              )
          default:
            return ConfigTools.run(call.name, call.arguments).pipe(Effect.provide(services))
        }
      }

      /**
       * A sub-agent's frame: its own chat session (its transcript, a sub-session of the caller's:
       * listed with it, not among the sessions, and deleted with it), the parent's session's grant
       * scope narrowed to the frame (zero grants at first), the task as its one message; its final
       * text is the answer.
       */
      const subAgent = (parent: string): DispatchAgent.RunFrame<unknown, never> => (frame) =>
        Effect.gen(function*() {
          const prompt = yield* systemPrompt(frame.agent)
          const sub = yield* store.createSession({ agent: frame.agent, title: titleOf(frame.task), parent })
          yield* store.append(sub.id, { role: "user", text: frame.task, calls: [] })
          const kept: Kept = { text: "", finished: [], cancelled: [] }
          const end = yield* AgentTelemetry.turn(
            sub.id,
            frame.agent,
            false,
            rounds(sub.id, prompt, [History.user(frame.task)], () => Effect.void, kept, {
              scope: frame.scope,
              depth: frame.depth,
              agent: frame.agent,
              session: sub.id
            })
          )
          return end.note === undefined ? end.text : `${end.text}\n\n(${end.note})`
        })

      /** The rounds of one turn; the value is its end. */
      const rounds = (
        sessionId: string,
        systemText: string,
        messages: Array<Prompt.Message>,
        emit: (event: TurnEvent.TurnEvent) => Effect.Effect<void>,
        kept: Kept,
        frame: Frame
      ): Effect.Effect<TurnEvent.TurnDone, unknown> => {
        const spans = AgentTelemetry.rounds()
        // The writer lives in a scope of the rounds (not as a child fiber: an interrupted fiber's
        // children are interrupted at once, and a stop's settle needs the writer to finish its jobs).
        return Effect.scoped(Effect.flatMap(makeWrites, (writes) =>
          Effect.gen(function*() {
            let inputTokens = 0
            let outputTokens = 0
            const usage = () => TurnEvent.Usage.make({ inputTokens, outputTokens })
            let text = ""
            let retriesLeft = malformedRetries
            let note: string | undefined = undefined
            // `messages` under the provider's tool names, renamed once: appended to while the tool set
            // (hence the names) stays the same, renamed anew when it changes.
            let sent: Array<Prompt.Message> = []
            let sentKey: string | undefined = undefined
            for (let round = 1; round <= maxRounds; round++) {
              yield* spans.next(round)
              const { mcpNames, names, namesKey, round: catalog, tools } = yield* toolkitOf(frame)
              if (namesKey !== sentKey) {
                sent = []
                sentKey = namesKey
              }
              for (let i = sent.length; i < messages.length; i++) {
                sent.push(History.withToolNames(messages[i]!, names.toProvider))
              }
              const system = yield* systemOf(systemText, catalog)
              kept.text = ""
              kept.finished = []
              kept.cancelled = []
              const streamed: Array<History.ToolCall> = []
              const asked = note === undefined ? system : History.system(`${system.content}\n\n${note}`)
              const request: StreamParts.Request = { prompt: Prompt.fromMessages([asked, ...sent]), tools }
              // Reading the answer is interruptible; what follows it (persisting the message) is not, so a
              // stop keeps either the partial message (below) or the whole one.
              const persisted = yield* Effect.uninterruptibleMask((restore) =>
                Effect.gen(function*() {
                  // The last round's results are written once this answer has begun (`Writes`): the
                  // request has left, and the rest of the answer is on its way.
                  let begun = false
                  const read = (part: StreamParts.Part): Effect.Effect<void, ModelStreamError> => {
                    const handled = readPart(part)
                    if (begun) return handled
                    begun = true
                    return Effect.zipRight(handled, writes.start)
                  }
                  const readPart = (part: StreamParts.Part): Effect.Effect<void, ModelStreamError> => {
                    switch (part.type) {
                      case "text-delta":
                        kept.text += part.delta
                        return emit(TurnEvent.TextDelta.make({ text: part.delta }, true))
                      case "tool-call":
                        if (part.providerExecuted !== true) {
                          streamed.push({
                            id: part.id,
                            name: names.fromProvider(part.name) ?? part.name,
                            params: part.params
                          })
                        }
                        return Effect.void
                      case "finish":
                        inputTokens += part.usage.inputTokens ?? 0
                        outputTokens += part.usage.outputTokens ?? 0
                        return Effect.void
                      case "error":
                        return Effect.fail(new ModelStreamError({ error: part.error }))
                      default:
                        return Effect.void
                    }
                  }
                  const streamExit = yield* restore(spans.under(StreamParts.runForEach(openParts, request, read)))
                    .pipe(Effect.exit)
                  // A write of an earlier round that failed ends the turn before this answer is kept.
                  yield* writes.check
                  const assistant = History.assistant(kept.text, streamed)
                  if (Exit.isFailure(streamExit) && !Cause.isInterruptedOnly(streamExit.cause)) {
                    const malformed = malformedOf(streamExit.cause)
                    if (malformed !== undefined && retriesLeft > 0) {
                      // An answer that cannot be read (a tool it was not given, arguments that are not
                      // JSON): nothing of it is kept or run; the model is asked again with a note.
                      return { malformed }
                    }
                    // A failed request keeps nothing of its round: the next turn starts from the last whole message.
                    return yield* streamExit
                  }
                  const interrupted = Exit.isFailure(streamExit)
                  if (assistant === undefined) return interrupted ? yield* streamExit : undefined
                  const row = History.rowOf(assistant)
                  const stored = interrupted
                    ? {
                      ...row,
                      calls: row.calls.map((c) => ({
                        ...c,
                        status: "cancelled" as const,
                        result: History.CANCELLED_RESULT
                      }))
                    }
                    : row
                  if (interrupted || stored.calls.length === 0) {
                    // The last round's results are in the rows before anything of this answer is (a
                    // message written through the writer, below, is queued after them).
                    yield* writes.settle
                    const id = yield* store.append(sessionId, stored)
                    messages.push(assistant)
                    if (interrupted) {
                      kept.cancelled.push(...stored.calls.map((c) => c.callId))
                      return yield* streamExit
                    }
                    return { id: Effect.succeed(id), row }
                  }
                  // A message that calls tools is written while its calls run (`Writes.later`): its id is
                  // awaited before a call's outcome is recorded, and by the stop path (cancelRunning).
                  // Made in the writer too (an `Effect.fn` call costs its call site's stack and span).
                  const id = yield* writes.later(Effect.suspend(() => store.append(sessionId, stored)))
                  messages.push(assistant)
                  return { id, row }
                })
              )
              if (persisted !== undefined && "malformed" in persisted) {
                retriesLeft--
                note = unreadableNote(persisted.malformed, mcpNames.map(names.toProvider))
                yield* Effect.logWarning(`the model's answer could not be read; asking again: ${persisted.malformed}`)
                continue
              }
              note = undefined
              text = kept.text
              if (persisted === undefined || persisted.row.calls.length === 0) {
                return TurnEvent.TurnDone.make({ text, usage: usage(), rounds: round })
              }
              const calls = persisted.row.calls
              const results = yield* spans.under(
                // One call runs in this fiber: a bounded `forEach` forks a fiber per call and joins them.
                calls.length === 1
                  ? Effect.map(
                    runCall(emit, persisted.id, calls[0]!, kept, frame, catalog, writes.record),
                    (result) => [result]
                  )
                  : Effect.forEach(
                    calls,
                    (call) => runCall(emit, persisted.id, call, kept, frame, catalog, writes.record),
                    {
                      concurrency
                    }
                  )
              ).pipe(
                // A call interrupted before it began (queued behind the bound, or not yet forked) has
                // recorded nothing: it is cancelled here, so no call stays `running`.
                Effect.onInterrupt(() =>
                  // The finished calls' results first: `cancelRunning` takes every call still `running`.
                  writes.settle.pipe(
                    Effect.zipRight(persisted.id),
                    Effect.flatMap((id) => store.cancelRunning(id, History.CANCELLED_RESULT)),
                    Effect.map((ids) => {
                      kept.cancelled.push(...ids)
                    }),
                    Effect.catchAll((error) => Effect.logError(error.message))
                  )
                )
              )
              messages.push(History.toolResults(results))
            }
            yield* writes.settle
            return TurnEvent.TurnDone.make({
              text,
              usage: usage(),
              rounds: maxRounds,
              note: `The turn ended after ${maxRounds} model rounds (the round limit) while the model was still ` +
                "calling tools; every result so far is kept. Send another message to let it go on."
            })
          }).pipe(
            // A turn that ends otherwise (stopped, failed) still writes the results it has.
            Effect.ensuring(writes.settle.pipe(Effect.catchAll((error) => Effect.logError(error.message))))
          ))).pipe(spans.close)
      }

      const turn = (
        session: Session,
        systemText: string,
        message: string,
        stop: Deferred.Deferred<void>,
        emit: (event: TurnEvent.TurnEvent) => Effect.Effect<void>
      ) =>
        Effect.gen(function*() {
          const kept: Kept = { text: "", finished: [], cancelled: [] }
          const work = Effect.gen(function*() {
            const stored = yield* store.history(session.id)
            const turnId = yield* store.append(session.id, { role: "user", text: message, calls: [] })
            yield* emit(TurnEvent.TurnStarted.make({ sessionId: session.id, turnId, message }))
            const messages = [...History.replay(stored), History.user(message)]
            return yield* rounds(session.id, systemText, messages, emit, kept, {
              scope: sessionScope(session.id),
              depth: 0,
              agent: session.agent,
              session: session.id
            })
          })
          const fiber = yield* Effect.fork(work)
          const exit = yield* Effect.raceFirst(
            Fiber.await(fiber),
            Deferred.await(stop).pipe(Effect.zipRight(Fiber.interrupt(fiber)))
          )
          if (Exit.isSuccess(exit)) return yield* emit(exit.value)
          if (Cause.isInterruptedOnly(exit.cause)) {
            return yield* emit(TurnEvent.TurnStopped.make({
              text: kept.text,
              finished: kept.finished,
              cancelled: kept.cancelled
            }))
          }
          const failure = Cause.failureOption(exit.cause)
          const errorTag = Option.match(failure, {
            onNone: () => "Defect",
            onSome: (e) => (e as { _tag?: string })._tag ?? "Error"
          })
          yield* AgentTelemetry.turnFailed(errorTag)
          return yield* emit(TurnEvent.TurnFailed.make({
            message: `the turn failed: ${failureText(exit.cause)}`,
            errorTag
          }))
        }).pipe((body) => AgentTelemetry.turn(session.id, session.agent, true, body))

      /** The turn's events; the stream fails only when the turn cannot begin. Interrupting it stops the turn. */
      const run = (input: RunInput): Stream.Stream<TurnEvent.TurnEvent, RunError> =>
        Stream.unwrapScoped(Effect.gen(function*() {
          const { prompt, session: chat } = yield* session(input)
          const entry: Running = { stop: yield* Deferred.make<void>(), ended: yield* Deferred.make<void>() }
          const release = Ref.update(running, (map) => {
            if (map.get(chat.id) !== entry) return map
            const next = new Map(map)
            next.delete(chat.id)
            return next
          }).pipe(Effect.zipRight(Deferred.succeed(entry.ended, undefined)))
          yield* Effect.acquireRelease(
            Ref.modify(
              running,
              (map): [boolean, ReadonlyMap<string, Running>] =>
                map.has(chat.id) ? [false, map] : [true, new Map(map).set(chat.id, entry)]
            ).pipe(
              Effect.filterOrFail((acquired) => acquired, () => new SessionBusy({ sessionId: chat.id }))
            ),
            () => release
          )
          const mailbox = yield* Mailbox.make<TurnEvent.TurnEvent>()
          yield* turn(chat, prompt, input.message, entry.stop, (event) => Effect.asVoid(mailbox.offer(event))).pipe(
            Effect.ensuring(Effect.zipRight(release, mailbox.end)),
            Effect.forkScoped
          )
          return Mailbox.toStream(mailbox)
        }))

      /** Stops the session's running turn and waits until it has stopped; false if none was running. */
      const stop = Effect.fn("Agent.stop")(function*(sessionId: string) {
        const entry = (yield* Ref.get(running)).get(sessionId)
        if (entry === undefined) return false
        yield* Deferred.succeed(entry.stop, undefined)
        yield* Deferred.await(entry.ended)
        return true
      })

      /**
       * Begins a turn detached from the caller (in the Agent's scope): its events go to a log that
       * `attach` reads; fails only when the turn cannot begin. Nothing the caller does stops it but `stop`.
       */
      const start = Effect.fn("Agent.start")(function*(input: RunInput) {
        const { prompt, session: chat } = yield* session(input)
        const entry: Running = { stop: yield* Deferred.make<void>(), ended: yield* Deferred.make<void>() }
        const log = yield* TurnLog.make(options.turnEvents)
        // Claimed and forked without a gap a caller's interruption could fall into; the turn itself is interruptible (stop).
        yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            const claimed = yield* Ref.modify(
              running,
              (map): [boolean, ReadonlyMap<string, Running>] =>
                map.has(chat.id) ? [false, map] : [true, new Map(map).set(chat.id, entry)]
            )
            if (!claimed) {
              return yield* new SessionBusy({ sessionId: chat.id })
            }
            logs.delete(chat.id)
            logs.set(chat.id, log)
            for (const [id, old] of logs) {
              if (logs.size <= (options.recentTurns ?? 100)) {
                break
              }
              if (yield* old.ended) {
                logs.delete(id)
              }
            }
            const release = Ref.update(running, (map) => {
              if (map.get(chat.id) !== entry) {
                return map
              }
              const next = new Map(map)
              next.delete(chat.id)
              return next
            }).pipe(Effect.zipRight(Deferred.succeed(entry.ended, undefined)))
            yield* restore(turn(chat, prompt, input.message, entry.stop, log.append)).pipe(
              Effect.ensuring(Effect.zipRight(log.end, release)),
              Effect.forkIn(agentScope)
            )
          })
        )
        return { sessionId: chat.id }
      })

      /** The events of the session's running (or last detached) turn from `fromIndex` on (TurnLog.ts). */
      const attach = (
        sessionId: string,
        fromIndex: number
      ): Effect.Effect<Stream.Stream<TurnEvent.TurnEvent, TurnLog.EventsLost>, NoTurn> =>
        Effect.suspend(() => {
          const log = logs.get(sessionId)
          return log === undefined ? Effect.fail(new NoTurn({ sessionId })) : Effect.succeed(log.from(fromIndex))
        })

      /** Whether a turn is running in the session (in this process). */
      const isBusy = (sessionId: string): Effect.Effect<boolean> =>
        Effect.map(Ref.get(running), (map) => map.has(sessionId))

      return { run, start, attach, stop, isBusy } as const
    })
}) {}

/** A round's tools as the provider is given them, and the names between the two sides (ToolNames.ts). */
interface Toolkit {
  readonly tools: ReadonlyArray<JsonSchemaTool.JsonSchemaTool>
  readonly names: ToolNames.ToolNameMap
  /** The MCP-side names joined: the tool set, which decides the provider names. */
  readonly namesKey: string
  readonly mcpNames: ReadonlyArray<string>
  readonly round: Catalog.Round
}

/** How writing a message can fail (ChatStore.append). */
type AppendError = Effect.Effect.Error<ReturnType<ChatStore["append"]>>

/** How writing a call's outcome can fail (its message's write, ChatStore.finishCall). */
type WriteError = AppendError | Effect.Effect.Error<ReturnType<ChatStore["finishCall"]>>

/**
 * A turn's deferred writes, made by one writer fiber (forked once per turn; a fork per write cost
 * 0.08 ms of the round's path): the message that calls tools (`later`: its row id, to await) and
 * the calls' outcomes (`record`), written while the next model answer streams (`start`, at its
 * first part) instead of between the last call's end and the next request. Every job of the
 * writer waits two event-loop turns first (`afterWrites`), so the request it follows has left.
 * The writer keeps the order of its jobs, so a message that calls tools (`later`) is queued after
 * the last round's outcomes without waiting for them. `settle` waits for every job and writes the
 * outcomes not yet started: before a message written directly (a last answer, a stopped one),
 * before a stop records the rest `cancelled`, and when the turn ends. A failed write fails the
 * turn at the next `check` (after each answer) or `settle`.
 */
interface Writes {
  readonly record: (write: Effect.Effect<void, WriteError>) => Effect.Effect<void>
  readonly start: Effect.Effect<void>
  readonly later: <A>(write: Effect.Effect<A, AppendError>) => Effect.Effect<Effect.Effect<A, AppendError>>
  readonly check: Effect.Effect<void, WriteError>
  readonly settle: Effect.Effect<void, WriteError>
}

/**
 * A turn's `Writes`; its writer is forked in the current scope (the rounds', closed after their
 * last `settle`), so interrupting the turn's fiber (a stop) leaves it to finish the jobs it was given.
 */
const makeWrites: Effect.Effect<Writes, never, Scope.Scope> = Effect.gen(function*() {
  // Jobs never fail: each puts its outcome into a Deferred.
  const jobs = yield* Queue.unbounded<Effect.Effect<void>>()
  // The jobs offered and not yet done, and who waits for there to be none (`settle`).
  let pending = 0
  let idle: Deferred.Deferred<void> | undefined
  const finished = Effect.suspend(() => {
    pending--
    if (pending > 0 || idle === undefined) return Effect.void
    const waiting = idle
    idle = undefined
    return Deferred.succeed(waiting, undefined)
  })
  yield* Effect.forkScoped(
    Effect.interruptible(Effect.forever(
      Effect.flatMap(
        Queue.take(jobs),
        (job) => Effect.uninterruptible(Effect.ensuring(Effect.zipRight(afterWrites, job), finished))
      )
    ))
  )
  const offer = (job: Effect.Effect<void>) =>
    Effect.suspend(() => {
      pending++
      return Queue.offer(jobs, job)
    })
  /** Waits until every job offered is done (the writer is ended with the turn: none may be left queued). */
  const drained = Effect.suspend(() => {
    if (pending === 0) return Effect.void
    idle ??= Deferred.unsafeMake<void>(FiberId.none)
    return Deferred.await(idle)
  })
  let queued: Array<Effect.Effect<void, WriteError>> = []
  // The outcomes' jobs offered and not yet awaited by a `settle` (which reports their failures),
  // and the first failure of any job, for `check`.
  let started: Array<Deferred.Deferred<void, WriteError>> = []
  let failure: Cause.Cause<WriteError> | undefined
  const noted = <A, E extends WriteError>(write: Effect.Effect<A, E>) =>
    Effect.tapErrorCause(write, (cause) =>
      Effect.sync(() => {
        failure ??= cause
      }))
  const writeAll = (all: ReadonlyArray<Effect.Effect<void, WriteError>>) =>
    Effect.forEach(all, (write) => write, { discard: true })
  const take = () => {
    const all = queued
    queued = []
    return all
  }
  return {
    record: (write) =>
      Effect.sync(() => {
        queued.push(write)
      }),
    start: Effect.suspend(() => {
      if (queued.length === 0) return Effect.void
      // The outcomes recorded so far, and no later one: a later outcome awaits a message's write
      // queued after this job (the writer would wait for itself).
      const all = take()
      return Effect.flatMap(Deferred.make<void, WriteError>(), (done) => {
        started.push(done)
        return offer(Effect.asVoid(Effect.intoDeferred(noted(writeAll(all)), done)))
      })
    }),
    later: <A>(write: Effect.Effect<A, AppendError>) =>
      Effect.flatMap(
        Deferred.make<A, AppendError>(),
        (done) => Effect.as(offer(Effect.asVoid(Effect.intoDeferred(noted(write), done))), Deferred.await(done))
      ),
    check: Effect.suspend(() => failure === undefined ? Effect.void : Effect.failCause(failure)),
    settle: Effect.uninterruptible(Effect.suspend(() => {
      const running = started
      started = []
      // A message's write no outcome waited for (a stop just after it was queued) is done too.
      return Effect.zipRight(
        drained,
        Effect.zipRight(
          Effect.forEach(running, Deferred.await, { discard: true }),
          Effect.suspend(() => writeAll(take()))
        )
      )
    }))
  }
})

/**
 * Resumes two event-loop turns later: past the check phase in which the MCP transports flush the
 * writes of this tick (StdioTransport, HttpTransport: `setImmediate`), so synchronous work after it
 * (SQLite) runs while the request is already on its way, not before it leaves.
 */
const afterWrites: Effect.Effect<void> = Effect.async<void>((resume) => {
  setImmediate(() => setImmediate(() => resume(Effect.void)))
})

/** The model streamed an error part. */
export class ModelStreamError extends Schema.TaggedError<ModelStreamError>("@skald/server/ModelStreamError")(
  "ModelStreamError",
  { error: Schema.Unknown }
) {
  override get message(): string {
    const e = this.error as { message?: unknown } | undefined
    return `the model reported an error: ${typeof e?.message === "string" ? e.message : JSON.stringify(this.error)}`
  }
}

/** A new session's title: the first line of its first message, at most 80 characters. */
export const titleOf = (message: string): string | undefined => {
  const line = message.trim().split("\n")[0]?.trim() ?? ""
  if (line.length === 0) return undefined
  return line.length <= 80 ? line : `${line.slice(0, 79)}…`
}

/** The description of a model's answer that could not be read (`MalformedOutput`), if that is the failure. */
const malformedOf = (cause: Cause.Cause<unknown>): string | undefined => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) return undefined
  const error = failure.value as { _tag?: unknown; description?: unknown; message?: unknown }
  if (error._tag !== "MalformedOutput") return undefined
  return typeof error.description === "string" ? error.description : String(error.message)
}

/** What the model is told when its last answer could not be read. */
export const unreadableNote = (description: string, tools: ReadonlyArray<string>): string =>
  "Note from the host: your previous answer could not be used and nothing of it was run. " +
  "Call only the tools you were given, by their exact names, with a JSON object as the arguments. " +
  `The tools are: ${tools.length === 0 ? "(none)" : tools.join(", ")}. ` +
  `What was wrong: ${description.split("\n")[0]?.slice(0, 500) ?? ""}`

/** A cause's first failure (or defect) as one line for a person or the model. */
const failureText = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  const error: unknown = Option.isSome(failure) ? failure.value : Option.getOrUndefined(Cause.dieOption(cause))
  if (error instanceof Error || (typeof error === "object" && error !== null && "message" in error)) {
    return String((error as { message: unknown }).message)
  }
  return Cause.pretty(cause).split("\n")[0] ?? "unknown error"
}
