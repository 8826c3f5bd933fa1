/**
 * The agent bench's model script (bench/agent.ts), shared by the bench and the stand-in's worker
 * thread (bench/agent-standin.ts): what the stand-in answers to each request.
 */
import * as ModelStandin from "../test/fixtures/model-standin.js"

/** The bench's settings (the `BENCH_AGENT_*` variables). */
export interface Settings {
  readonly turns: number
  readonly warmup: number
  readonly rounds: number
  readonly eventDelay: number
}

/** Marks the first-token scenario's requests (in the user message). */
export const FIRST_TOKEN = "first-token"
/** In a text answer (ModelStandin.textEvents), event 0 is the role chunk, event 1 the first content delta. */
export const FIRST_CONTENT_EVENT = 1

/** The stand-in's script: a function of the request (many turns share one stand-in). */
export const script = (s: Settings) => (request: ModelStandin.RecordedRequest): ModelStandin.Reply => {
  const messages: ReadonlyArray<{ role: string; content?: unknown }> = request.body?.messages ?? []
  const user = messages.filter((m) => m.role === "user").at(-1)
  if (typeof user?.content === "string" && user.content.includes(FIRST_TOKEN)) {
    return { events: ModelStandin.textEvents(["Hel", "lo", " there."]), eventDelay: Math.max(2, s.eventDelay) }
  }
  const toolResults = messages.filter((m) => m.role === "tool").length
  const delay = s.eventDelay > 0 ? { eventDelay: s.eventDelay } : {}
  if (toolResults >= s.rounds - 1) return { events: ModelStandin.textEvents(["All ", "done."]), ...delay }
  // The echo tool under whatever name the loop gives it (mcp__echo__echo today).
  const names: ReadonlyArray<string> = (request.body?.tools ?? []).map((t: any) => t.function?.name)
  const echo = names.find((n) => /(^|_)echo$/.test(n)) ?? "mcp__echo__echo"
  return {
    events: ModelStandin.toolCallEvents([{
      id: `call_${request.index}`,
      name: echo,
      arguments: { message: `round ${toolResults + 1}` }
    }]),
    ...delay
  }
}

/** A request as the bench reads it: its body's text and its times (`performance.now()` of the reader's thread). */
export interface Seen {
  readonly index: number
  readonly text: string
  readonly timing: {
    readonly arrived: number
    readonly eventsAt: ReadonlyArray<number>
    readonly lastByteAt?: number | undefined
  }
}

/** What the bench asks of the stand-in's thread, and what it answers. */
export type Ask = { readonly id: number; readonly from: number; readonly complete: number }
export type Answer =
  | { readonly type: "ready"; readonly url: string }
  | { readonly type: "requests"; readonly id: number; readonly total: number; readonly requests: ReadonlyArray<Seen> }

/**
 * Milliseconds on one clock for every thread of the process: `process.hrtime` (monotonic, the
 * same in each thread) since `base`, as a function of the thread's own `performance.now()`.
 */
export const clockOf = (base: bigint) => {
  const offset = Number(process.hrtime.bigint() - base) / 1e6 - performance.now()
  return { toShared: (now: number) => now + offset, fromShared: (shared: number) => shared - offset }
}
