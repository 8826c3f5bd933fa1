/**
 * `skald mcp import FILE` as a host operation: reads another host's MCP config file (Claude
 * Desktop, .mcp.json, Cursor, VS Code), maps it (ConfigImport.ts: the rules) against what is
 * registered and stored now, and registers what it can (Registration.ts: literal secrets moved
 * into the store). Names already registered are skipped, never replaced.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as ConfigImport from "./ConfigImport.js"
import { McpServerRepo } from "./McpServerRepo.js"
import { Registration } from "./Registration.js"
import { SecretStore } from "./SecretStore.js"

/** The file cannot be imported at all: unreadable, not JSON, or not an MCP config. */
export class ConfigFileInvalid extends Schema.TaggedError<ConfigFileInvalid>("@skald/server/ConfigFileInvalid")(
  "ConfigFileInvalid",
  { file: Schema.String, message: Schema.String }
) {}

/** Where the import runs: what `${userHome}` is and which variables the environment sets. */
export interface Environment {
  readonly userHome: string
  readonly variables: Readonly<Record<string, string | undefined>>
}

/** Imports the file; each source entry's outcome in file order (the imported ones are registered). */
export const importFile = Effect.fn("ConfigImportFile.importFile")(
  function*(file: string, environment: Environment) {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const text = yield* fs.readFileString(file).pipe(
      Effect.mapError((e) => new ConfigFileInvalid({ file, message: `cannot read ${file}: ${e.message}` }))
    )
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (e) => new ConfigFileInvalid({ file, message: `${file} is not valid JSON: ${(e as Error).message}` })
    })
    const registration = yield* Registration
    const existing = new Set((yield* (yield* McpServerRepo).list).map((e) => e.name as string))
    const stored = new Set(yield* (yield* SecretStore).list)
    const context: ConfigImport.Context = {
      file: path.resolve(file),
      userHome: environment.userHome,
      isSet: (variable) => stored.has(variable) || environment.variables[variable] !== undefined
    }
    const outcomes = yield* Either.match(ConfigImport.fromJson(json, existing, context), {
      onLeft: (message) => Effect.fail(new ConfigFileInvalid({ file, message: `${file}: ${message}` })),
      onRight: Effect.succeed
    })
    for (const outcome of outcomes) {
      if (outcome._tag === "Imported") {
        yield* registration.apply({ entry: outcome.entry, secrets: outcome.secrets }, false)
      }
    }
    return outcomes
  }
)
