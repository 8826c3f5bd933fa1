/**
 * A model-based property test of the whole engine, under one TestClock per generated sequence.
 *
 * A scripted peer (the "world") plays the server over the memory transport; a model of the engine
 * predicts, after every command and at every instant the clock passes, exactly which messages the
 * client sends, which late answers it drops (with a warning), and which calls settle, and how. The
 * commands: start a plain call or a task call, stop a call, let a call's timeout (or whatever is
 * due next) pass, the peer answers one outstanding request, changes a task's status (optionally
 * pushing `notifications/tasks/status`), opens / answers / lets expire / withdraws an elicitation,
 * or crashes. Each sequence ends either by letting everything settle with a silent peer or by
 * closing the client's scope with calls in flight; then the invariants are checked once more on
 * the full message history, and nothing may be left behind (no sleeps, no messages, later calls
 * fail at once). The peer declares `tasks.cancel` in some runs and not in others.
 *
 * Diagnostics: MODEL_RUNS=3000 for a longer search; MODEL_STATS=1 prints what the runs covered.
 *
 * Time only moves in `advanceTo`, instant by instant: to the next event of the model or the next
 * sleep registered with the TestClock, whichever comes first, quiescing and comparing at each.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import type { McpCallResult, McpError } from "@skald/domain"
import { Elicitation, JsonRpc, McpClient, McpLog } from "@skald/mcp"
import { Cause, Chunk, Deferred, Effect, Exit, FastCheck as fc, Fiber, FiberId, Option, Scope, TestClock } from "effect"
import { makeLogCapture } from "./utils/LogCapture.js"
import * as Memory from "./utils/MemoryTransport.js"

// --- the setting --------------------------------------------------------------------------------

const CALL_TIMEOUT = 1_000
const USER_DEADLINE = 5_000
const GRACE = 8_000
const MAX_TASK_WAIT = 20_000
const POLL_MIN = 500
const POLL_MAX = 30_000
const POLL_DEFAULT = 1_000

const clientOptions: McpClient.Options = {
  callTimeout: CALL_TIMEOUT,
  userDeadline: USER_DEADLINE,
  taskHandleGrace: GRACE,
  maxTaskWait: MAX_TASK_WAIT
}

const capabilities = (cancel: boolean) => ({
  tools: {},
  tasks: { requests: { tools: { call: {} } }, ...(cancel ? { cancel: {} } : {}) }
})

const TOOLS = [
  { name: "plain", inputSchema: { type: "object" } },
  { name: "long", inputSchema: { type: "object" }, execution: { taskSupport: "required" } }
]

const FORM = {
  type: "object",
  properties: { name: { type: "string", minLength: 1 }, n: { type: "integer", minimum: 0 } },
  required: ["name"]
}

/** pollInterval and ttl choices of the peer's tasks (the answer's `variant` picks one of each). */
const POLLS: ReadonlyArray<number | undefined> = [undefined, 0, 300, 1_000, 2_500, 60_000]
const TTLS: ReadonlyArray<number | null> = [null, 2_500, 8_000]

const clampPoll = (interval: number | undefined) => Math.min(POLL_MAX, Math.max(POLL_MIN, interval ?? POLL_DEFAULT))
const isTerminal = (status: string) => status === "completed" || status === "failed" || status === "cancelled"

const taskWire = (taskId: string, status: string, pollInterval: number | undefined, ttl: number | null) => ({
  taskId,
  status,
  createdAt: "2026-01-01T00:00:00Z",
  lastUpdatedAt: "2026-01-01T00:00:00Z",
  ttl,
  ...(pollInterval !== undefined ? { pollInterval } : {})
})

const textResult = (text: string, isError: boolean) => ({
  content: [{ type: "text", text }],
  ...(isError ? { isError: true } : {})
})

// --- commands -----------------------------------------------------------------------------------

type Command =
  | { readonly _tag: "call"; readonly timeout: number | undefined }
  | { readonly _tag: "taskCall"; readonly timeout: number | undefined }
  | { readonly _tag: "stop"; readonly pick: number }
  | { readonly _tag: "timeout"; readonly pick: number; readonly extra: number }
  | { readonly _tag: "advance"; readonly millis: number }
  | { readonly _tag: "next" }
  | { readonly _tag: "answer"; readonly pick: number; readonly oldest: boolean; readonly variant: number }
  | {
    readonly _tag: "status"
    readonly pick: number
    readonly to: "completed" | "failed" | "cancelled"
    readonly notify: boolean
  }
  | { readonly _tag: "elicit" }
  | {
    readonly _tag: "elicitAnswer"
    readonly pick: number
    readonly action: "accept" | "invalid" | "decline" | "cancel"
  }
  | { readonly _tag: "elicitExpire"; readonly pick: number; readonly extra: number }
  | { readonly _tag: "elicitCancel"; readonly pick: number }
  | { readonly _tag: "crash" }

const timeoutArb = fc.constantFrom<number | undefined>(undefined, undefined, 500, 2_000)
const pick = fc.nat({ max: 7 })

const commandArbs = {
  call: fc.record({ _tag: fc.constant("call" as const), timeout: timeoutArb }),
  taskCall: fc.record({ _tag: fc.constant("taskCall" as const), timeout: timeoutArb }),
  stop: fc.record({ _tag: fc.constant("stop" as const), pick }),
  timeout: fc.record({ _tag: fc.constant("timeout" as const), pick, extra: fc.constantFrom(0, 1, 300) }),
  advance: fc.record({
    _tag: fc.constant("advance" as const),
    millis: fc.constantFrom(100, 499, 500, 1_000, 3_000, 6_000)
  }),
  next: fc.record({ _tag: fc.constant("next" as const) }),
  answer: fc.record({
    _tag: fc.constant("answer" as const),
    // Counted from the newest outstanding request: mostly the newest (a task's latest poll).
    pick: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: pick }),
    /** Counted from the oldest instead: a late answer to something long abandoned. */
    oldest: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    variant: fc.nat({ max: 17 })
  }),
  status: fc.record({
    _tag: fc.constant("status" as const),
    pick,
    to: fc.constantFrom("completed" as const, "failed" as const, "cancelled" as const),
    notify: fc.boolean()
  }),
  elicit: fc.record({ _tag: fc.constant("elicit" as const) }),
  elicitAnswer: fc.record({
    _tag: fc.constant("elicitAnswer" as const),
    pick,
    action: fc.constantFrom("accept" as const, "invalid" as const, "decline" as const, "cancel" as const)
  }),
  elicitExpire: fc.record({ _tag: fc.constant("elicitExpire" as const), pick, extra: fc.constantFrom(0, 1) }),
  elicitCancel: fc.record({ _tag: fc.constant("elicitCancel" as const), pick }),
  crash: fc.record({ _tag: fc.constant("crash" as const) })
} satisfies { readonly [K in Command["_tag"]]: fc.Arbitrary<Extract<Command, { _tag: K }>> }

/** A mix of commands: each run draws one profile, so long task lifecycles and elicitation-heavy runs both happen. */
const profile = (
  weights: { readonly [K in Command["_tag"]]?: number },
  arbs: { readonly [K in Command["_tag"]]?: fc.Arbitrary<Command> } = {}
): fc.Arbitrary<Command> =>
  fc.oneof(
    ...Object.entries(weights).map(([tag, weight]) => ({
      weight: weight!,
      arbitrary: arbs[tag as Command["_tag"]] ?? (commandArbs[tag as Command["_tag"]] as fc.Arbitrary<Command>)
    }))
  )

const profiles = {
  mixed: profile({
    call: 6,
    taskCall: 6,
    stop: 4,
    timeout: 4,
    advance: 2,
    next: 2,
    answer: 12,
    status: 4,
    elicit: 2,
    elicitAnswer: 2,
    elicitExpire: 2,
    elicitCancel: 1,
    crash: 1
  }),
  tasks: profile({
    call: 1,
    taskCall: 6,
    stop: 2,
    timeout: 2,
    advance: 1,
    next: 5,
    answer: 16,
    status: 4,
    elicit: 1,
    crash: 1
  }, {
    // Patient task calls, so that more of them live to be polled.
    taskCall: fc.record({
      _tag: fc.constant("taskCall" as const),
      timeout: fc.constantFrom<number | undefined>(undefined, 5_000, 10_000, 10_000)
    })
  }),
  // Calls given up on (stops, timeouts) while elicitations come and go, answered late.
  late: profile({
    call: 1,
    taskCall: 5,
    stop: 5,
    timeout: 1,
    advance: 3,
    next: 1,
    answer: 8,
    elicit: 4,
    elicitAnswer: 4,
    elicitExpire: 1,
    elicitCancel: 1
  }, {
    answer: fc.record({
      _tag: fc.constant("answer" as const),
      pick: fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: pick }),
      oldest: fc.boolean(),
      variant: fc.nat({ max: 17 })
    })
  }),
  elicitation: profile({
    call: 3,
    taskCall: 3,
    stop: 3,
    timeout: 3,
    advance: 3,
    next: 2,
    answer: 6,
    status: 1,
    elicit: 5,
    elicitAnswer: 4,
    elicitExpire: 2,
    elicitCancel: 1
  })
}

interface Run {
  /** The peer declares `tasks.cancel`. */
  readonly cancel: boolean
  readonly profile: keyof typeof profiles
  /** What the peer answers at once, without a command: nothing, every tasks/get, or tasks/result too. */
  readonly prompt: "none" | "polls" | "all"
  readonly commands: ReadonlyArray<Command>
  /** Let everything settle with a silent peer, or close the client's scope with calls in flight. */
  readonly ending: "settle" | "close"
}

const run: fc.Arbitrary<Run> = fc.record({
  cancel: fc.boolean(),
  profile: fc.constantFrom("mixed" as const, "tasks" as const, "elicitation" as const, "late" as const),
  prompt: fc.constantFrom("none" as const, "polls" as const, "all" as const),
  ending: fc.constantFrom("settle" as const, "close" as const)
}).chain((r) =>
  fc.array(profiles[r.profile], { minLength: 5, maxLength: 25 }).map((commands): Run => ({ ...r, commands }))
)

// --- the model of the engine ----------------------------------------------------------------------

type Outcome =
  | { readonly _tag: "ok"; readonly text: string; readonly isError: boolean }
  | { readonly _tag: "fail"; readonly error: string }
  | { readonly _tag: "interrupted" }

const ok = (text: string, isError = false): Outcome => ({ _tag: "ok", text, isError })
const fail = (error: string): Outcome => ({ _tag: "fail", error })
const interrupted: Outcome = { _tag: "interrupted" }

/** What the peer answers, as the model sees it. */
type PeerAnswer =
  | { readonly _tag: "text"; readonly text: string; readonly isError: boolean }
  | { readonly _tag: "error" }
  | {
    readonly _tag: "task"
    readonly taskId: string
    readonly status: string
    readonly pollInterval: number | undefined
    readonly ttl: number | null
  }
  | { readonly _tag: "ack" }

interface ModelTask {
  readonly taskId: string
  readonly call: ModelCall | undefined
  /** The status the client last heard. */
  known: string
  pollInterval: number | undefined
  deadlineAt: number
  /** Abandoned before a terminal status while the connection was up: a tasks/cancel is due (if declared). */
  cancelDue: boolean
}

interface ModelCall {
  readonly n: number
  readonly marker: string
  readonly kind: "plain" | "task"
  readonly timeoutMillis: number
  outcome: Outcome | undefined
  settledAt: number | undefined
  /** The request the call waits for, if any. */
  waitingOn: ModelRequest | undefined
  /** When its task poller wakes up, while it sleeps. */
  wakeAt: number | undefined
  task: ModelTask | undefined
  /** The tools/call request (its id is bound once the peer saw it). */
  request: ModelRequest | undefined
}

interface ModelRequest {
  readonly sig: string
  readonly method: string
  readonly call: ModelCall | undefined
  readonly taskId: string | undefined
  readonly timeoutMillis: number
  deadline: number
  /** A task-augmented call stopped before its handle came: kept only to cancel the task. */
  orphaned: boolean
  id: JsonRpc.RequestId | undefined
  readonly sentAt: number
}

interface ModelElicitation {
  readonly key: string
  readonly openedAt: number
  readonly deadline: number
  closedAt: number | undefined
  answer: Elicitation.Response | undefined
  expired: boolean
}

const sigCall = (marker: string, kind: "plain" | "task") => `tools/call ${marker} ${kind}`
const sigCancelled = (requestSig: string, reason: string) => `cancelled [${requestSig}]: ${reason}`
const sigAnswer = (id: JsonRpc.RequestId, result: unknown) => `answer ${JSON.stringify(id)} ${JSON.stringify(result)}`

class Model {
  now = 0
  /** The error every request fails with once the connection is gone. */
  closed: string | undefined = undefined
  expected: Array<string> = []
  /** Answers the engine is expected to drop (with a warning) this step. */
  dropped: Array<JsonRpc.RequestId> = []
  sentThisStep: Array<ModelRequest> = []
  readonly calls: Array<ModelCall> = []
  pending: Array<ModelRequest> = []
  readonly tasks = new Map<string, ModelTask>()
  readonly elicitations: Array<ModelElicitation> = []

  constructor(readonly cancelCap: boolean) {}

  openElicitations() {
    return this.elicitations.filter((e) => e.closedAt === undefined && !this.scopeClosed)
  }
  scopeClosed = false

  private request(
    sig: string,
    method: string,
    call: ModelCall | undefined,
    taskId: string | undefined,
    timeout: number
  ) {
    const r: ModelRequest = {
      sig,
      method,
      call,
      taskId,
      timeoutMillis: timeout,
      deadline: this.now + timeout,
      orphaned: false,
      id: undefined,
      sentAt: this.now
    }
    this.pending.push(r)
    this.sentThisStep.push(r)
    this.expected.push(sig)
    return r
  }

  private drop(r: ModelRequest) {
    this.pending = this.pending.filter((p) => p !== r)
  }

  private settle(call: ModelCall, outcome: Outcome) {
    call.outcome = outcome
    call.settledAt = this.now
    call.waitingOn = undefined
    call.wakeAt = undefined
  }

  private cancelTask(task: ModelTask) {
    if (this.closed !== undefined) return
    task.cancelDue = true
    if (this.cancelCap) {
      this.request(`tasks/cancel ${task.taskId}`, "tasks/cancel", undefined, task.taskId, CALL_TIMEOUT)
    }
  }

  private newTask(answer: Extract<PeerAnswer, { _tag: "task" }>, call: ModelCall | undefined): ModelTask {
    const limit = typeof answer.ttl === "number" && answer.ttl > 0 ? answer.ttl : MAX_TASK_WAIT
    const task: ModelTask = {
      taskId: answer.taskId,
      call,
      known: answer.status,
      pollInterval: answer.pollInterval,
      deadlineAt: this.now + limit,
      cancelDue: false
    }
    this.tasks.set(task.taskId, task)
    return task
  }

  startCall(n: number, kind: "plain" | "task", timeout: number | undefined): ModelCall {
    const call: ModelCall = {
      n,
      marker: `c${n}`,
      kind,
      timeoutMillis: timeout ?? CALL_TIMEOUT,
      outcome: undefined,
      settledAt: undefined,
      waitingOn: undefined,
      wakeAt: undefined,
      task: undefined,
      request: undefined
    }
    this.calls.push(call)
    if (this.closed !== undefined) {
      this.settle(call, fail(this.closed))
      return call
    }
    call.request = this.request(sigCall(call.marker, kind), "tools/call", call, undefined, call.timeoutMillis)
    call.waitingOn = call.request
    return call
  }

  /** The top of the poll loop, after a status was heard. */
  private poll(call: ModelCall, task: ModelTask) {
    if (!isTerminal(task.known)) {
      if (this.now >= task.deadlineAt) {
        this.settle(call, fail("McpTaskExpired"))
        return this.cancelTask(task)
      }
      call.waitingOn = undefined
      call.wakeAt = this.now + Math.min(clampPoll(task.pollInterval), task.deadlineAt - this.now)
      return
    }
    if (task.known === "cancelled") return this.settle(call, fail("McpTaskCancelled"))
    // completed or failed: tasks/result, bounded by what is left of the deadline.
    if (this.now >= task.deadlineAt) return this.settle(call, fail("McpTaskExpired"))
    call.waitingOn = this.request(
      `tasks/result ${task.taskId}`,
      "tasks/result",
      call,
      task.taskId,
      task.deadlineAt - this.now
    )
  }

  private wake(call: ModelCall, task: ModelTask) {
    call.wakeAt = undefined
    if (this.now >= task.deadlineAt) {
      this.settle(call, fail("McpTaskExpired"))
      return this.cancelTask(task)
    }
    if (this.closed !== undefined) return this.settle(call, fail(this.closed))
    call.waitingOn = this.request(`tasks/get ${task.taskId}`, "tasks/get", call, task.taskId, CALL_TIMEOUT)
  }

  onAnswer(id: JsonRpc.RequestId, answer: PeerAnswer) {
    const r = this.pending.find((p) => p.id === id)
    if (r === undefined) {
      // Abandoned (or never waited for): the engine drops it with a warning.
      this.dropped.push(id)
      return
    }
    this.drop(r)
    const call = r.call
    if (r.orphaned) {
      if (answer._tag === "task" && !isTerminal(answer.status)) this.cancelTask(this.newTask(answer, call))
      return
    }
    if (call === undefined) return // a tasks/cancel answer
    switch (r.method) {
      case "tools/call": {
        if (call.kind === "plain") {
          return this.settle(call, answer._tag === "text" ? ok(answer.text, answer.isError) : fail("McpRequestError"))
        }
        if (answer._tag !== "task") throw new Error("the peer answers task calls with a task")
        call.task = this.newTask(answer, call)
        return this.poll(call, call.task)
      }
      case "tasks/get": {
        if (answer._tag !== "task" || call.task === undefined) throw new Error("tasks/get answered without a task")
        call.task.known = answer.status
        call.task.pollInterval = answer.pollInterval
        return this.poll(call, call.task)
      }
      case "tasks/result": {
        if (answer._tag === "text") return this.settle(call, ok(answer.text, answer.isError))
        return this.settle(call, fail(call.task?.known === "failed" ? "McpTaskFailed" : "McpRequestError"))
      }
    }
  }

  /** `notifications/tasks/status`: wakes the task's poller if it sleeps. */
  onStatusNotification(taskId: string) {
    const task = this.tasks.get(taskId)
    const call = task?.call
    if (task === undefined || call === undefined || call.outcome !== undefined || call.wakeAt === undefined) return
    this.wake(call, task)
  }

  stop(call: ModelCall) {
    const waitingOn = call.waitingOn
    const sleeping = call.wakeAt !== undefined
    this.settle(call, interrupted)
    if (sleeping && call.task !== undefined) return this.cancelTask(call.task)
    if (waitingOn === undefined) return
    switch (waitingOn.method) {
      case "tools/call": {
        if (call.kind === "plain") {
          this.drop(waitingOn)
          this.expected.push(sigCancelled(waitingOn.sig, McpClient.STOP_REASON))
        } else {
          // Kept a little longer, to cancel the task when its handle comes.
          waitingOn.orphaned = true
          waitingOn.deadline = this.now + GRACE
        }
        return
      }
      case "tasks/get": {
        this.drop(waitingOn)
        return call.task !== undefined ? this.cancelTask(call.task) : undefined
      }
      case "tasks/result":
        return this.drop(waitingOn) // the task is terminal: nothing to cancel
    }
  }

  private expire(r: ModelRequest) {
    this.drop(r)
    if (r.orphaned) return
    const call = r.call
    if (call === undefined) return // a tasks/cancel nobody waits for
    switch (r.method) {
      case "tools/call": {
        this.settle(call, fail("McpTimeout"))
        if (call.kind === "plain") this.expected.push(sigCancelled(r.sig, McpClient.TIMEOUT_REASON))
        else {
          // The task the server may have created is still cancelled when its handle comes.
          r.orphaned = true
          r.deadline = this.now + GRACE
          this.pending.push(r)
        }
        return
      }
      case "tasks/get": {
        this.settle(call, fail("McpTimeout"))
        return call.task !== undefined ? this.cancelTask(call.task) : undefined
      }
      case "tasks/result":
        return this.settle(call, fail("McpTaskExpired"))
    }
  }

  crash() {
    this.closed = "McpServerExited"
    const pending = this.pending
    this.pending = []
    for (const r of pending) {
      if (r.orphaned || r.call === undefined) continue
      this.settle(r.call, fail(this.closed))
    }
    // A task call between polls learns of the crash at once, too.
    for (const c of this.calls) if (c.wakeAt !== undefined) this.settle(c, fail(this.closed))
  }

  openElicitation(key: string) {
    this.elicitations.push({
      key,
      openedAt: this.now,
      deadline: this.now + USER_DEADLINE,
      closedAt: undefined,
      answer: undefined,
      expired: false
    })
  }

  /** The handler finished (`answer`), or the server cancelled the request (no answer is sent). */
  closeElicitation(e: ModelElicitation, answer: Elicitation.Response | undefined, expired: boolean) {
    e.closedAt = this.now
    e.answer = answer
    e.expired = expired
    if (answer !== undefined) this.expected.push(sigAnswer(e.key, answer))
    if (this.openElicitations().length === 0) {
      // The last one closed: every pending request's timeout restarts in full.
      for (const r of this.pending) r.deadline = this.now + (r.orphaned ? GRACE : r.timeoutMillis)
    }
  }

  nextEventTime(): number {
    let next = Infinity
    const open = this.openElicitations()
    for (const e of open) next = Math.min(next, e.deadline)
    if (open.length === 0) { for (const r of this.pending) next = Math.min(next, r.deadline) }
    for (const c of this.calls) if (c.wakeAt !== undefined) next = Math.min(next, c.wakeAt)
    return next
  }

  /** Everything that happens until `t`, instant by instant. */
  advanceTo(t: number) {
    for (;;) {
      const next = this.nextEventTime()
      if (next > t) break
      this.now = next
      for (const e of this.openElicitations()) {
        if (e.deadline <= next) this.closeElicitation(e, { action: "cancel" }, true)
      }
      if (this.openElicitations().length === 0) {
        for (const r of this.pending.slice()) {
          if (r.deadline <= next && this.pending.includes(r)) this.expire(r)
        }
      }
      for (const c of this.calls) {
        if (c.wakeAt !== undefined && c.wakeAt <= next && c.task !== undefined) this.wake(c, c.task)
      }
    }
    this.now = t
  }

  /** The client's scope closes: every running call is interrupted (last started first), then the connection. */
  closeScope() {
    for (const c of this.calls.slice().reverse()) if (c.outcome === undefined) this.stop(c)
    this.closed ??= "McpConnectionClosed"
    this.scopeClosed = true
    this.pending = []
  }

  takeExpected() {
    const out = this.expected
    this.expected = []
    return out
  }
}

// --- observing the real engine ------------------------------------------------------------------

interface Received {
  readonly id: JsonRpc.RequestId
  readonly method: string
  readonly sig: string
  readonly marker: string | undefined
  readonly kind: "plain" | "task" | undefined
  readonly taskId: string | undefined
}

interface Stamped {
  readonly at: number
  readonly message: JsonRpc.Message
  readonly sig: string
}

const paramsOf = (m: { readonly params?: unknown }): Record<string, unknown> =>
  typeof m.params === "object" && m.params !== null ? (m.params as Record<string, unknown>) : {}

const outcomeOf = (exit: Exit.Exit<McpClient.CallOutcome, McpError.McpError>): Outcome | string => {
  if (Exit.isSuccess(exit)) {
    const result: McpCallResult.McpCallResult = exit.value.result
    return result._tag === "Text" ? ok(result.text, result.isError) : `unexpected result ${result._tag}`
  }
  if (Cause.isInterruptedOnly(exit.cause)) return interrupted
  const error = Cause.failureOption(exit.cause)
  if (Option.isSome(error)) return fail(error.value._tag)
  return `a defect: ${Cause.pretty(exit.cause)}`
}

const show = (o: Outcome | string | undefined) => (o === undefined ? "running" : JSON.stringify(o))

/** Yields to the macrotask queue: every fiber woken by now has run. */
const macrotask = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

const sorted = (xs: ReadonlyArray<string>) => xs.slice().sort()

const runSequence = (input: Run) =>
  Effect.gen(function*() {
    const trace: Array<string> = []
    const failWith = (what: string): never => {
      const setting = `profile=${input.profile}, cancel=${input.cancel}, prompt=${input.prompt}, ending=${input.ending}`
      throw new Error(`${what}\n--- trace (${setting}):\n${trace.join("\n")}`)
    }
    const model = new Model(input.cancel)
    const log = makeLogCapture()

    // The app's elicitation handler: waits for the test to answer (keyed by the request's message).
    const asks = new Map<string, Deferred.Deferred<Elicitation.Response>>()
    const handler: Elicitation.Handler = {
      url: false,
      elicit: (request) =>
        Effect.suspend(() => {
          if (request._tag !== "Form" || request.fields.map((f) => f.name).join() !== "name,n") {
            return Effect.die(new Error(`unexpected elicitation request ${JSON.stringify(request)}`))
          }
          const answer = Deferred.unsafeMake<Elicitation.Response>(FiberId.none)
          asks.set(request.message, answer)
          return Deferred.await(answer)
        })
    }

    const scope = yield* Scope.make()
    const { client, peer } = yield* Memory.connect({
      peer: { capabilities: capabilities(input.cancel) },
      client: clientOptions
    })
      .pipe(
        Effect.provideService(Elicitation.ElicitationHandler, handler),
        Effect.provideService(McpLog.McpLogSink, log.sink),
        Scope.extend(scope)
      )
    const listing = yield* Effect.fork(client.refreshTools)
    const list = yield* Memory.expectRequest(peer, "tools/list")
    yield* peer.push(JsonRpc.success(list.id, { tools: TOOLS }))
    yield* Fiber.join(listing)

    // The world: what the peer received and has not answered, its tasks, whether it crashed.
    const received = new Map<JsonRpc.RequestId, Received>()
    let outstanding: Array<Received> = []
    const peerTasks = new Map<string, { status: string; pollInterval: number | undefined; ttl: number | null }>()
    let crashed = false
    const stamped: Array<Stamped> = []
    const elicitationOpened = new Map<string, number>()

    const fibers: Array<Fiber.RuntimeFiber<McpClient.CallOutcome, McpError.McpError>> = []
    const settledAt = new Map<number, number>()

    const sigOf = (m: JsonRpc.Message): string => {
      if (Memory.isRequest(m)) {
        const p = paramsOf(m)
        switch (m.method) {
          case "tools/call": {
            const args = typeof p.arguments === "object" && p.arguments !== null
              ? (p.arguments as Record<string, unknown>)
              : {}
            return sigCall(String(args.marker), p.task !== undefined ? "task" : "plain")
          }
          case "tasks/get":
          case "tasks/result":
          case "tasks/cancel":
            return `${m.method} ${String(p.taskId)}`
          default:
            return `request ${m.method}`
        }
      }
      if (Memory.isNotification(m)) {
        if (m.method !== "notifications/cancelled") return `notification ${m.method}`
        const p = paramsOf(m)
        const id = p.requestId
        const request = typeof id === "number" || typeof id === "string" ? received.get(id) : undefined
        return sigCancelled(request?.sig ?? `unknown id ${JSON.stringify(id)}`, String(p.reason))
      }
      return sigAnswer(m.id ?? "null", "result" in m ? m.result : { error: m.error.code })
    }

    let logSeen = 0
    const fibersDone = () => fibers.filter((f) => f.unsafePoll() !== null).length

    const quiesce = Effect.gen(function*() {
      let last = ""
      for (let i = 0; i < 200; i++) {
        yield* macrotask
        const fingerprint = `${peer.history().length}/${
          Chunk.size(yield* TestClock.sleeps())
        }/${fibersDone()}/${asks.size}`
        if (fingerprint === last) return
        last = fingerprint
      }
      return failWith("the engine never went quiet")
    })

    /** Quiesces, then compares what the client sent and which calls settled with the model. */
    const observe = (label: string) =>
      Effect.gen(function*() {
        yield* quiesce
        const now = yield* TestClock.currentTimeMillis
        if (now !== model.now) failWith(`the clock is at ${now}, the model at ${model.now}`)
        const messages = yield* peer.drain
        const actual: Array<string> = []
        for (const message of messages) {
          if (Memory.isRequest(message)) {
            const p = paramsOf(message)
            const args = typeof p.arguments === "object" && p.arguments !== null
              ? (p.arguments as Record<string, unknown>)
              : {}
            const r: Received = {
              id: message.id,
              method: message.method,
              sig: sigOf(message),
              marker: typeof args.marker === "string" ? args.marker : undefined,
              kind: message.method === "tools/call" ? (p.task !== undefined ? "task" : "plain") : undefined,
              taskId: typeof p.taskId === "string" ? p.taskId : undefined
            }
            if (received.has(message.id)) failWith(`request id ${JSON.stringify(message.id)} used twice`)
            received.set(message.id, r)
            if (!crashed) outstanding.push(r)
          }
          const sig = sigOf(message)
          actual.push(sig)
          stamped.push({ at: now, message, sig })
        }
        const expected = model.takeExpected()
        trace.push(`  t=${now} ${label}: sent ${JSON.stringify(actual)}`)
        if (JSON.stringify(sorted(actual)) !== JSON.stringify(sorted(expected))) {
          failWith(
            `at t=${now} after ${label}: the client sent\n  ${JSON.stringify(sorted(actual))}\nthe model expected\n  ${
              JSON.stringify(sorted(expected))
            }`
          )
        }
        // Answers to requests nobody waits for any more are dropped with a warning, and only those.
        const lines = [...log.lines]
        const dropped = lines.slice(logSeen).flatMap((l) => {
          const m = /^dropped a response to unknown request id (.*)$/.exec(l.text)
          return m === null ? [] : [m[1]!]
        })
        logSeen = lines.length
        const wantDropped = model.dropped.map((id) => JSON.stringify(id))
        model.dropped = []
        if (JSON.stringify(sorted(dropped)) !== JSON.stringify(sorted(wantDropped))) {
          failWith(
            `at t=${now} after ${label}: the client dropped answers to ${JSON.stringify(dropped)}, the model expected ${
              JSON.stringify(wantDropped)
            }`
          )
        }
        // Bind the ids of the requests sent this step to the model's requests.
        for (const message of messages) {
          if (!Memory.isRequest(message)) continue
          const sig = sigOf(message)
          const r = model.sentThisStep.find((x) => x.sig === sig && x.id === undefined)
          if (r !== undefined) r.id = message.id
        }
        model.sentThisStep = []
        // Every call settled exactly when and how the model says.
        for (const [n, fiber] of fibers.entries()) {
          const call = model.calls[n]!
          const exit = fiber.unsafePoll()
          const actualOutcome = exit === null ? undefined : outcomeOf(exit)
          if (exit !== null && !settledAt.has(n)) settledAt.set(n, now)
          if (JSON.stringify(actualOutcome) !== JSON.stringify(call.outcome)) {
            failWith(
              `at t=${now} after ${label}: call ${call.marker} (${call.kind}) is ${
                show(actualOutcome)
              }, the model says ${show(call.outcome)}`
            )
          }
        }
      })

    /** Moves the clock to `target`, stopping at every instant the model or the TestClock has something due. */
    const advanceTo = (target: number) =>
      Effect.gen(function*() {
        for (let i = 0; i < 1_000; i++) {
          const now = model.now
          const sleeps = Chunk.toReadonlyArray(yield* TestClock.sleeps()).filter((t) => t > now)
          const step = Math.min(target, model.nextEventTime(), ...sleeps)
          if (step <= now) {
            if (target <= now) return
            return failWith(`the model has an event at ${step}, not after now (${now})`)
          }
          yield* TestClock.setTime(step)
          model.advanceTo(step)
          yield* observe(`time ${step}`)
          yield* respond
          if (step >= target) return
        }
        return failWith("time never reached its target")
      })

    const startCall = (kind: "plain" | "task", timeout: number | undefined) =>
      Effect.gen(function*() {
        const n = fibers.length
        const fiber = yield* Effect.forkIn(
          client.callTool(
            kind === "plain" ? "plain" : "long",
            { marker: `c${n}` },
            timeout === undefined ? {} : { timeout }
          ),
          scope
        )
        fibers.push(fiber)
        model.startCall(n, kind, timeout)
      })

    const running = () => model.calls.filter((c) => c.outcome === undefined)

    const answer = (r: Received, variant: number): Effect.Effect<void> =>
      Effect.suspend(() => {
        switch (r.method) {
          case "tools/call": {
            if (r.kind === "plain") {
              const marker = r.marker ?? "?"
              switch (variant % 3) {
                case 0:
                  model.onAnswer(r.id, { _tag: "text", text: `r:${marker}`, isError: false })
                  return peer.push(JsonRpc.success(r.id, textResult(`r:${marker}`, false)))
                case 1:
                  model.onAnswer(r.id, { _tag: "text", text: `e:${marker}`, isError: true })
                  return peer.push(JsonRpc.success(r.id, textResult(`e:${marker}`, true)))
                default:
                  model.onAnswer(r.id, { _tag: "error" })
                  return peer.push(JsonRpc.failure(r.id, -32000, "no"))
              }
            }
            const taskId = `t${(r.marker ?? "c?").slice(1)}`
            const pollInterval = POLLS[variant % POLLS.length]
            const ttl = TTLS[Math.floor(variant / POLLS.length) % TTLS.length] ?? null
            peerTasks.set(taskId, { status: "working", pollInterval, ttl })
            model.onAnswer(r.id, { _tag: "task", taskId, status: "working", pollInterval, ttl })
            return peer.push(JsonRpc.success(r.id, { task: taskWire(taskId, "working", pollInterval, ttl) }))
          }
          case "tasks/get": {
            const t = peerTasks.get(r.taskId ?? "")
            if (t === undefined) return Effect.die(new Error(`tasks/get for an unknown task ${r.taskId}`))
            // Sometimes the task finishes just as it is polled.
            if (t.status === "working" && variant % 4 === 1) t.status = "completed"
            if (t.status === "working" && variant % 4 === 2) t.status = "failed"
            model.onAnswer(r.id, {
              _tag: "task",
              taskId: r.taskId!,
              status: t.status,
              pollInterval: t.pollInterval,
              ttl: t.ttl
            })
            return peer.push(JsonRpc.success(r.id, taskWire(r.taskId!, t.status, t.pollInterval, t.ttl)))
          }
          case "tasks/result": {
            const t = peerTasks.get(r.taskId ?? "")
            if (t?.status === "completed") {
              model.onAnswer(r.id, { _tag: "text", text: `done:${r.taskId}`, isError: false })
              return peer.push(JsonRpc.success(r.id, textResult(`done:${r.taskId}`, false)))
            }
            if (t?.status === "failed" && variant % 2 === 1) {
              model.onAnswer(r.id, { _tag: "text", text: `failed:${r.taskId}`, isError: true })
              return peer.push(JsonRpc.success(r.id, textResult(`failed:${r.taskId}`, true)))
            }
            model.onAnswer(r.id, { _tag: "error" })
            return peer.push(JsonRpc.failure(r.id, -32603, "task failed"))
          }
          case "tasks/cancel": {
            const t = peerTasks.get(r.taskId ?? "")
            if (t === undefined) return Effect.die(new Error(`tasks/cancel for an unknown task ${r.taskId}`))
            if (!isTerminal(t.status)) t.status = "cancelled"
            model.onAnswer(r.id, { _tag: "ack" })
            return peer.push(JsonRpc.success(r.id, taskWire(r.taskId!, t.status, t.pollInterval, t.ttl)))
          }
          default:
            return Effect.die(new Error(`the client sent an unexpected request ${r.method}`))
        }
      })

    /** A prompt peer answers every tasks/get (and tasks/result) as soon as it arrives. */
    let prompt = input.prompt
    let promptVariant = 0
    const respond = Effect.gen(function*() {
      while (prompt !== "none" && !crashed) {
        const due = outstanding.filter((r) =>
          r.method === "tasks/get" || (r.method === "tasks/result" && prompt === "all")
        )
        if (due.length === 0) return
        outstanding = outstanding.filter((r) => !due.includes(r))
        for (const r of due) {
          trace.push(`  promptly answer ${r.sig} (id ${JSON.stringify(r.id)})`)
          yield* answer(r, promptVariant++)
        }
        yield* observe("prompt answers")
      }
    })

    yield* observe("connected")

    // --- the commands ---
    for (const [step, cmd] of input.commands.entries()) {
      trace.push(`#${step} t=${model.now} ${JSON.stringify(cmd)}`)
      switch (cmd._tag) {
        case "call":
        case "taskCall": {
          yield* startCall(cmd._tag === "call" ? "plain" : "task", cmd.timeout)
          break
        }
        case "stop": {
          const calls = running()
          const call = calls[cmd.pick % Math.max(1, calls.length)]
          if (call === undefined) break
          trace.push(`  stop ${call.marker}`)
          yield* Fiber.interrupt(fibers[call.n]!)
          model.stop(call)
          break
        }
        case "timeout": {
          const calls = running()
          const call = calls[cmd.pick % Math.max(1, calls.length)]
          let target = model.now + CALL_TIMEOUT
          if (call !== undefined) {
            if (call.wakeAt !== undefined) target = call.wakeAt
            else if (call.waitingOn !== undefined && model.openElicitations().length === 0) {
              target = call.waitingOn.deadline
            }
          }
          target = Math.max(model.now + 1, target + cmd.extra)
          trace.push(`  past ${call?.marker ?? "-"}: to ${target}`)
          yield* advanceTo(target)
          continue
        }
        case "advance": {
          yield* advanceTo(model.now + cmd.millis)
          continue
        }
        case "next": {
          // Whatever the engine has due next: a poll, a timeout, a user deadline.
          const next = model.nextEventTime()
          if (next !== Infinity) yield* advanceTo(next)
          continue
        }
        case "answer": {
          if (crashed || outstanding.length === 0) break
          // Mostly the newest requests (a task's latest poll), sometimes an old one (a late answer).
          const i = cmd.oldest
            ? cmd.pick % outstanding.length
            : outstanding.length - 1 - (cmd.pick % outstanding.length)
          const r = outstanding[i]!
          outstanding = outstanding.filter((_, j) => j !== i)
          trace.push(`  answer ${r.sig} (id ${JSON.stringify(r.id)})`)
          yield* answer(r, cmd.variant)
          break
        }
        case "status": {
          if (crashed) break
          const live = [...peerTasks.entries()].filter(([, t]) => !isTerminal(t.status))
          const chosen = live[cmd.pick % Math.max(1, live.length)]
          if (chosen === undefined) break
          const [taskId, t] = chosen
          t.status = cmd.to
          trace.push(`  ${taskId} -> ${cmd.to}${cmd.notify ? " (notified)" : ""}`)
          if (cmd.notify) {
            yield* peer.push(
              JsonRpc.notification("notifications/tasks/status", taskWire(taskId, t.status, t.pollInterval, t.ttl))
            )
            model.onStatusNotification(taskId)
          }
          break
        }
        case "elicit": {
          if (crashed) break
          const key = `e${model.elicitations.length}`
          elicitationOpened.set(key, model.now)
          yield* peer.push(
            JsonRpc.request(key, "elicitation/create", { mode: "form", message: key, requestedSchema: FORM })
          )
          model.openElicitation(key)
          break
        }
        case "elicitAnswer": {
          const open = model.openElicitations()
          const e = open[cmd.pick % Math.max(1, open.length)]
          if (e === undefined) break
          const ask = asks.get(e.key)
          if (ask === undefined) return failWith(`the handler was never asked ${e.key}`)
          const given: Elicitation.Response = cmd.action === "accept"
            ? { action: "accept", content: { name: "ada", n: 3 } }
            : cmd.action === "invalid"
            ? { action: "accept", content: { n: -1 } }
            : { action: cmd.action }
          trace.push(`  ${e.key} answered ${JSON.stringify(given)}`)
          yield* Deferred.succeed(ask, given)
          model.closeElicitation(
            e,
            cmd.action === "accept"
              ? { action: "accept", content: { name: "ada", n: 3 } }
              : { action: cmd.action === "invalid" ? "decline" : cmd.action },
            false
          )
          break
        }
        case "elicitExpire": {
          const open = model.openElicitations()
          const e = open[cmd.pick % Math.max(1, open.length)]
          if (e === undefined) break
          yield* advanceTo(Math.max(model.now + 1, e.deadline + cmd.extra))
          continue
        }
        case "elicitCancel": {
          // The server withdraws its request (notifications/cancelled names the server's own id).
          const open = model.openElicitations()
          const e = open[cmd.pick % Math.max(1, open.length)]
          if (e === undefined || crashed) break
          trace.push(`  the server cancels ${e.key}`)
          yield* peer.push(JsonRpc.notification("notifications/cancelled", { requestId: e.key, reason: "never mind" }))
          model.closeElicitation(e, undefined, false)
          break
        }
        case "crash": {
          if (crashed) break
          crashed = true
          outstanding = []
          yield* peer.fail(Memory.serverExited())
          model.crash()
          break
        }
      }
      yield* observe(cmd._tag)
      yield* respond
    }

    // --- the ending ---
    prompt = "none"
    const closedAt = { index: 0 }
    if (input.ending === "settle") {
      // A silent peer: everything must settle by itself (time outs, deadlines, user deadlines).
      trace.push(`settle t=${model.now}`)
      for (let i = 0; i < 200; i++) {
        const sleeps = Chunk.toReadonlyArray(yield* TestClock.sleeps())
        const next = Math.min(model.nextEventTime(), ...sleeps)
        if (next === Infinity) break
        yield* advanceTo(next)
      }
      const left = running()
      if (left.length > 0) failWith(`calls never settled: ${left.map((c) => c.marker).join(", ")}`)
      const sleeps = Chunk.toReadonlyArray(yield* TestClock.sleeps())
      if (sleeps.length > 0) failWith(`sleeps left after settling: ${JSON.stringify(sleeps)}`)
    }
    trace.push(`close t=${model.now}`)
    closedAt.index = stamped.length
    yield* Scope.close(scope, Exit.void)
    model.closeScope()
    yield* observe("scope closed")
    for (const [n, fiber] of fibers.entries()) {
      if (fiber.unsafePoll() === null) failWith(`call c${n} still runs after the scope closed`)
    }

    // Nothing is left behind: a day later no sleep was re-armed and nothing more was sent.
    yield* advanceTo(model.now + 24 * 3600 * 1000)
    const sleepsAfter = Chunk.toReadonlyArray(yield* TestClock.sleeps())
    if (sleepsAfter.length > 0) failWith(`sleeps left after the scope closed: ${JSON.stringify(sleepsAfter)}`)
    const afterClose = stamped.slice(closedAt.index)
    if (input.ending === "settle" && afterClose.length > 0) {
      failWith(`sent after everything settled: ${JSON.stringify(afterClose.map((s) => s.sig))}`)
    }
    // Later calls fail at once with the reason the connection ended, and send nothing.
    const sentBefore = peer.history().length
    const later = yield* Effect.exit(client.callTool("plain", { marker: "later" }))
    assert.deepStrictEqual(outcomeOf(later), fail(crashed ? "McpServerExited" : "McpConnectionClosed"))
    assert.strictEqual(peer.history().length, sentBefore, "a call after the end sends nothing")

    checkInvariants(model, stamped, received, settledAt, elicitationOpened, peerTasks.keys(), input, failWith)
    if (process.env.MODEL_STATS !== undefined) {
      const bump = (k: string) => stats.set(k, (stats.get(k) ?? 0) + 1)
      bump(`runs ${input.profile}`)
      for (const s of stamped) bump(s.sig.replace(/ c\d+| t\d+| "e\d+"|\[.*\]/g, "").slice(0, 40))
      for (const c of model.calls) {
        const o = c.outcome
        bump(`${c.kind} ${o?._tag} ${o?._tag === "fail" ? o.error : o?._tag === "ok" ? o.isError : ""}`)
      }
      for (const e of model.elicitations) {
        bump(`elicitation ${e.expired ? "expired" : e.closedAt === undefined ? "closed" : "answered"}`)
      }
      if (crashed) bump("crashed")
      for (const l of log.lines) bump(`log ${l.tag} ${l.text.replace(/[0-9]+/g, "N").slice(0, 50)}`)
    }
  })
const stats = new Map<string, number>()

/**
 * The invariants of the brief, stated on the full history (stamped with the TestClock time each
 * message was sent at) and the outcomes — independently of the step-by-step comparison.
 */
const checkInvariants = (
  model: Model,
  stamped: ReadonlyArray<Stamped>,
  received: ReadonlyMap<JsonRpc.RequestId, Received>,
  settledAt: ReadonlyMap<number, number>,
  elicitationOpened: ReadonlyMap<string, number>,
  peerTaskIds: Iterable<string>,
  input: Run,
  failWith: (what: string) => never
) => {
  const cancelled = stamped.filter((s) =>
    Memory.isNotification(s.message) && s.message.method === "notifications/cancelled"
  )
  const cancelsOf = (id: JsonRpc.RequestId | undefined) =>
    cancelled.filter((s) => paramsOf(s.message as JsonRpc.Notification).requestId === id)

  // notifications/cancelled only ever names a plain tools/call.
  for (const s of cancelled) {
    const id = paramsOf(s.message as JsonRpc.Notification).requestId
    const r = typeof id === "number" || typeof id === "string" ? received.get(id) : undefined
    if (r === undefined || r.method !== "tools/call" || r.kind !== "plain") {
      failWith(`notifications/cancelled for ${r?.sig ?? JSON.stringify(id)}: only plain tools/call are cancelled so`)
    }
  }

  for (const call of model.calls) {
    const outcome = call.outcome
    if (outcome === undefined) return failWith(`call ${call.marker} never settled`)
    // Every plain call interrupted or timed out: exactly one notifications/cancelled with its reason; others none.
    if (call.kind === "plain") {
      const reasons = cancelsOf(call.request?.id).map((s) => paramsOf(s.message as JsonRpc.Notification).reason)
      const want = outcome._tag === "interrupted"
        ? [McpClient.STOP_REASON]
        : outcome._tag === "fail" && outcome.error === "McpTimeout"
        ? [McpClient.TIMEOUT_REASON]
        : []
      if (JSON.stringify(reasons) !== JSON.stringify(want)) {
        failWith(`call ${call.marker} ended ${JSON.stringify(outcome)}: cancellations ${JSON.stringify(reasons)}`)
      }
    }
  }

  // Each abandoned non-terminal task: exactly one tasks/cancel when declared, else none.
  const taskCancels = (taskId: string) =>
    stamped.filter((s) =>
      Memory.isRequest(s.message) && s.message.method === "tasks/cancel" && paramsOf(s.message).taskId === taskId
    )
      .length
  // Every task the peer created or the client cancelled, whether or not the client ever saw its handle.
  const taskIds = new Set([
    ...peerTaskIds,
    ...stamped.flatMap((s) =>
      Memory.isRequest(s.message) && s.message.method === "tasks/cancel" ? [String(paramsOf(s.message).taskId)] : []
    )
  ])
  for (const taskId of taskIds) {
    const task = model.tasks.get(taskId)
    const want = input.cancel && task?.cancelDue === true ? 1 : 0
    if (taskCancels(taskId) !== want) failWith(`task ${taskId}: ${taskCancels(taskId)} tasks/cancel, want ${want}`)
  }

  // Every elicitation answered exactly once (cancel after the user deadline) unless the scope closed first.
  for (const e of model.elicitations) {
    const answers = stamped.filter((s) => Memory.isResponse(s.message) && s.message.id === e.key)
    if (e.closedAt === undefined || e.answer === undefined) {
      if (answers.length !== 0) failWith(`${e.key} was answered after its handler was interrupted`)
      continue
    }
    if (answers.length !== 1) failWith(`${e.key} was answered ${answers.length} times`)
    const a = answers[0]!
    if (JSON.stringify((a.message as JsonRpc.Success).result) !== JSON.stringify(e.answer)) {
      failWith(`${e.key} was answered ${JSON.stringify(a.message)}, want ${JSON.stringify(e.answer)}`)
    }
    const opened = elicitationOpened.get(e.key) ?? 0
    if (e.expired && (a.at < opened + USER_DEADLINE || e.answer?.action !== "cancel")) {
      failWith(`${e.key} expired but was answered ${JSON.stringify(e.answer)} at ${a.at} (opened at ${opened})`)
    }
  }

  // No request timed out while an elicitation was open, and timeouts restart in full afterwards.
  const intervals: Array<readonly [number, number]> = []
  {
    const edges = model.elicitations.flatMap((e) => {
      const opened = elicitationOpened.get(e.key) ?? 0
      const answer = stamped.find((s) => Memory.isResponse(s.message) && s.message.id === e.key)
      // Closed by its answer, or (no answer) when the server cancelled it.
      const closed = answer?.at ?? (e.answer === undefined ? e.closedAt : undefined) ?? Infinity
      return [[opened, +1], [closed, -1]] as const
    }).slice().sort((a, b) => a[0] - b[0] || b[1] - a[1])
    let depth = 0
    let start = 0
    for (const [at, d] of edges) {
      if (depth === 0 && d > 0) start = at
      depth += d
      if (depth === 0) intervals.push([start, at])
    }
    if (depth > 0) intervals.push([start, Infinity])
  }
  const openAt = (t: number) => intervals.some(([a, b]) => t > a && t <= b)
  for (const s of cancelled) {
    if (paramsOf(s.message as JsonRpc.Notification).reason === McpClient.TIMEOUT_REASON && openAt(s.at)) {
      failWith(`a timeout fired at ${s.at} while an elicitation was open`)
    }
  }
  for (const call of model.calls) {
    if (call.outcome?._tag !== "fail" || call.outcome.error !== "McpTimeout") continue
    const firedAt = settledAt.get(call.n)
    if (firedAt === undefined) continue
    if (openAt(firedAt)) failWith(`call ${call.marker} timed out at ${firedAt} while an elicitation was open`)
    // The request that timed out: the tools/call, or the task's last tasks/get.
    const request = stamped.filter((s) =>
      Memory.isRequest(s.message) && s.at <= firedAt &&
      (s.sig === sigCall(call.marker, call.kind) ||
        (call.task !== undefined && s.sig === `tasks/get ${call.task.taskId}`))
    ).at(-1)
    if (request === undefined) continue
    const timeout = request.sig.startsWith("tasks/get") ? CALL_TIMEOUT : call.timeoutMillis
    let from = request.at
    for (const [, b] of intervals) if (b >= request.at && b < firedAt) from = Math.max(from, b)
    if (firedAt !== from + timeout) {
      failWith(
        `call ${call.marker} timed out at ${firedAt}; sent at ${request.at}, timeout ${timeout}, restarted at ${from}`
      )
    }
  }
}

// --- the properties ---------------------------------------------------------------------------------

const RUNS = Number(process.env.MODEL_RUNS ?? 200)

describe("McpClient model", () => {
  afterAll(() => {
    if (process.env.MODEL_STATS !== undefined) console.log([...stats].sort().map(([k, v]) => `${v}\t${k}`).join("\n"))
  })
  it.effect.prop(
    "random call / stop / timeout / answer / task / elicitation / crash sequences behave as the model says",
    { run },
    ({ run }) => runSequence(run),
    // MODEL_RUNS=3000 for a longer search (15–20 runs a second here).
    { fastCheck: { numRuns: RUNS }, timeout: Math.max(60_000, RUNS * 100) }
  )

  const connectForTasks = Effect.gen(function*() {
    const log = makeLogCapture()
    const { client, peer } = yield* Memory.connect({
      peer: { capabilities: capabilities(true) },
      client: clientOptions
    })
      .pipe(Effect.provideService(McpLog.McpLogSink, log.sink))
    const listing = yield* Effect.fork(client.refreshTools)
    const list = yield* Memory.expectRequest(peer, "tools/list")
    yield* peer.push(JsonRpc.success(list.id, { tools: TOOLS }))
    yield* Fiber.join(listing)
    return { client, peer, log }
  })

  const sleepingUntil = (at: number) =>
    Effect.gen(function*() {
      for (let i = 0; !Chunk.toReadonlyArray(yield* TestClock.sleeps()).includes(at); i++) {
        if (i > 1000) return assert.fail(`nothing sleeps until ${at}`)
        yield* Effect.yieldNow()
      }
    })

  // A regression test: closing the connection wakes the pollers.
  it.effect("a task call sleeping between polls fails at once when the server crashes", () =>
    Effect.scoped(Effect.gen(function*() {
      const { client, peer } = yield* connectForTasks
      const call = yield* Effect.fork(client.callTool("long", { marker: "c0" }))
      const request = yield* Memory.expectRequest(peer, "tools/call")
      yield* peer.push(JsonRpc.success(request.id, { task: taskWire("t0", "working", 10_000, null) }))
      yield* sleepingUntil(10_000) // the poller sleeps its pollInterval
      yield* peer.fail(Memory.serverExited())
      for (let i = 0; i < 20; i++) yield* macrotask
      // McpServerExited now, like every pending request (not when the poller wakes at t=10 s).
      const exit = call.unsafePoll()
      assert.deepStrictEqual(exit === null ? "running" : outcomeOf(exit), fail("McpServerExited"))
    })))

  // A regression test: a timed-out task call waits for its handle too, as a stopped one does.
  it.effect("a task call that timed out before its handle came still cancels the task when the handle comes", () =>
    Effect.scoped(Effect.gen(function*() {
      const { client, log, peer } = yield* connectForTasks
      const call = yield* Effect.fork(client.callTool("long", { marker: "c0" }))
      const request = yield* Memory.expectRequest(peer, "tools/call")
      yield* sleepingUntil(CALL_TIMEOUT)
      yield* TestClock.adjust(CALL_TIMEOUT)
      const exit = yield* Fiber.await(call)
      assert.deepStrictEqual(outcomeOf(exit), fail("McpTimeout"))

      // The server had created the task; its handle arrives just after the timeout.
      yield* peer.push(JsonRpc.success(request.id, { task: taskWire("late", "working", 1_000, null) }))
      for (let i = 0; i < 20; i++) yield* macrotask
      const cancels = peer.history().filter((m) => Memory.isRequest(m) && m.method === "tasks/cancel")
      // One tasks/cancel {taskId: "late"}, as after a stop (not "dropped a response to unknown
      // request id 2" and the task left to its ttl).
      assert.deepStrictEqual(
        cancels.map((m) => paramsOf(m as JsonRpc.Request).taskId),
        ["late"],
        `log: ${JSON.stringify(log.lines.map((l) => l.text))}`
      )
    })))
})
