/**
 * What the host commands share: the `--home` option and the layer that opens the home's
 * database, registry, status table and secret store.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Database from "../host/Database.js"
import * as McpServerRepo from "../host/McpServerRepo.js"
import { Paths } from "../host/Paths.js"
import { SecretStore } from "../host/SecretStore.js"
import * as StatusRepo from "../host/StatusRepo.js"
import * as Settings from "./Settings.js"
import { keepAliveHttpClient } from "./Target.js"

/** `--home DIR`: the folder holding data/, logs/ and secrets/ (default SKALD_HOME, else `.`). */
export const home = Options.text("home").pipe(
  Options.withDescription("The Skald home: data/, logs/ and secrets/ live here (default $SKALD_HOME, else .)."),
  Options.optional
)

/** Paths and the secret store only (no database). */
export const secretsLayer = (homeFlag: Option.Option<string>) =>
  SecretStore.Default.pipe(Layer.provideMerge(Paths.layer(homeFlag)))

/** The home's database with its repositories, the secret store, and an HTTP client. */
export const layer = (homeFlag: Option.Option<string>) => {
  const paths = Paths.layer(homeFlag)
  const database = Database.layer.pipe(Layer.provide(paths))
  const repos = Layer.mergeAll(McpServerRepo.layer, StatusRepo.layer).pipe(Layer.provideMerge(database))
  return Layer.mergeAll(repos, SecretStore.Default, keepAliveHttpClient).pipe(Layer.provideMerge(paths))
}

/** Runs a host command in its home. */
export const run = <A, E, R>(homeFlag: Option.Option<string>, effect: Effect.Effect<A, E, R>) =>
  Effect.provide(effect, layer(homeFlag))

/** The connect timeouts from the settings. */
export const connectOptions = Effect.map(Settings.Settings, (s) => ({
  startTimeout: s.startTimeout,
  callTimeout: s.callTimeout
}))
