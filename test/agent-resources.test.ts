/**
 * The agent's `read_resource` built-in: the grant rule (a property test over random registries:
 * a server's resources are readable exactly where its tools are offered and it declared
 * `resources`), and the turn loop with the scripted model against server-everything (resources)
 * and the SDK echo fixture (none) through a real manager: not offered before a grant, offered
 * naming only the granted server with resources, text read as text, a blob saved in the media
 * store and linked by a `/api/mcp-media/…` URL that the host's endpoint serves, the listing, and
 * a server it may not read refused.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpServerEntry, ServerName } from "@skald/domain"
import type { TurnEvent } from "@skald/domain"
import { HttpEndpoints, Paths } from "@skald/server"
import * as Catalog from "@skald/server/agent/Catalog"
import * as Grants from "@skald/server/agent/Grants"
import * as ReadResource from "@skald/server/agent/tools/ReadResource"
import { Context, Deferred, Effect, FastCheck, Layer } from "effect"
import { everythingEntry, fixtureEntry, startManager, tempHome, waitForState } from "./host-support.js"
import { agentOver, events } from "./support/agent.js"
import * as Scripted from "./support/scripted-model.js"

const ofTag = <T extends TurnEvent.TurnEvent["_tag"]>(list: ReadonlyArray<TurnEvent.TurnEvent>, tag: T) =>
  list.filter((e): e is Extract<TurnEvent.TurnEvent, { _tag: T }> => e._tag === tag)

const states = ["connected", "starting", "failed", "disabled"] as const

describe("read_resource: which servers it reads", () => {
  const registry = FastCheck.uniqueArray(
    FastCheck.record({
      name: FastCheck.constantFrom("a", "b", "c", "d", "e", "f"),
      enabled: FastCheck.boolean(),
      state: FastCheck.constantFrom(...states),
      granted: FastCheck.boolean(),
      always: FastCheck.boolean(),
      resources: FastCheck.boolean()
    }),
    { selector: (s) => s.name, maxLength: 6 }
  )

  it.prop(
    "readable exactly when connected with resources, and granted-and-enabled or always offered",
    [registry, FastCheck.boolean(), FastCheck.uniqueArray(FastCheck.constantFrom("gone", "config"))],
    ([servers, all, extraGrants]) => {
      const summaries = servers.map((s) =>
        McpServerEntry.ServerSummary.make({
          name: ServerName.make(s.name),
          transport: "stdio",
          enabled: s.enabled,
          state: s.enabled ? s.state === "disabled" ? "connected" : s.state : "disabled"
        })
      )
      const connected = (name: string) => summaries.some((s) => s.name === name && s.state === "connected")
      // What the manager says: the connected servers that declared resources.
      const declaring = servers.filter((s) => s.resources && connected(s.name)).map((s) => s.name)
      const grants = Grants.resolve([...servers.filter((s) => s.granted).map((s) => s.name), ...extraGrants], summaries)
      const always = all ? "all" as const : servers.filter((s) => s.always).map((s) => s.name)
      const got = ReadResource.readable(grants, always, declaring)
      const expected = servers.filter((s) =>
        s.resources && connected(s.name) && (all || s.always || (s.granted && s.enabled))
      ).map((s) => s.name).sort()
      assert.deepStrictEqual(got, expected)
      // A name it does not know (a deleted grant, the config group) is never readable.
      assert.notInclude(got, "gone")
      assert.notInclude(got, "config")
    }
  )
})

/** The endpoint over `paths`: its URL. */
const endpoint = (paths: Paths.Paths) =>
  Effect.gen(function*() {
    const listening = yield* Deferred.make<string>()
    yield* Layer.launch(HttpEndpoints.layer({ host: "127.0.0.1", port: 0 }, (url) => Deferred.succeed(listening, url)))
      .pipe(Effect.provideService(Paths.Paths, paths), Effect.forkScoped)
    return yield* Deferred.await(listening)
  })

describe("read_resource in a turn", () => {
  it.scopedLive(
    "offered once a server with resources is granted; text as text, a blob as a served media URL, a list; others refused",
    () =>
      Effect.gen(function*() {
        const { context, manager } = yield* startManager(yield* tempHome)
        yield* manager.register(everythingEntry("ev")).pipe(Effect.orDie)
        yield* manager.register(fixtureEntry("echo", "echo")).pipe(Effect.orDie)
        yield* waitForState(manager, "ev", "connected")
        yield* waitForState(manager, "echo", "connected")
        // The round's definition names only the granted server that has resources.
        const scope = Grants.sessionScope("s-def")
        const none = yield* Catalog.round({ scope, dispatch: false, always: [] }).pipe(
          Effect.provide(Layer.merge(
            Layer.succeedContext(context),
            Grants.Grants.Default.pipe(
              Layer.provide(Layer.succeedContext(context))
            )
          ))
        )
        assert.isFalse(none.builtins.has(ReadResource.NAME))
        const granted = yield* Catalog.round({ scope, dispatch: false, always: ["ev", "echo"] }).pipe(
          Effect.provide(Layer.merge(
            Layer.succeedContext(context),
            Grants.Grants.Default.pipe(
              Layer.provide(Layer.succeedContext(context))
            )
          ))
        )
        assert.deepStrictEqual(granted.readable, ["ev"])
        const schema = granted.builtins.get(ReadResource.NAME)!.inputSchema as {
          properties: { server: { enum: Array<string> } }
        }
        assert.deepStrictEqual(schema.properties.server.enum, ["ev"])

        const { agent, model } = yield* agentOver(context, [
          Scripted.calls([{ id: "a", name: "activate_tools", params: { groups: ["ev", "echo"] } }]),
          Scripted.calls([
            { id: "text", name: ReadResource.NAME, params: { server: "ev", uri: "demo://resource/dynamic/text/3" } },
            { id: "blob", name: ReadResource.NAME, params: { server: "ev", uri: "demo://resource/dynamic/blob/4" } },
            { id: "list", name: ReadResource.NAME, params: { server: "ev" } },
            { id: "echo", name: ReadResource.NAME, params: { server: "echo", uri: "demo://x" } },
            { id: "bad", name: ReadResource.NAME, params: { server: "ev", uri: "demo://no/such" } }
          ]),
          Scripted.answer("done")
        ], { alwaysOffered: [] })
        const all = yield* events(agent.run({ message: "read them" }))
        const asked = yield* model.recorded
        assert.notInclude(asked[0]!.tools, ReadResource.NAME)
        assert.include(asked[1]!.tools, ReadResource.NAME)
        const done = new Map(ofTag(all, "ToolDone").map((e) => [e.callId, e]))

        assert.strictEqual(done.get("text")!.status, "done")
        assert.match(done.get("text")!.result, /^Resource 3: This is a plaintext resource/)

        const blob = done.get("blob")!
        assert.strictEqual(blob.status, "done")
        const link = /^\[file\]\((\/api\/mcp-media\/[0-9a-f-]+\.txt)\) \(text\/plain, \d+ B\)$/.exec(blob.result)
        assert.isNotNull(link, blob.result)
        assert.deepStrictEqual(blob.mediaUrls, [link![1]!])
        const base = yield* endpoint(Context.get(context, Paths.Paths))
        const served = yield* Effect.promise(() => fetch(`${base}${link![1]}`))
        assert.strictEqual(served.status, 200)
        assert.match(yield* Effect.promise(() => served.text()), /^Resource 4: This is a base64 blob/)

        const list = done.get("list")!.result
        assert.match(list, /^Resources of ev:\n/)
        assert.include(list, "- demo://resource/static/document/architecture.md — architecture.md")
        assert.include(list, "- demo://resource/dynamic/text/{resourceId} — Dynamic Text Resource")

        assert.strictEqual(done.get("echo")!.status, "error")
        assert.include(done.get("echo")!.result, "you may not read resources of \"echo\"; you may read from \"ev\"")
        assert.strictEqual(done.get("bad")!.status, "error")
        assert.include(done.get("bad")!.result, "resources/read")
      }),
    90_000
  )
})
