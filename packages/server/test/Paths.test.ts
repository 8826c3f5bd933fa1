/**
 * The host's paths (host/Paths.ts): `Paths.Default` reads `--home`, `SKALD_HOME` and the
 * `SKALD_*_DIR` overrides; `Paths.Test(home)` gives that home's paths whatever the environment says.
 */
import { assert, describe, it } from "@effect/vitest"
import { Paths } from "@skald/server"
import { ConfigProvider, Effect, Layer, Option } from "effect"

const environment = ConfigProvider.fromMap(
  new Map([["SKALD_HOME", "/srv/env-home"], ["SKALD_DATA_DIR", "/srv/data"], ["SKALD_SECRETS_DIR", "/srv/secrets"]])
)
const withEnvironment = Layer.setConfigProvider(environment)

describe("Paths", () => {
  it.effect("Default: SKALD_HOME and the per-folder overrides", () =>
    Effect.gen(function*() {
      const paths = yield* Paths.Paths
      assert.strictEqual(paths.home, "/srv/env-home")
      assert.strictEqual(paths.database, "/srv/data/skald.db")
      assert.strictEqual(paths.mediaDir, "/srv/data/mcp_media")
      assert.strictEqual(paths.mcpLogsDir, "/srv/env-home/logs/mcp")
      assert.strictEqual(paths.secretsDir, "/srv/secrets")
    }).pipe(Effect.provide(Paths.Paths.Default().pipe(Layer.provide(withEnvironment)))))

  it.effect("Default: --home wins over SKALD_HOME, the overrides still apply", () =>
    Effect.gen(function*() {
      const paths = yield* Paths.Paths
      assert.strictEqual(paths.home, "/srv/flag-home")
      assert.strictEqual(paths.database, "/srv/data/skald.db")
    }).pipe(Effect.provide(Paths.Paths.Default(Option.some("/srv/flag-home")).pipe(Layer.provide(withEnvironment)))))

  it.effect("Test: the paths of that home alone, whatever the environment", () =>
    Effect.gen(function*() {
      const paths = yield* Paths.Paths
      assert.deepStrictEqual({ ...paths }, { ...Paths.make({ home: "/srv/test-home" }) })
      assert.strictEqual(paths.database, "/srv/test-home/data/skald.db")
      assert.strictEqual(paths.secretsDir, "/srv/test-home/secrets")
    }).pipe(Effect.provide(Paths.Paths.Test("/srv/test-home").pipe(Layer.provide(withEnvironment)))))
})
