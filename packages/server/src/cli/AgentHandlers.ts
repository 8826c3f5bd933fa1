/**
 * What `skald sessions list|show|rm` do (their options and help are in AgentCommands.ts; this
 * module is loaded when one of them runs, see Lazy.ts). They read the home's database in-process.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ChatStore } from "../agent/ChatStore.js"
import type * as AgentCommands from "./AgentCommands.js"
import { UsageError } from "./CliError.js"
import * as Host from "./HostRuntime.js"
import { reportFailures, stderr, stdout } from "./Io.js"
import * as Output from "./Output.js"

const storeLayer = (home: Option.Option<string>) => ChatStore.Default.pipe(Layer.provide(Host.layer(home)))

/** How much of a result `show` prints in text. */
const PREVIEW = 200

const oneLine = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= max ? flat : `${flat.slice(0, max)}…`
}

const noSession = (id: string) =>
  new UsageError({ message: `no chat session has the id ${id}; see \`skald sessions list\`` })

/** `skald sessions list`. */
export const list = ({ home, json }: AgentCommands.ListArgs) =>
  Effect.gen(function*() {
    const sessions = yield* (yield* ChatStore).listSessions
    if (json) return yield* stdout(Output.json(sessions))
    if (sessions.length === 0) return
    yield* stdout(
      sessions.map((s) => [s.id, s.agent, s.updatedAt, ...(s.title === undefined ? [] : [s.title])].join("  "))
        .join("\n")
    )
  }).pipe(Effect.provide(storeLayer(home)), reportFailures)

/** `skald sessions show`. */
export const show = ({ home, id, json }: AgentCommands.ShowArgs) =>
  Effect.gen(function*() {
    const store = yield* ChatStore
    const found = yield* store.getSession(id)
    if (Option.isNone(found)) return yield* noSession(id)
    const messages = yield* store.history(id)
    if (json) {
      return yield* stdout(Output.json({
        session: found.value,
        messages: messages.map((m) => ({
          seq: m.seq,
          role: m.role,
          text: m.text,
          createdAt: m.createdAt,
          calls: m.calls
        }))
      }))
    }
    const session = found.value
    const lines = [`session ${session.id} (agent ${session.agent}, started ${session.createdAt})`]
    for (const m of messages) {
      lines.push("")
      lines.push(`${m.role}:${m.text.length === 0 ? "" : ` ${m.text}`}`)
      for (const c of m.calls) {
        lines.push(`  tool ${c.name} ${JSON.stringify(c.arguments)} → ${c.status}`)
        if (c.result !== undefined) lines.push(`    ${oneLine(c.result, PREVIEW)}`)
      }
    }
    yield* stdout(lines.join("\n"))
  }).pipe(Effect.provide(storeLayer(home)), reportFailures)

/** `skald sessions rm`. */
export const rm = ({ home, id }: AgentCommands.RmArgs) =>
  Effect.gen(function*() {
    if (!(yield* (yield* ChatStore).removeSession(id))) return yield* noSession(id)
    yield* stderr(`skald: removed session ${id}`)
  }).pipe(Effect.provide(storeLayer(home)), reportFailures)
