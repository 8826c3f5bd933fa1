/**
 * What the one-off host commands' handlers (`skald mcp …`, `secret …`, `events`) share: the layer
 * that opens the home's database, registry, status table and secret store (the `--home` option
 * itself is in Host.ts, which the command tree loads without any of this). `skald serve`'s layers
 * are composed in ../ServeLayer.ts, the serve process's composition root.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as HostServices from "../host/HostServices.js"
import { Paths } from "../host/Paths.js"
import { SecretStore } from "../host/SecretStore.js"
import * as Settings from "./Settings.js"

/** Paths and the secret store only (no database). */
export const secretsLayer = (homeFlag: Option.Option<string>) =>
  SecretStore.Default.pipe(Layer.provideMerge(Paths.Default(homeFlag)))

/** The home's database with its repositories, the secret store, server logs, events and registration. */
export const layer = (homeFlag: Option.Option<string>) => HostServices.layer(Paths.Default(homeFlag))

/** Runs a host command in its home. */
export const run = <A, E, R>(homeFlag: Option.Option<string>, effect: Effect.Effect<A, E, R>) =>
  Effect.provide(effect, layer(homeFlag))

/** The connect timeouts from the settings. */
export const connectOptions = Effect.map(Settings.Settings, (s) => ({
  startTimeout: s.startTimeout,
  callTimeout: s.callTimeout
}))
