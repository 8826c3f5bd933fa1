/**
 * The host over RPC: its version, and the settings a UI shows (whether a model is configured,
 * where the host listens, whether clients need a token). Never a secret value.
 *
 * @since 0.1.0
 */
import * as Rpc from "@effect/rpc/Rpc"
import * as RpcGroup from "@effect/rpc/RpcGroup"
import * as Schema from "effect/Schema"

/** The model as the host sees it: configured or not, and what to do when not. */
export class ModelStatus extends Schema.Class<ModelStatus>("@skald/domain/rpc/ModelStatus")({
  configured: Schema.Boolean,
  provider: Schema.optionalWith(Schema.String, { exact: true }),
  model: Schema.optionalWith(Schema.String, { exact: true }),
  baseUrl: Schema.optionalWith(Schema.String, { exact: true }),
  /** Why no model is usable, when `configured` is false. */
  problem: Schema.optionalWith(Schema.String, { exact: true })
}) {}

/** The settings a UI shows. */
export class HostSettings extends Schema.Class<HostSettings>("@skald/domain/rpc/HostSettings")({
  model: ModelStatus,
  /** The address the host listens on, e.g. `127.0.0.1`. */
  bindHost: Schema.String,
  port: Schema.Number,
  /** Clients present the access token (docs/rpc.md). */
  tokenRequired: Schema.Boolean
}) {}

/** The host's version. */
export const Version = Rpc.make("Host.Version", {
  success: Schema.Struct({ version: Schema.String })
})

/** The settings a UI shows. */
export const Settings = Rpc.make("Host.Settings", {
  success: HostSettings
})

/** The host's RPCs. */
export class HostRpcs extends RpcGroup.make(Version, Settings) {}
