/**
 * Resources, prompts, completions, roots and log levels against code we did not write:
 * `@modelcontextprotocol/server-everything` (pinned 2026.8.31), the same cases over stdio and
 * streamable HTTP. Pagination and its cap against the paginated SDK fixture (resources,
 * templates and prompts too); "the server does not offer it" against the echo fixture, which
 * declares tools and logging only.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { McpError } from "@skald/domain"
import { McpClient, McpLog, Roots, StdioTransport } from "@skald/mcp"
import { Chunk, Context, Effect, Either, Encoding, Fiber, Layer, Option, Stream } from "effect"
import type { Scope } from "effect"
import { everything, fixture } from "./fixtures/fixtures.js"
import { httpClientLayer, httpFixture, startEverything, startHttpFixture } from "./http-support.js"
import { clientLayer, eventually, expectText, makeLogCapture } from "./support.js"

interface Target {
  readonly name: string
  /** A client of server-everything (a fresh server each time the layer is built). */
  readonly everything: (client?: McpClient.Options) => Layer.Layer<McpClient.McpClient, McpError.McpError | Error>
  /** A client of an SDK fixture (`echo`, `paginated`). */
  readonly fixture: (
    kind: string,
    env?: Readonly<Record<string, string>>,
    client?: McpClient.Options
  ) => Layer.Layer<McpClient.McpClient, McpError.McpError | Error>
}

const targets: ReadonlyArray<Target> = [
  {
    name: "stdio",
    everything: (client) => StdioTransport.layerClient({ server: "everything", ...everything() }, client),
    fixture: (kind, env, client) => clientLayer(kind, fixture(kind, env), client === undefined ? {} : { client })
  },
  {
    name: "streamable http",
    everything: (client) =>
      Layer.unwrapScoped(
        Effect.map(
          startEverything("streamableHttp"),
          (server) => httpClientLayer("everything", server.url, client === undefined ? {} : { client })
        )
      ),
    fixture: (kind, env, client) =>
      Layer.unwrapScoped(
        Effect.map(
          startHttpFixture(httpFixture(kind, "stateful", env)),
          (server) => httpClientLayer(kind, server.url, client === undefined ? {} : { client })
        )
      )
  }
]

const build = <E>(
  layer: Layer.Layer<McpClient.McpClient, E>
): Effect.Effect<McpClient.Service, E, Scope.Scope> => Effect.map(Layer.build(layer), Context.get(McpClient.McpClient))

const TEXT_TEMPLATE = "demo://resource/dynamic/text/{resourceId}"

for (const target of targets) {
  const logs = makeLogCapture()
  layer(
    target.everything().pipe(Layer.provide(Layer.succeed(McpLog.McpLogSink, logs.sink))),
    { excludeTestServices: true, timeout: 60_000 }
  )(`${target.name}: server-everything's resources, prompts and completions`, (it) => {
    it.effect("lists its resources and resource templates, decoded and as sent", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const list = yield* client.listResources
        assert.strictEqual(list.resources.length, list.wire.length)
        assert.isAtLeast(list.resources.length, 5)
        const doc = list.resources.find((r) => r.uri === "demo://resource/static/document/architecture.md")
        assert.isDefined(doc)
        assert.strictEqual(doc!.name, "architecture.md")
        assert.strictEqual(doc!.mimeType, "text/markdown")
        const templates = yield* client.listResourceTemplates
        assert.deepStrictEqual(templates.templates.map((t) => t.uriTemplate), [
          TEXT_TEMPLATE,
          "demo://resource/dynamic/blob/{resourceId}"
        ])
        assert.strictEqual(templates.wire[0]!.name, "Dynamic Text Resource")
      }))

    it.effect("reads a text resource and a blob resource (decoded to its bytes)", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const text = yield* client.readResource("demo://resource/dynamic/text/3")
        assert.strictEqual(text.contents.length, 1)
        const first = text.contents[0]!
        assert.strictEqual(first._tag, "Text")
        if (first._tag === "Text") assert.match(first.text, /^Resource 3: This is a plaintext resource/)
        const blob = yield* client.readResource("demo://resource/dynamic/blob/4")
        const item = blob.contents[0]!
        assert.strictEqual(item._tag, "Blob")
        const wire = (blob.wire.contents as Array<{ blob: string }>)[0]!.blob
        if (item._tag === "Blob") {
          assert.deepStrictEqual(Array.from(item.data), Array.from(Either.getOrThrow(Encoding.decodeBase64(wire))))
          assert.match(new TextDecoder().decode(item.data), /^Resource 4: This is a base64 blob/)
        }
        const doc = yield* client.readResource("demo://resource/static/document/features.md")
        const docItem = doc.contents[0]!
        assert.isTrue(docItem._tag === "Text" && docItem.text.includes("## Prompts"))
      }))

    it.effect("reading an unknown resource fails with the server's error", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const error = yield* Effect.flip(client.readResource("demo://no/such/resource"))
        assert.instanceOf(error, McpError.McpRequestError)
        assert.strictEqual((error as McpError.McpRequestError).method, "resources/read")
      }))

    it.effect("watchResource subscribes, gets notifications/resources/updated for its URI, unsubscribes at its end", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const uri = "demo://resource/dynamic/text/1"
        const updates = yield* client.watchResource(uri).pipe(Stream.take(1), Stream.runCollect, Effect.fork)
        // The subscription is in place once the server acknowledged it (its log line says so).
        yield* eventually(
          () => logs.lines.some((l) => l.text.includes(`Received Subscribe Resource request for URI: ${uri}`)),
          "the subscription acknowledged"
        )
        // The server sends one update at once for every subscribed URI, then one every 5 s.
        yield* client.callTool("toggle-subscriber-updates")
        const got = yield* Fiber.join(updates).pipe(Effect.timeout("20 seconds"))
        yield* client.callTool("toggle-subscriber-updates")
        assert.deepStrictEqual(Chunk.toArray(got), [uri])
        yield* eventually(
          () => logs.lines.some((l) => l.text.includes(`Received Unsubscribe Resource request: ${uri}`)),
          "the unsubscription at the stream's end"
        )
      }))

    it.effect("a resource registered at runtime is announced (resources/list_changed), listed and read as gzip bytes", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const changed = yield* client.resourceListChanges.pipe(Stream.take(1), Stream.runDrain, Effect.fork)
        yield* Effect.yieldNow()
        const hello = Encoding.encodeBase64(new TextEncoder().encode("hello, resources"))
        yield* client.callTool("gzip-file-as-resource", {
          name: "hello.txt.gz",
          data: `data:text/plain;base64,${hello}`
        })
        yield* Fiber.join(changed).pipe(Effect.timeout("20 seconds"))
        const uri = "demo://resource/session/hello.txt.gz"
        assert.include((yield* client.listResources).resources.map((r) => r.uri), uri)
        const item = (yield* client.readResource(uri)).contents[0]!
        assert.strictEqual(item._tag, "Blob")
        assert.strictEqual(item.mimeType, "application/gzip")
        if (item._tag === "Blob") assert.deepStrictEqual(Array.from(item.data.subarray(0, 2)), [0x1f, 0x8b])
      }))

    it.effect("lists its prompts with their arguments and gets one with arguments", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const list = yield* client.listPrompts
        assert.includeMembers(list.prompts.map((p) => p.name), ["simple-prompt", "args-prompt", "completable-prompt"])
        const args = list.prompts.find((p) => p.name === "args-prompt")!
        assert.deepStrictEqual(args.arguments.map((a) => [a.name, a.required]), [["city", true], ["state", false]])
        const got = yield* client.getPrompt("args-prompt", { city: "Oslo" })
        assert.deepStrictEqual(got.result.messages, [
          { role: "user", content: { type: "text", text: "What's weather in Oslo?" } }
        ])
        const simple = yield* client.getPrompt("simple-prompt")
        assert.strictEqual(simple.result.messages.length, 1)
        // A required argument left out: the server's own refusal.
        const refused = yield* Effect.flip(client.getPrompt("args-prompt", {}))
        assert.instanceOf(refused, McpError.McpRequestError)
      }))

    it.effect("completes a prompt argument (with context) and a resource template variable", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const department = yield* client.complete({ type: "ref/prompt", name: "completable-prompt" }, {
          name: "department",
          value: "E"
        })
        assert.deepStrictEqual(department.values, ["Engineering"])
        const names = yield* client.complete(
          { type: "ref/prompt", name: "completable-prompt" },
          { name: "name", value: "" },
          { department: "Engineering" }
        )
        assert.isAbove(names.values.length, 0)
        const other = yield* client.complete(
          { type: "ref/prompt", name: "completable-prompt" },
          { name: "name", value: "" },
          { department: "Sales" }
        )
        assert.notDeepEqual(names.values, other.values)
        const id = yield* client.complete({ type: "ref/resource", uri: TEXT_TEMPLATE }, {
          name: "resourceId",
          value: "7"
        })
        assert.deepStrictEqual(id.values, ["7"])
        const none = yield* client.complete({ type: "ref/resource", uri: TEXT_TEMPLATE }, {
          name: "resourceId",
          value: "x"
        })
        assert.deepStrictEqual(none.values, [])
      }))

    it.effect("logging/setLevel: below the level set, the server's log messages stop", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const uri = "demo://resource/dynamic/text/9"
        const said = () => logs.lines.filter((l) => l.text.includes(`Subscribe Resource request for URI: ${uri}`))
        yield* client.setLogLevel("error")
        yield* client.subscribeResource(uri)
        yield* client.unsubscribeResource(uri)
        // The server writes its info line before it answers: none came at level error.
        assert.strictEqual(said().length, 0)
        yield* client.setLogLevel("debug")
        yield* client.subscribeResource(uri)
        yield* client.unsubscribeResource(uri)
        assert.strictEqual(said().length, 1)
        assert.strictEqual(said()[0]!.tag, "info")
      }))
  })

  describe(`${target.name}: roots`, () => {
    it.live(
      "declared only with a Roots service: the server lists them, and is told when they change",
      () =>
        Effect.gen(function*() {
          const logs = makeLogCapture()
          const roots = yield* Roots.make([Roots.fromPath("/tmp/skald-root-a")])
          const client = yield* build(target.everything()).pipe(
            Effect.provideService(Roots.Roots, roots.service),
            logs.provide
          )
          // Right after initialize the server asks roots/list (and logs how many it got).
          yield* eventually(
            () => logs.withTag("info").some((t) => t.includes("Roots updated: 1 root(s)")),
            "the server's first roots/list",
            "20 seconds"
          )
          const first = yield* client.callTool("get-roots-list")
          assert.include(expectText(first.result).text, "URI: file:///tmp/skald-root-a")
          yield* roots.set([Roots.fromPath("/tmp/skald-root-b", "b"), Roots.fromPath("/tmp/skald-root-c")])
          // notifications/roots/list_changed → the server asks again.
          yield* eventually(
            () => logs.withTag("info").some((t) => t.includes("Roots updated: 2 root(s)")),
            "the server's roots/list after list_changed",
            "20 seconds"
          )
          const second = expectText((yield* client.callTool("get-roots-list")).result).text
          assert.include(second, "1. b\n   URI: file:///tmp/skald-root-b")
          assert.include(second, "URI: file:///tmp/skald-root-c")
          assert.notInclude(second, "skald-root-a")
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "with roots the client is returned once the server's first roots/list is answered; a server that never asks: only the bound; no roots: no wait",
      () =>
        Effect.gen(function*() {
          const root = Roots.fixed([Roots.fromPath("/tmp/skald-root-a")])
          const waited = (logs: ReturnType<typeof makeLogCapture>) =>
            logs.withTag("debug").some((t) => t.includes("did not ask roots/list within"))
          // server-everything asks at once: a bound of an hour is never reached (the test would time out).
          const asking = makeLogCapture()
          const client = yield* build(target.everything({ rootsWait: "1 hour" })).pipe(
            Effect.provideService(Roots.Roots, root),
            asking.provide
          )
          assert.include(expectText((yield* client.callTool("get-roots-list")).result).text, "skald-root-a")
          assert.isFalse(waited(asking))
          // The echo fixture asks only when its ask_roots tool runs: the bound releases the client.
          const silent = makeLogCapture()
          const echo = yield* build(target.fixture("echo", undefined, { rootsWait: "200 millis" })).pipe(
            Effect.provideService(Roots.Roots, root),
            silent.provide
          )
          assert.isTrue(waited(silent))
          assert.include(expectText((yield* echo.callTool("ask_roots")).result).text, "skald-root-a")
          // Without roots nothing is waited for, however long the bound.
          const plain = makeLogCapture()
          const unrooted = yield* build(target.fixture("echo", undefined, { rootsWait: "1 hour" })).pipe(plain.provide)
          assert.isFalse(waited(plain))
          assert.strictEqual(
            expectText((yield* unrooted.callTool("ask_roots")).result).text,
            "roots/list failed with code -32601"
          )
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "without a Roots service roots/list is refused (-32601); with one it is answered with the list",
      () =>
        Effect.gen(function*() {
          const client = yield* build(target.fixture("echo"))
          const outcome = yield* client.callTool("ask_roots")
          assert.strictEqual(expectText(outcome.result).text, "roots/list failed with code -32601")
          const withRoots = yield* build(target.fixture("echo")).pipe(
            Effect.provideService(Roots.Roots, Roots.fixed([{ uri: "file:///srv/data", name: "data" }]))
          )
          const answered = yield* withRoots.callTool("ask_roots")
          assert.strictEqual(
            expectText(answered.result).text,
            `roots: ${JSON.stringify({ roots: [{ uri: "file:///srv/data", name: "data" }] })}`
          )
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "a server that does not declare resources, prompts or completions: a typed error, nothing sent",
      () =>
        Effect.gen(function*() {
          const client = yield* build(target.fixture("echo"))
          const errors = yield* Effect.all([
            Effect.flip(client.listResources),
            Effect.flip(client.readResource("file:///x")),
            Effect.flip(client.subscribeResource("file:///x")),
            Effect.flip(client.listPrompts),
            Effect.flip(client.getPrompt("p")),
            Effect.flip(client.complete({ type: "ref/prompt", name: "p" }, { name: "a", value: "" }))
          ])
          assert.deepStrictEqual(
            errors.map((e) => (e._tag === "McpCapabilityUnsupported" ? [e.capability, e.method] : e._tag)),
            [
              ["resources", "resources/list"],
              ["resources", "resources/read"],
              ["resources.subscribe", "resources/subscribe"],
              ["prompts", "prompts/list"],
              ["prompts", "prompts/get"],
              ["completions", "completion/complete"]
            ]
          )
          assert.strictEqual(
            errors[0]!.message,
            "MCP server 'echo' does not offer resources (it did not declare the 'resources' capability), so " +
              "resources/list was not sent"
          )
          // It declares logging: setLevel goes out and is answered.
          yield* client.setLogLevel("warning")
        }).pipe(Effect.scoped),
      60_000
    )

    it.live(
      "resources, templates and prompts follow nextCursor; the page cap keeps what was read",
      () =>
        Effect.gen(function*() {
          const logs = makeLogCapture()
          const env = { FIXTURE_TOOLS: "250", FIXTURE_PAGE: "100" }
          const client = yield* build(target.fixture("paginated", env))
          const resources = yield* client.listResources
          assert.strictEqual(resources.resources.length, 250)
          assert.strictEqual(resources.resources[249]!.uri, "fixture://resource/00249")
          assert.strictEqual((yield* client.listResourceTemplates).templates.length, 250)
          const prompts = yield* client.listPrompts
          assert.deepStrictEqual(prompts.prompts.slice(0, 2).map((p) => p.name), ["prompt-00000", "prompt-00001"])
          assert.strictEqual(prompts.prompts.length, 250)
          // New lists announced: one element on each stream.
          const resourceChange = yield* client.resourceListChanges.pipe(Stream.take(1), Stream.runDrain, Effect.fork)
          const promptChange = yield* client.promptListChanges.pipe(Stream.take(1), Stream.runDrain, Effect.fork)
          yield* Effect.yieldNow()
          yield* client.callTool("announce_lists")
          yield* Fiber.join(Fiber.zip(resourceChange, promptChange)).pipe(Effect.timeout("20 seconds"))
          const capped = yield* build(
            target.fixture("paginated", { ...env, FIXTURE_ENDLESS: "1" }, { maxListPages: 3 })
          )
            .pipe(logs.provide)
          assert.strictEqual((yield* capped.listResources).resources.length, 300)
          assert.isTrue(
            logs.withTag("warning").some((t) =>
              t === "resources/list still had a nextCursor after 3 pages; kept the 300 entries read so far"
            )
          )
          assert.isTrue(Option.isSome(Option.fromNullable(capped.identity.capabilities.prompts)))
        }).pipe(Effect.scoped),
      60_000
    )
  })
}
