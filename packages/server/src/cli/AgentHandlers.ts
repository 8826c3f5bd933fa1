/**
 * What `skald agent run`, `skald chat` and `skald sessions list|show|rm` do (their options and help
 * are in AgentCommands.ts; this module is loaded when one of them runs, see Lazy.ts).
 *
 * `agent run` and `chat` run through the home's running `skald serve` when there is one, over its
 * RPC (AgentViaHost.ts); else the agent runs in this process: the home's database and secrets, a guest
 * manager connecting the enabled servers, the model from the settings (agent/llm/Model.ts), the
 * turn loop. The rules are the Agent's (or the host's); this module prints its events.
 *
 * @since 0.1.0
 */
import { TurnEvent } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Readline from "node:readline"
import { Agent, type RunInput } from "../agent/Agent.js"
import { ChatStore } from "../agent/ChatStore.js"
import * as Model from "../agent/llm/Model.js"
import { ModelSettings } from "../agent/llm/ModelSettings.js"
import * as PromptCommands from "../agent/PromptCommands.js"
import * as McpManager from "../host/McpManager.js"
import * as Approvals from "../inbox/Approvals.js"
import { Inbox } from "../inbox/Inbox.js"
import * as HostSampling from "../sampling/HostSampling.js"
import type * as AgentCommands from "./AgentCommands.js"
import * as AgentViaHost from "./AgentViaHost.js"
import * as ApprovalPrompt from "./ApprovalPrompt.js"
import { ExitStatus, ExitWith, UsageError } from "./CliError.js"
import * as Elicit from "./Elicit.js"
import * as HostPath from "./HostPath.js"
import * as Host from "./HostRuntime.js"
import * as InboxPrompt from "./InboxPrompt.js"
import { reportFailures, stderr, stdout } from "./Io.js"
import * as Output from "./Output.js"
import * as SessionsAdmin from "./SessionsAdmin.js"

/** How much of a result `show` prints in text. */
const PREVIEW = 200

const oneLine = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= max ? flat : `${flat.slice(0, max)}…`
}

/** Runs a `sessions` command with the sessions of its path (SessionsAdmin.ts). */
const withSessions = (
  args: { readonly home: Option.Option<string>; readonly verbose: boolean },
  use: (sessions: SessionsAdmin.Sessions) => Effect.Effect<void, unknown>
) => Effect.scoped(Effect.flatMap(SessionsAdmin.open(args), use)).pipe(reportFailures)

/** `skald sessions list`. */
export const list = (args: AgentCommands.ListArgs) =>
  withSessions(args, (store) =>
    Effect.gen(function*() {
      const sessions = yield* store.list
      if (args.json) return yield* stdout(Output.json(sessions))
      if (sessions.length === 0) return
      yield* stdout(
        sessions.map((s) => [s.id, s.agent, s.updatedAt, ...(s.title === undefined ? [] : [s.title])].join("  "))
          .join("\n")
      )
    }))

/** `skald sessions show`. */
export const show = ({ id, json, ...args }: AgentCommands.ShowArgs) =>
  withSessions(args, (store) =>
    Effect.gen(function*() {
      const { messages, session, subAgents } = yield* store.show(id)
      if (json) return yield* stdout(Output.json({ session, messages, subAgents }))
      const lines = [`session ${session.id} (agent ${session.agent}, started ${session.createdAt})`]
      if (session.parent !== undefined) lines.push(`a sub-agent's session, dispatched from session ${session.parent}`)
      for (const m of messages) {
        lines.push("")
        lines.push(`${m.role}:${m.text.length === 0 ? "" : ` ${m.text}`}`)
        for (const c of m.calls) {
          lines.push(`  tool ${c.name} ${JSON.stringify(c.arguments)} → ${c.status}`)
          if (c.result !== undefined) lines.push(`    ${oneLine(c.result, PREVIEW)}`)
        }
      }
      if (subAgents.length > 0) {
        lines.push("")
        lines.push("sub-agent sessions (skald sessions show ID):")
        for (const sub of subAgents) {
          lines.push(
            `  ${[sub.id, sub.agent, sub.createdAt, ...(sub.title === undefined ? [] : [sub.title])].join("  ")}`
          )
        }
      }
      yield* stdout(lines.join("\n"))
    }))

/** `skald sessions rm`. */
export const rm = ({ id, ...args }: AgentCommands.RmArgs) =>
  withSessions(args, (store) => Effect.zipRight(store.remove(id), stderr(`skald: removed session ${id}`)))

/**
 * What an approval becomes (inbox/Approvals.ts): the `--approve` flag, else `ask` when a person is
 * at the terminal (stdin is one) and `deny` when not.
 */
const approvalMode = (flag: Option.Option<Approvals.Mode>): Approvals.Mode =>
  Option.getOrElse(flag, () => process.stdin.isTTY === true ? "ask" : "deny")

/**
 * The agent in this process: the home, one inbox, a guest manager of the enabled servers (asking
 * their elicitations in that inbox, answered by InboxPrompt), the model, the approval gate (its
 * questions in the same inbox, answered on the terminal in mode `ask`: ApprovalPrompt.ts), the loop.
 */
export const agentLayer = (home: Option.Option<string>, mode: Approvals.Mode) =>
  Layer.unwrapEffect(Effect.map(Host.connectOptions, (connect) => {
    const hostLayer = Host.layer(home)
    // The servers' elicitations go to this process's inbox, answered by InboxPrompt.
    const inbox = Inbox.Default.pipe(Layer.provide(hostLayer))
    // Their sampling requests too: approved like the agent's calls (the same mode), answered by the model.
    const sampling = HostSampling.layer({ mode }).pipe(Layer.provide(hostLayer), Layer.provide(inbox))
    const manager = McpManager.McpManager.Default({ ...connect, guest: true }).pipe(
      Layer.provide(hostLayer),
      Layer.provide(inbox),
      Layer.provide(sampling)
    )
    const model = Model.layer().pipe(Layer.provide(ModelSettings.Default), Layer.provide(hostLayer))
    const prompt = mode === "ask" ? Layer.scopedDiscard(ApprovalPrompt.onTerminal) : Layer.empty
    const approvals = Approvals.Approvals.Default({ mode }).pipe(Layer.provide(hostLayer))
    return Agent.Default().pipe(
      Layer.provideMerge(ChatStore.Default),
      Layer.provideMerge(manager),
      Layer.provideMerge(Layer.merge(approvals, prompt)),
      Layer.provideMerge(inbox),
      Layer.provide(model),
      // The home's services stay in the context (`skald tic run` reads the events through them).
      Layer.provideMerge(hostLayer)
    )
  }))

/** What `agent run` says on stderr about the calls the gate refused, and how to allow them. */
export const deniedNote = (names: ReadonlyArray<string>, mode: Approvals.Mode): string => {
  const tools = [...new Set(names)]
  const how = mode === "allow"
    ? "a rule refused them"
    : mode === "ask"
    ? "they were refused when asked (or not answered in time)"
    : "--approve deny refused the calls that ask (no terminal to ask on); run again with --approve allow to let them run"
  return `skald: denied (did not run): ${tools.join(", ")}. ${how}, or allow a tool with a rule: ` +
    `skald approvals set ${tools[0] ?? "TOOL"} allow (see skald approvals list)`
}

/** Waits for the enabled servers (each start bounded by the start timeout); says which failed. */
const awaitServers = Effect.gen(function*() {
  const manager = yield* McpManager.McpManager
  for (const s of yield* manager.started) {
    if (s.state === "failed") {
      yield* stderr(`skald: MCP server '${s.name}' did not start (${s.error ?? "failed"}); its tools are missing`)
    }
  }
})

const encodeEvent = Schema.encodeSync(TurnEvent.TurnEvent)

/** One event as a JSON line. */
const jsonLine = (event: TurnEvent.TurnEvent): string => JSON.stringify(encodeEvent(event))

/** One line for a tool call that ended. */
const toolLine = (started: Map<string, unknown>, event: TurnEvent.ToolDone): string =>
  `skald: tool ${event.name} ${JSON.stringify(started.get(event.callId) ?? {})} → ${event.status}`

/**
 * Runs one turn, handing each event to `onEvent`. Interrupted (Ctrl-C), it stops the turn through
 * `Agent.stop` and lets the loop persist what it has before giving the interruption back.
 */
const runTurn = <E, R>(input: RunInput, onEvent: (event: TurnEvent.TurnEvent) => Effect.Effect<void, E, R>) =>
  Effect.gen(function*() {
    const agent = yield* Agent
    const session = yield* Ref.make<string | undefined>(input.sessionId)
    const fiber = yield* agent.run(input).pipe(
      Stream.runForEach((event) =>
        Effect.zipRight(
          event._tag === "TurnStarted" ? Ref.set(session, event.sessionId) : Effect.void,
          onEvent(event)
        )
      ),
      Effect.forkScoped
    )
    return yield* Fiber.join(fiber).pipe(
      Effect.onInterrupt(() =>
        Effect.flatMap(Ref.get(session), (id) =>
          id === undefined
            ? Fiber.interrupt(fiber)
            : Effect.zipRight(agent.stop(id), Fiber.await(fiber)))
      )
    )
  }).pipe(Effect.scoped)

/** How a turn is run: by the agent in this process (`runTurn`), or over the host's RPC (AgentViaHost.ts). */
type Turn<R> = (input: RunInput, onEvent: (event: TurnEvent.TurnEvent) => Effect.Effect<void>) => Effect.Effect<
  void,
  unknown,
  R
>

/** Where the turns run: the running host of the home (always said on stderr), else this process (said with --verbose). */
const where = <A, E, R>(
  args: { readonly home: Option.Option<string>; readonly verbose: boolean },
  inProcess: Effect.Effect<A, E, R>,
  viaHost: (host: Effect.Effect.Success<ReturnType<typeof AgentViaHost.connect>>) => Effect.Effect<A, E, Scope.Scope>
) =>
  Effect.flatMap(
    HostPath.find(args.home),
    Option.match({
      onNone: () => Effect.zipRight(args.verbose ? stderr(HostPath.inProcessLine) : Effect.void, inProcess),
      onSome: ({ url }) =>
        Effect.gen(function*() {
          const host = yield* AgentViaHost.connect(url)
          yield* stderr(HostPath.viaHostLine(url))
          return yield* viaHost(host)
        }).pipe(Effect.scoped)
    })
  )

/** The events of `agent run`'s turn, printed. */
const runEvents = <R>({ json, message, session, agent }: AgentCommands.RunArgs, mode: Approvals.Mode, turn: Turn<R>) =>
  Effect.gen(function*() {
    const started = new Map<string, unknown>()
    const denied: Array<string> = []
    let end: TurnEvent.TurnEvent | undefined
    yield* turn({
      message,
      sessionId: Option.getOrUndefined(session),
      agent: Option.getOrUndefined(agent)
    }, (event) =>
      Effect.gen(function*() {
        if (json) yield* stdout(jsonLine(event))
        switch (event._tag) {
          case "TurnStarted":
            if (Option.isNone(session)) yield* stderr(`session: ${event.sessionId}`)
            return
          case "ToolStarted":
            started.set(event.callId, event.arguments)
            return
          case "ToolDone":
            if (!json) yield* stderr(toolLine(started, event))
            if (event.status === "denied") denied.push(event.name)
            return
          case "TurnDone":
          case "TurnFailed":
          case "TurnStopped":
            end = event
            return
        }
      }))
    if (denied.length > 0) yield* stderr(deniedNote(denied, mode))
    if (end?._tag === "TurnFailed") {
      if (!json) yield* stderr(`skald: ${end.message}`)
      return yield* new ExitWith({ status: ExitStatus.Failure })
    }
    if (end?._tag === "TurnDone") {
      if (!json) yield* stdout(end.text)
      if (!json && end.note !== undefined) yield* stderr(`skald: ${end.note}`)
    }
  })

/** `skald agent run`. */
export const run = (args: AgentCommands.RunArgs) => {
  const mode = approvalMode(args.approve)
  const tty = process.stdin.isTTY === true
  return where(
    args,
    Effect.gen(function*() {
      // Elicitations: asked on the terminal, or declined (with a note) when stdin is not one.
      yield* InboxPrompt.start(tty ? Elicit.terminal : InboxPrompt.declining)
      yield* awaitServers
      yield* runEvents(args, mode, runTurn)
    }).pipe(Effect.scoped, Effect.provide(agentLayer(args.home, mode))),
    (host) =>
      Effect.gen(function*() {
        // This session's approvals by --approve; a server's question asked here on a terminal, else left in the inbox.
        yield* host.answerApprovals(mode)
        yield* tty ? InboxPrompt.startOn(host.source, Elicit.terminal) : host.noteElicitations
        yield* runEvents(args, mode, host.turn)
      })
  ).pipe(reportFailures)
}

/** A value as pretty JSON when it is JSON (or a string holding JSON), else as it is. */
const pretty = (value: unknown): string => {
  if (typeof value !== "string") return JSON.stringify(value, null, 2)
  try {
    return JSON.stringify(JSON.parse(value), null, 2)
  } catch {
    return value
  }
}

const indent = (text: string): string => text.split("\n").map((l) => `│ ${l}`).join("\n")

/** What `chat` prints for an event: streamed text, a card per tool call, the turn's end. */
const chatText = (event: TurnEvent.TurnEvent, sessionGiven: boolean): string | undefined => {
  switch (event._tag) {
    case "TurnStarted":
      return sessionGiven ? undefined : `(session ${event.sessionId})\n`
    case "TextDelta":
      return event.text
    case "ToolStarted":
      return `\n┌ tool ${event.name}\n${indent(pretty(event.arguments))}\n`
    case "ToolDone":
      return `├ ${event.status}\n${indent(event.resultType === "json" ? pretty(event.result) : event.result)}\n└\n`
    case "TurnDone":
      return event.note === undefined ? "\n" : `\n(${event.note})\n`
    case "TurnStopped":
      return "\n(stopped)\n"
    case "TurnFailed":
      return `\n(${event.message})\n`
  }
}

const write = (text: string) => Effect.sync(() => void process.stdout.write(text))

/** `skald chat` with its turns run by `runOne` and its questions answered by `prompts`. */
const chatWith = <R, R2, R3>(
  { agent, session }: AgentCommands.ChatArgs,
  runOne: Turn<R>,
  prompts: (tty: Terminal | undefined) => Effect.Effect<void, never, Scope.Scope | R2>,
  command: (line: string) => Effect.Effect<PromptCommands.Outcome, unknown, R3>
) =>
  Effect.gen(function*() {
    const current = yield* Ref.make<string | undefined>(Option.getOrUndefined(session))
    const turn = (line: string) =>
      Effect.gen(function*() {
        // `/help`, `/SERVER:PROMPT …` (agent/PromptCommands.ts): printed, or a prompt sent as the message.
        let message = line
        if (PromptCommands.isCommand(line)) {
          const outcome = yield* command(line).pipe(
            Effect.catchAll((error) =>
              Effect.succeed<PromptCommands.Outcome>({
                _tag: "Print",
                text: `skald: ${(error as { message?: string }).message ?? String(error)}`
              })
            )
          )
          if (outcome._tag === "Print") return yield* write(`${outcome.text}\n`)
          message = outcome.message
        }
        const sessionId = yield* Ref.get(current)
        yield* runOne(
          { message, sessionId, agent: Option.getOrUndefined(agent) },
          (event) =>
            Effect.zipRight(
              event._tag === "TurnStarted" ? Ref.set(current, event.sessionId) : Effect.void,
              Effect.flatMap(Effect.succeed(chatText(event, sessionId !== undefined)), (text) =>
                text === undefined ? Effect.void : write(text))
            )
        ).pipe(
          Effect.catchAll((error) =>
            stderr(`skald: ${(error as { message?: string }).message ?? String(error)}`)
          )
        )
      })
    if (process.stdin.isTTY === true) {
      const terminal: Terminal = { suspend: () => {}, resume: () => {} }
      yield* prompts(terminal)
      return yield* tty(turn, Ref.get(current), terminal)
    }
    // Without a terminal: one message per line.
    yield* prompts(undefined)
    const lines = Readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false })
    yield* Effect.addFinalizer(() => Effect.sync(() => lines.close()))
    yield* Stream.fromAsyncIterable(lines, (e) => new UsageError({ message: `could not read stdin: ${String(e)}` }))
      .pipe(
        Stream.filter((line) => line.trim().length > 0),
        Stream.runForEach(turn)
      )
  }).pipe(Effect.scoped)

/** The hooks that let the REPL give the terminal to a question and take it back. */
const hooksOf = (terminal: Terminal): InboxPrompt.Hooks => ({
  before: Effect.sync(() => terminal.suspend()),
  after: Effect.sync(() => terminal.resume())
})

/** `skald chat`. */
export const chat = (args: AgentCommands.ChatArgs) => {
  const mode = approvalMode(args.approve)
  return where(
    args,
    Effect.zipRight(
      awaitServers,
      // Elicitations asked on the terminal; without one they are declined (with a note).
      chatWith(args, runTurn, (terminal) =>
        terminal === undefined
          ? InboxPrompt.start(InboxPrompt.declining)
          : InboxPrompt.start(Elicit.terminal, hooksOf(terminal)), PromptCommands.run)
    ).pipe(Effect.provide(agentLayer(args.home, mode))),
    (host) =>
      chatWith(args, host.turn, (terminal) =>
        Effect.zipRight(
          host.answerApprovals(mode),
          // This session's approvals (inline on a terminal), its servers' questions: asked here, else left in the inbox.
          terminal === undefined
            ? host.noteElicitations
            : InboxPrompt.startOn(host.source, Elicit.terminal, hooksOf(terminal))
        ), host.command)
  ).pipe(reportFailures)
}

/** How the REPL lets go of the terminal while an inbox question is asked, and takes it back. */
interface Terminal {
  suspend: () => void
  resume: () => void
}

/**
 * The terminal REPL: a prompt, a turn per message. Ctrl-C during a turn stops it; Ctrl-C at the
 * prompt, a second Ctrl-C during a turn, or Ctrl-D exits. While an inbox question is asked
 * (InboxPrompt), the REPL's readline is closed — the question reads stdin itself, masked fields
 * without echo — and opened again after it.
 */
const tty = <R>(
  turn: (message: string) => Effect.Effect<void, never, R>,
  _session: Effect.Effect<string | undefined>,
  terminal: Terminal
) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<R>()
    /** The running turn's Ctrl-C handler, carried over to a reopened readline. */
    let onTurnInterrupt: (() => void) | undefined
    let suspended = false
    const free = yield* Effect.makeLatch(true)
    const open = () => {
      const created = Readline.createInterface({ input: process.stdin, output: process.stdout, terminal: true })
      created.setPrompt("> ")
      if (onTurnInterrupt !== undefined) created.on("SIGINT", onTurnInterrupt)
      return created
    }
    let rl = open()
    terminal.suspend = () => {
      suspended = true
      free.unsafeClose()
      rl.close()
    }
    terminal.resume = () => {
      rl = open()
      suspended = false
      free.unsafeOpen()
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => rl.close()))
    /** The next line; `undefined` at the end (Ctrl-C, Ctrl-D); `again` when a question took the terminal. */
    const ask = Effect.async<string | undefined | { readonly again: true }>((resume) => {
      const current = rl
      const onLine = (line: string) => {
        done()
        resume(Effect.succeed(line))
      }
      const onClose = () => {
        done()
        resume(Effect.succeed(suspended ? { again: true } : undefined))
      }
      const onEnd = () => {
        done()
        resume(Effect.succeed(undefined))
      }
      const done = () => {
        current.off("line", onLine).off("close", onClose).off("SIGINT", onEnd)
      }
      current.on("line", onLine).once("close", onClose).once("SIGINT", onEnd)
      current.prompt()
    })
    while (true) {
      yield* free.await
      const line = yield* ask
      if (typeof line === "object") continue
      if (line === undefined) return
      if (line.trim().length === 0) continue
      // readline keeps reading during the turn (paused, it would not see Ctrl-C: the terminal is raw).
      const fiber = Runtime.runFork(runtime)(turn(line))
      let stops = 0
      const onInterrupt = () => {
        stops++
        if (stops === 1) fiber.unsafeInterruptAsFork(fiber.id())
        else process.kill(process.pid, "SIGINT")
      }
      onTurnInterrupt = onInterrupt
      rl.on("SIGINT", onInterrupt)
      yield* Fiber.await(fiber)
      rl.off("SIGINT", onInterrupt)
      onTurnInterrupt = undefined
    }
  })
