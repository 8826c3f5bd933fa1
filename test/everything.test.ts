/**
 * Interop with `@modelcontextprotocol/server-everything` (pinned 2026.8.31) over stdio: code we
 * did not write. One connection is shared by the suite.
 */
import { assert, layer } from "@effect/vitest"
import { McpClient, StdioTransport } from "@skald/mcp"
import { Effect, Option, Stream } from "effect"
import { everything } from "./fixtures/fixtures.js"
import { PNG_SIGNATURE } from "./fixtures/media-bytes.js"
import { bytes, expectJson, expectMedia, expectText, makeLogCapture } from "./support.js"

const logs = makeLogCapture()

// Through the one-layer helper (the other suites compose StdioTransport.layer + McpClient.layer).
layer(StdioTransport.layerClient({ server: "everything", ...everything() }), { excludeTestServices: true })(
  "server-everything over stdio",
  (it) => {
    it.effect("lists its tools, including the task-required one registered after initialize", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        assert.strictEqual(client.identity.protocolVersion, "2025-11-25")
        const first = yield* client.tools
        assert.include(first.map((t) => t.name), "echo")
        // `simulate-research-query` is registered after notifications/initialized and announced
        // with list_changed: wait (bounded) for a list that has it.
        const list = yield* client.toolListChanges.pipe(
          Stream.filter((l) => l.tools.some((t) => t.name === "simulate-research-query")),
          Stream.runHead,
          Effect.timeoutFail({
            duration: "15 seconds",
            onTimeout: () => new Error("simulate-research-query never listed")
          }),
          Effect.map(Option.getOrThrow)
        )
        const research = list.tools.find((t) => t.name === "simulate-research-query")!
        assert.strictEqual(research.taskSupport, "required")
        const structured = list.tools.find((t) => t.name === "get-structured-content")
        assert.isDefined(structured?.outputSchema)
        assert.deepStrictEqual(structured?.outputSchema?.required, ["temperature", "conditions", "humidity"])
        const echo = list.tools.find((t) => t.name === "echo")!
        assert.strictEqual(echo.taskSupport, "forbidden")
        assert.strictEqual(list.wire.length, list.tools.length)
        assert.includeMembers(list.tools.map((t) => t.name), [
          "get-tiny-image",
          "get-resource-links",
          "get-resource-reference",
          "trigger-long-running-operation"
        ])
      }))

    it.effect("echo answers Text", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const outcome = yield* client.callTool("echo", { message: "hello everything" })
        const text = expectText(outcome.result)
        assert.strictEqual(text.text, "Echo: hello everything")
        assert.isFalse(text.isError)
      }))

    it.effect("get-tiny-image answers Media with a PNG", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const media = expectMedia((yield* client.callTool("get-tiny-image")).result)
        const images = media.items.filter((i) => i._tag === "Inline")
        assert.strictEqual(images.length, 1)
        const image = images[0]!
        assert.strictEqual(image.kind, "image")
        assert.strictEqual(image.mimeType, "image/png")
        assert.deepStrictEqual(bytes(image.data.subarray(0, 8)), [...PNG_SIGNATURE])
        assert.isAbove(image.data.length, 100)
        assert.isAbove(media.text.length, 0)
      }))

    it.effect("get-structured-content answers Json that matches its outputSchema", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const outcome = yield* client.callTool("get-structured-content", { location: "New York" }).pipe(logs.provide)
        const json = expectJson(outcome.result)
        assert.deepStrictEqual(json.value, { temperature: 33, conditions: "Cloudy", humidity: 82 })
        assert.isFalse(json.isError)
        assert.deepStrictEqual(logs.withTag("warning"), [])
      }))

    it.effect("get-resource-links answers Media with Link items", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const media = expectMedia((yield* client.callTool("get-resource-links", { count: 4 })).result)
        assert.strictEqual(media.items.length, 4)
        for (const item of media.items) {
          if (item._tag !== "Link") return assert.fail(`expected Link items, got ${item._tag}`)
          assert.match(item.uri, /^demo:\/\/resource\/dynamic\/(text|blob)\/\d+$/)
          assert.isString(item.name)
          assert.isString(item.mimeType)
        }
        assert.include(media.text, "4 resource links")
      }))

    it.effect("get-resource-reference with a Blob answers Media with an Inline resource", () =>
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        const tool = (yield* client.tools).find((t) => t.name === "get-resource-reference")!
        // The enum of resource types, from its inputSchema.
        const properties = tool.inputSchema.properties as Record<string, { enum?: Array<string> }>
        assert.deepStrictEqual(properties.resourceType?.enum, ["Text", "Blob"])
        const media = expectMedia(
          (yield* client.callTool("get-resource-reference", { resourceType: "Blob", resourceId: 2 })).result
        )
        assert.strictEqual(media.items.length, 1)
        const item = media.items[0]!
        if (item._tag !== "Inline") return assert.fail(`expected an Inline item, got ${item._tag}`)
        assert.strictEqual(item.kind, "resource")
        assert.match(item.uri ?? "", /\/blob\/2$/)
        assert.match(Buffer.from(item.data).toString("utf8"), /^Resource 2: This is a base64 blob created at /)
        assert.include(media.text, "Returning resource reference for Resource 2")
      }))
  }
)
