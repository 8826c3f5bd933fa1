/**
 * What `skald tic run` does (its options and help are in TicCommands.ts; this module is loaded
 * when it runs, see Lazy.ts): one tick through the running host's `Tic.Run` when a `skald serve`
 * runs for the home, else a TIC in this process (the home's database, a guest manager, the model
 * from the settings; calls that would ask a person are refused: nobody is asked on a tick; with
 * nothing pending, nothing is started). Prints the report.
 *
 * @since 0.1.0
 */
import { TicRpcs } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as EventRepo from "../host/EventRepo.js"
import * as McpManager from "../host/McpManager.js"
import * as Tic from "../tic/Tic.js"
import { agentLayer } from "./AgentHandlers.js"
import * as AgentViaHost from "./AgentViaHost.js"
import { ExitStatus, ExitWith } from "./CliError.js"
import * as Host from "./HostRuntime.js"
import { stderr, stdout } from "./Io.js"
import * as Output from "./Output.js"
import * as RpcHost from "./RpcHost.js"
import type { RunArgs } from "./TicCommands.js"

const encode = Schema.encodeSync(TicRpcs.TicReport)

/** A tick in this process: none pending, nothing starts (no model needed); else the servers first, then the tick. */
const inProcess = (home: Option.Option<string>) =>
  Effect.gen(function*() {
    const pending = yield* Effect.flatMap(EventRepo.EventRepo, (repo) => repo.pendingCount).pipe(
      Effect.provide(Host.layer(home))
    )
    if (pending === 0) {
      return TicRpcs.TicReport.make({ outcome: "idle", claimed: [], processed: [], notified: [], pending: 0 })
    }
    return yield* Effect.gen(function*() {
      yield* (yield* McpManager.McpManager).started
      return yield* (yield* Tic.Tic).tick
    }).pipe(
      Effect.provide(
        Tic.Tic.Default({ interval: 0 }).pipe(
          Layer.provide(Tic.agentLayer),
          Layer.provideMerge(agentLayer(home, "deny"))
        )
      )
    )
  })

const ids = (list: ReadonlyArray<number>): string => list.length === 0 ? "none" : list.join(", ")

/** The report as text. */
export const text = (report: TicRpcs.TicReport): string => {
  if (report.outcome === "idle") {
    return report.pending === 0
      ? "nothing to process: no pending events"
      : `nothing to process: the ${report.pending} pending events are held by another turn`
  }
  const lines = [
    report.outcome === "done"
      ? `processed ${report.processed.length} events: ${ids(report.processed)}`
      : `processed nothing: the turn did not complete (${report.problem ?? "no reason given"}); ` +
        `events ${ids(report.claimed)} stay pending`,
    `session ${report.sessionId ?? "none"}; ${report.pending} events pending`
  ]
  if (report.notified.length === 0) lines.push("notified: nothing")
  for (const n of report.notified) {
    lines.push(`notified: ${n.title}${n.id === undefined ? "" : ` (${n.id})`}`)
    for (const line of n.body.split("\n")) lines.push(`  ${line}`)
  }
  return lines.join("\n")
}

/** `skald tic run`. */
export const run = ({ home, json }: RunArgs) =>
  Effect.gen(function*() {
    const url = yield* AgentViaHost.find(home)
    const report = Option.isSome(url)
      ? yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* RpcHost.connectTo(url.value, yield* RpcHost.tokenOf(Option.none()))
        return yield* client.Tic.Run().pipe(RpcHost.reaching(url.value))
      }))
      : yield* inProcess(home)
    yield* stdout(json ? Output.json(encode(report)) : text(report))
    if (report.outcome === "failed") {
      yield* stderr(`skald: the tic turn did not complete: ${report.problem ?? "no reason given"}`)
      return yield* new ExitWith({ status: ExitStatus.Failure })
    }
  })
