/**
 * `skald secret set|list|rm`: the secret store. Values are read from stdin (one trailing newline
 * stripped) or a masked prompt on a terminal — never from argv, which other users can see.
 *
 * @since 0.1.0
 */
import { Args, Command } from "@effect/cli"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { SecretStore } from "../host/SecretStore.js"
import * as SecretStoreModule from "../host/SecretStore.js"
import * as ServerList from "../host/ServerList.js"
import { UsageError } from "./CliError.js"
import * as Elicit from "./Elicit.js"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import { reportFailures, stderr, stdout } from "./Io.js"

const secretName = Args.text({ name: "NAME" }).pipe(Args.withDescription("The secret's name, as referenced by ${NAME}."))

/** Warns on stderr about every part of the secrets folder that other users can access. */
const warnExposed = Effect.gen(function*() {
  for (const e of yield* (yield* SecretStore).exposed) yield* stderr(`skald: warning: ${SecretStoreModule.exposedWarning(e)}`)
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

const set = Command.make("set", { name: secretName, home: Host.home }, ({ home, name }) =>
  Effect.gen(function*() {
    if (!SecretStoreModule.isValidName(name)) {
      return yield* new UsageError({ message: `invalid secret name ${JSON.stringify(name)}: use letters, digits and '_', not starting with a digit` })
    }
    const value = yield* readValue(name)
    if (value.length === 0) return yield* new UsageError({ message: "empty value: pipe the secret on stdin, e.g. `skald secret set NAME < file`" })
    yield* (yield* SecretStore).set(name, Redacted.make(value))
    yield* stderr(`skald: stored ${name}`)
    // A running host retries at once the failed servers that refer to ${name}.
    yield* ServerList.notifySecretChanged(name).pipe(
      Effect.catchAll((error) =>
        stderr(`skald: warning: could not tell the running host that ${name} changed: ${error instanceof Error ? error.message : String(error)}`)
      )
    )
    yield* warnExposed
  }).pipe(Effect.provide(Host.secretsLayer(home)), reportFailures)).pipe(
    Command.withDescription(Help.about({
      summary: "Store a secret, read from stdin (one trailing newline stripped) or a masked prompt; never from argv.",
      usage: ["skald secret set [options] NAME"],
      examples: ["skald secret set WEATHER_TOKEN", "printf %s \"$TOKEN\" | skald secret set WEATHER_TOKEN"]
    }))
  )

const list = Command.make("list", { home: Host.home }, ({ home }) =>
  Effect.gen(function*() {
    const names = yield* (yield* SecretStore).list
    if (names.length > 0) yield* stdout(names.join("\n"))
    yield* warnExposed
  }).pipe(Effect.provide(Host.secretsLayer(home)), reportFailures)).pipe(
    Command.withDescription(Help.about({
      summary: "List the stored secrets' names (never their values).",
      usage: ["skald secret list [options]"],
      examples: ["skald secret list"]
    }))
  )

const rm = Command.make("rm", { name: secretName, home: Host.home }, ({ home, name }) =>
  Effect.gen(function*() {
    if (!(yield* (yield* SecretStore).remove(name))) return yield* new UsageError({ message: `no secret named ${name}` })
    yield* stderr(`skald: removed ${name}`)
  }).pipe(Effect.provide(Host.secretsLayer(home)), reportFailures)).pipe(Command.withDescription(Help.about({
    summary: "Delete a stored secret.",
    usage: ["skald secret rm [options] NAME"],
    examples: ["skald secret rm WEATHER_TOKEN"]
  })))

/** `skald secret …`. */
export const command = Command.make("secret").pipe(
  Command.withDescription(Help.about({
    summary: "Manage the secret store (secrets/vars/<NAME>, mode 0600).",
    usage: ["skald secret COMMAND [options]"],
    examples: ["skald secret set WEATHER_TOKEN", "skald secret list"]
  })),
  Command.withSubcommands([set, list, rm])
)
