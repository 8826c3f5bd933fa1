/**
 * The Host group's handlers: the version, and the settings a UI shows — whether the model is
 * configured (from the model settings; the key is never read out), where the host listens, and
 * whether clients need the access token.
 *
 * @since 0.1.0
 */
import { HostRpcs } from "@skald/domain"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { ModelSettings } from "../agent/llm/ModelSettings.js"

/** What the host is: its version and where it listens. */
export interface Info {
  readonly version: string
  readonly bindHost: string
  readonly port: number
  readonly tokenRequired: boolean
}

/** The host's facts the Host group reports. */
export class HostInfo extends Context.Tag("@skald/server/rpc/HostInfo")<HostInfo, Info>() {}

/** The handlers of `HostRpcs`. */
export const layer = HostRpcs.HostRpcs.toLayer(Effect.gen(function*() {
  const info = yield* HostInfo
  const settings = yield* ModelSettings
  const model = Effect.gen(function*() {
    const resolved = yield* Effect.either(settings.resolve)
    if (resolved._tag === "Right") {
      return HostRpcs.ModelStatus.make({
        configured: true,
        provider: resolved.right.provider,
        model: resolved.right.model,
        baseUrl: resolved.right.baseUrl
      })
    }
    return HostRpcs.ModelStatus.make({ configured: false, problem: resolved.left.message })
  })
  return HostRpcs.HostRpcs.of({
    "Host.Version": () => Effect.succeed({ version: info.version }),
    "Host.Settings": () =>
      Effect.map(model, (model) =>
        HostRpcs.HostSettings.make({
          model,
          bindHost: info.bindHost,
          port: info.port,
          tokenRequired: info.tokenRequired
        }))
  })
}))
