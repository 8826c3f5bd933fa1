/**
 * The first run of a home (host/FirstRun.ts) on its markers' repository (host/AppMetaRepo.ts), over
 * a real SQLite file: the demo server is registered once per database, never again after it was
 * removed, and a marker commits together with what it marks, or not at all.
 */
import { assert, describe, it } from "@effect/vitest"
import { ServerName } from "@skald/domain"
import { McpServerRepo } from "@skald/server"
import * as AppMetaRepo from "@skald/server/host/AppMetaRepo"
import * as FirstRun from "@skald/server/host/FirstRun"
import { Context, Effect, Either, Layer, Option } from "effect"
import { commandEntry, makeHome, servicesLayer } from "./host-support.js"

const open = (home: string) =>
  Effect.map(
    Layer.build(AppMetaRepo.layer.pipe(Layer.provideMerge(servicesLayer(home)))),
    (context) => ({
      context,
      meta: Context.get(context, AppMetaRepo.AppMetaRepo),
      servers: Context.get(context, McpServerRepo.McpServerRepo)
    })
  )

describe("the first run", () => {
  it.scoped("registers the demo server once per database, and not again once it was removed", () =>
    Effect.gen(function*() {
      const home = makeHome()
      const { context, meta, servers } = yield* open(home)
      const ensure = Effect.provide(FirstRun.ensure, context)
      assert.deepStrictEqual(yield* ensure, Option.some("demo"))
      assert.isTrue(Option.isSome(yield* meta.get(FirstRun.MARKER)))
      const demo = yield* servers.get(ServerName.make("demo"))
      assert.isTrue(Option.isSome(demo))
      assert.strictEqual(demo.pipe(Option.map((e) => e.friendlyName), Option.getOrUndefined), "Skald demo")

      assert.deepStrictEqual(yield* ensure, Option.none())
      yield* servers.remove(ServerName.make("demo"))
      assert.deepStrictEqual(yield* ensure, Option.none())
      assert.deepStrictEqual(yield* servers.list, [])
    }))

  it.scoped("a home that has a server named demo keeps it: the marker is set, nothing is registered", () =>
    Effect.gen(function*() {
      const { context, meta, servers } = yield* open(makeHome())
      const mine = commandEntry("demo", "/bin/true", ["mine"])
      yield* servers.upsert(mine)
      assert.deepStrictEqual(yield* Effect.provide(FirstRun.ensure, context), Option.none())
      assert.isTrue(Option.isSome(yield* meta.get(FirstRun.MARKER)))
      const kept = yield* servers.get(ServerName.make("demo"))
      assert.deepStrictEqual(kept.pipe(Option.map((e) => e.config), Option.getOrUndefined), mine.config)
    }))

  it.scoped("a marker commits with its action: a failed action leaves neither, and the next try runs it", () =>
    Effect.gen(function*() {
      const { meta, servers } = yield* open(makeHome())
      const failed = yield* Effect.either(
        meta.once(
          "test_marker",
          "v1",
          Effect.zipRight(servers.upsert(commandEntry("half", "/bin/true", [])), Effect.fail("boom" as const))
        )
      )
      assert.deepStrictEqual(failed, Either.left("boom"))
      assert.deepStrictEqual(yield* meta.get("test_marker"), Option.none())
      assert.deepStrictEqual(yield* servers.list, [])

      assert.deepStrictEqual(yield* meta.once("test_marker", "v2", Effect.succeed(42)), Option.some(42))
      assert.deepStrictEqual(yield* meta.get("test_marker"), Option.some("v2"))
      assert.deepStrictEqual(yield* meta.once("test_marker", "v3", Effect.succeed(43)), Option.none())
      assert.deepStrictEqual(yield* meta.get("test_marker"), Option.some("v2"))
    }))
})
