/**
 * What `skald model set|show` do (their options and help are in ModelCommands.ts; this module is
 * loaded when one of them runs, see Lazy.ts). Thin over ModelSettings.ts.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { ModelSettings } from "../agent/llm/ModelSettings.js"
import * as ModelSettingsModule from "../agent/llm/ModelSettings.js"
import * as SecretNames from "../host/SecretNames.js"
import { UsageError } from "./CliError.js"
import * as Elicit from "./Elicit.js"
import * as Host from "./HostRuntime.js"
import { readStdin, reportFailures, stderr, stdout } from "./Io.js"
import type { SetArgs, ShowArgs } from "./ModelCommands.js"
import * as Output from "./Output.js"

const layer = (home: SetArgs["home"]) => ModelSettings.Default.pipe(Layer.provideMerge(Host.layer(home)))

/** The key from stdin (one trailing newline stripped), or a masked prompt on a terminal. */
const readKey = process.stdin.isTTY === true
  ? Effect.map(Elicit.readLine("API key (input hidden): ", true), (line) => line ?? "")
  : Effect.map(readStdin("api-key-stdin"), (text) => text.replace(/\r?\n$/, ""))

/** The flag of each field, for messages. */
const flags: Record<ModelSettingsModule.Field, string> = {
  provider: "--provider",
  baseUrl: "--base-url",
  model: "--model",
  apiKey: "--api-key"
}

/** `skald model set`. */
export const set = (args: SetArgs) =>
  Effect.gen(function*() {
    if (Option.isSome(args.apiKey) && args.apiKeyStdin) {
      return yield* new UsageError({ message: "give the API key with --api-key or --api-key-stdin, not both" })
    }
    const apiKey = args.apiKeyStdin ? Option.some(yield* readKey) : args.apiKey
    if (!args.apiKeyStdin && Option.isSome(apiKey) && !SecretNames.isReference(apiKey.value)) {
      yield* stderr("skald: warning: a key on the command line is visible to other users; prefer --api-key-stdin")
    }
    if (Option.isSome(apiKey) && apiKey.value.length === 0) {
      return yield* new UsageError({
        message: "empty API key: pipe it on stdin, e.g. `skald model set --api-key-stdin < file`"
      })
    }
    const changes = {
      provider: Option.getOrUndefined(args.provider),
      baseUrl: Option.getOrUndefined(args.baseUrl),
      model: Option.getOrUndefined(args.model),
      apiKey: Option.getOrUndefined(Option.map(apiKey, Redacted.make))
    }
    if (Object.values(changes).every((v) => v === undefined)) {
      return yield* new UsageError({
        message: `nothing to set: give at least one of ${Object.values(flags).join(", ")} or --api-key-stdin`
      })
    }
    const result = yield* (yield* ModelSettings).set(changes).pipe(
      // A bad value is the command line's fault: exit 2 with the setting's own words, and the flag.
      Effect.catchTag("InvalidModelSetting", (e) => {
        const field = (Object.keys(ModelSettingsModule.fields) as Array<ModelSettingsModule.Field>).find((f) =>
          ModelSettingsModule.fields[f].env === e.variable
        )
        return new UsageError({ message: `${field === undefined ? "" : `${flags[field]}: `}${e.message}` })
      })
    )
    if (result.movedKeyTo !== undefined) {
      yield* stderr(
        `skald: stored the API key in the secret store as ${result.movedKeyTo} (settings keep \${${result.movedKeyTo}})`
      )
    }
    for (const variable of result.overriddenByEnv) {
      yield* stderr(`skald: warning: ${variable} is set in the environment and wins over the value just stored`)
    }
    yield* stderr("skald: model settings saved")
  }).pipe(Effect.provide(layer(args.home)), reportFailures)

const names: Record<ModelSettingsModule.Field, string> = {
  provider: "provider",
  baseUrl: "base-url",
  model: "model",
  apiKey: "api-key"
}

/** `skald model show`. */
export const show = (args: ShowArgs) =>
  Effect.gen(function*() {
    const shown = yield* (yield* ModelSettings).show
    if (args.json) return yield* stdout(Output.json(shown))
    const rows = (Object.keys(names) as Array<ModelSettingsModule.Field>).map((field) => {
      const { source, value } = shown[field]
      const where = source === "env" ? `env ${ModelSettingsModule.fields[field].env}` : source
      return [names[field], value ?? "-", `(${where})`] as const
    })
    const width = Math.max(...rows.map(([name]) => name.length))
    const valueWidth = Math.max(...rows.map(([, value]) => value.length))
    yield* stdout(
      rows.map(([name, value, where]) => `${name.padEnd(width)}  ${value.padEnd(valueWidth)}  ${where}`).join("\n")
    )
  }).pipe(Effect.provide(layer(args.home)), reportFailures)
