/**
 * The one choice every command with two paths makes (docs/rpc.md *The CLI as a client*): when a
 * `skald serve` runs for the home (its address recorded in `data/host.json`), the command goes
 * through that host's RPC; when none runs, it works in this process. `--verbose` says which path
 * was taken (the agent's commands always say when they go through a host).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Paths } from "../host/Paths.js"
import { stderr } from "./Io.js"
import * as RpcHost from "./RpcHost.js"

/** The running host of the home: its URL, its pid, a client of every group. */
export interface Host {
  readonly url: string
  readonly pid: number
  readonly client: RpcHost.Client
}

/** The running host's address for the home, if one runs. */
export const find = (home: Option.Option<string>) =>
  RpcHost.find.pipe(Effect.provide(Paths.Default(home).pipe(Layer.orDie)))

/** What is said on stderr about the path taken. */
export const viaHostLine = (url: string): string => `skald: via the host at ${url}`
export const inProcessLine = "skald: in this process (no `skald serve` runs for this home)"

/**
 * The path for this command: the running host of the home (connected for the current scope, with
 * the access token of `SKALD_TOKEN`), or none (in this process). With `verbose` (or `announceHost`
 * for a host) it says on stderr which.
 */
export const choose = (
  home: Option.Option<string>,
  options: { readonly verbose: boolean; readonly announceHost?: boolean }
) =>
  Effect.gen(function*() {
    const address = yield* find(home)
    if (Option.isNone(address)) {
      if (options.verbose) yield* stderr(inProcessLine)
      return Option.none<Host>()
    }
    const { pid, url } = address.value
    const client = yield* RpcHost.connectTo(url, yield* RpcHost.tokenOf(Option.none()))
    if (options.verbose || options.announceHost === true) yield* stderr(viaHostLine(url))
    return Option.some<Host>({ url, pid, client })
  })
