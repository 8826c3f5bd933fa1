/**
 * The composition root of `skald serve` (ServeLayer.ts), built in-process on a fresh home: the
 * endpoint listens first and is told to the caller, the first run registers the demo server once,
 * the manager runs with absolute media links; a taken port fails before anything is registered.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpManager, McpServerRepo } from "@skald/server"
import { hintFor } from "@skald/server/cli/CliError"
import * as ServeLayer from "@skald/server/ServeLayer"
import { Context, Duration, Effect, Exit, Layer, Option, Scope } from "effect"
import * as Net from "node:net"
import { makeHome } from "./host-support.js"

const options = (home: string, port: number, said: Array<string>): ServeLayer.Options => ({
  home: Option.some(home),
  host: "127.0.0.1",
  port,
  startTimeout: Duration.seconds(20),
  callTimeout: Duration.seconds(20),
  onListening: (url) => Effect.sync(() => void said.push(`listening ${url}`)),
  onFirstRun: (name) => Effect.sync(() => void said.push(`first run ${name}`))
})

describe("ServeLayer", () => {
  it.scopedLive("listens, then registers the demo once and runs the manager; a second start registers nothing", () =>
    Effect.gen(function*() {
      const home = makeHome()
      const said: Array<string> = []
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(ServeLayer.layer(options(home, 0, said)), scope)
      assert.strictEqual(said.length, 2, said.join("; "))
      assert.match(said[0]!, /^listening http:\/\/127\.0\.0\.1:\d+$/)
      assert.strictEqual(said[1], "first run demo")
      const names = (yield* Context.get(context, McpServerRepo.McpServerRepo).list).map((e) => e.name as string)
      assert.deepStrictEqual(names, ["demo"])
      assert.isTrue(Context.getOption(context, McpManager.McpManager)._tag === "Some")
      yield* Scope.close(scope, Exit.void)

      const again: Array<string> = []
      const second = yield* Scope.make()
      yield* Layer.buildWithScope(ServeLayer.layer(options(home, 0, again)), second)
      assert.strictEqual(again.length, 1, again.join("; "))
      yield* Scope.close(second, Exit.void)
    }))

  it.scopedLive("a taken port fails with ListenFailed naming the address, before the first run (the CLI adds the settings)", () =>
    Effect.gen(function*() {
      const blocker = Net.createServer()
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void blocker.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.sync(() => void blocker.close())
      )
      const port = (blocker.address() as Net.AddressInfo).port
      const said: Array<string> = []
      const home = makeHome()
      // HostServices.layer's error channel is `unknown` (the database's open errors are not typed there).
      const failed = (yield* Effect.flip(Layer.build(ServeLayer.layer(options(home, port, said))))) as {
        readonly _tag: string
        readonly message: string
      }
      assert.strictEqual(failed._tag, "ListenFailed")
      assert.include(failed.message, `127.0.0.1:${port}`)
      assert.notInclude(failed.message, "SKALD_PORT")
      assert.include(hintFor(failed), "SKALD_PORT")
      assert.deepStrictEqual(said, [])
    }))
})
