/**
 * What `skald secret set|list|rm` do (their options and help are in SecretCommands.ts; this module
 * is loaded when one of them runs, see Lazy.ts).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as SecretNames from "../host/SecretNames.js"
import { SecretStore } from "../host/SecretStore.js"
import * as SecretStoreModule from "../host/SecretStore.js"
import * as ServerList from "../host/ServerList.js"
import { UsageError } from "./CliError.js"
import * as Elicit from "./Elicit.js"
import * as Host from "./HostRuntime.js"
import { stderr, stdout } from "./Io.js"
import type { ListArgs, RmArgs, SetArgs } from "./SecretCommands.js"

/** Warns on stderr about every part of the secrets folder that other users can access. */
const warnExposed = Effect.gen(function*() {
  for (const e of yield* (yield* SecretStore).exposed) {
    yield* stderr(`skald: warning: ${SecretStoreModule.exposedWarning(e)}`)
  }
})

const readStdin = Effect.async<string>((resume) => {
  const chunks: Array<Buffer> = []
  process.stdin.on("data", (chunk: Buffer) => chunks.push(chunk))
  process.stdin.once("end", () => resume(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
  process.stdin.resume()
})

const readValue = (name: string) =>
  process.stdin.isTTY === true
    ? Effect.map(Elicit.readLine(`${name} (input hidden): `, true), (line) => line ?? "")
    : Effect.map(readStdin, (text) => text.replace(/\r?\n$/, ""))

/** `skald secret set`. */
export const set = ({ home, name }: SetArgs) =>
  Effect.gen(function*() {
    if (!SecretNames.isValidName(name)) {
      return yield* new UsageError({
        message: `invalid secret name ${JSON.stringify(name)}: use letters, digits and '_', not starting with a digit`
      })
    }
    const value = yield* readValue(name)
    if (value.length === 0) {
      return yield* new UsageError({
        message: "empty value: pipe the secret on stdin, e.g. `skald secret set NAME < file`"
      })
    }
    yield* (yield* SecretStore).set(name, Redacted.make(value))
    yield* stderr(`skald: stored ${name}`)
    // A running host retries at once the failed servers that refer to ${name}.
    yield* ServerList.notifySecretChanged(name).pipe(
      Effect.catchAll((error) =>
        stderr(
          `skald: warning: could not tell the running host that ${name} changed: ${
            error instanceof Error ? error.message : String(error)
          }`
        )
      )
    )
    yield* warnExposed
  }).pipe(Effect.provide(Host.secretsLayer(home)))

/** `skald secret list`. */
export const list = ({ home }: ListArgs) =>
  Effect.gen(function*() {
    const names = yield* (yield* SecretStore).list
    if (names.length > 0) yield* stdout(names.join("\n"))
    yield* warnExposed
  }).pipe(Effect.provide(Host.secretsLayer(home)))

/** `skald secret rm`. */
export const rm = ({ home, name }: RmArgs) =>
  Effect.gen(function*() {
    if (!(yield* (yield* SecretStore).remove(name))) {
      return yield* new UsageError({ message: `no secret named ${name}` })
    }
    yield* stderr(`skald: removed ${name}`)
  }).pipe(Effect.provide(Host.secretsLayer(home)))
