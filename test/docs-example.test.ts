import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { program } from "../docs/examples/embed.js"

const root = Path.resolve(import.meta.dirname, "..")

describe("docs/mcp-client.md", () => {
  it("shows the embedding example verbatim", () => {
    const doc = Fs.readFileSync(Path.join(root, "docs/mcp-client.md"), "utf8")
    const example = Fs.readFileSync(Path.join(root, "docs/examples/embed.ts"), "utf8")
    assert.isTrue(doc.includes("```ts\n" + example + "```"), "docs/mcp-client.md must quote docs/examples/embed.ts")
  })

  it.live("the embedding example runs against server-everything", () =>
    Effect.gen(function*() {
      const out = yield* program
      assert.include(out.tools, "echo")
      assert.deepStrictEqual(out.echo._tag === "Text" && out.echo.text, "Echo: hello")
      assert.strictEqual(out.weather._tag, "Json")
      assert.isTrue(Either.isLeft(out.slow))
      if (Either.isLeft(out.slow)) assert.strictEqual(out.slow.left._tag, "McpTimeout")
      assert.isTrue(out.collected.some((line) => line.tag === "lifecycle" && line.text.startsWith("connected")))
    }))
})
