/**
 * The media store (host/MediaStore.ts): media saved as private files and linked from markdown, and
 * a failed write as a `MediaWriteError` that survives the Schema encoding an RPC boundary uses.
 */
import { NodeContext } from "@effect/platform-node"
import * as FileSystem from "@effect/platform/FileSystem"
import { assert, describe, it } from "@effect/vitest"
import { McpCallResult } from "@skald/domain"
import { MediaStore } from "@skald/server"
import { Effect, Schema } from "effect"
import * as Path from "node:path"

const png = new McpCallResult.McpInlineMedia({ kind: "image", mimeType: "image/png", data: new Uint8Array([1, 2, 3]) })
const media = new McpCallResult.McpMediaResult({ text: "a chart", items: [png], isError: false })

describe("MediaStore", () => {
  it.scoped("saves each item as a 0600 file and links it under the base URL", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = Path.join(yield* fs.makeTempDirectoryScoped(), "mcp_media")
      const result = yield* MediaStore.fromCallResult(media, dir, "http://127.0.0.1:8787/")
      assert.strictEqual(result._tag, "Text")
      const [file] = yield* fs.readDirectory(dir)
      assert.match(file!, /^[0-9a-f-]{36}\.png$/)
      assert.strictEqual(
        result._tag === "Text" ? result.text : "",
        `a chart\n![image](http://127.0.0.1:8787${MediaStore.MEDIA_URL_PREFIX}${file}) (image/png, 3 B)`
      )
      assert.strictEqual((yield* fs.stat(Path.join(dir, file!))).mode & 0o777, 0o600)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a folder that cannot be made is a MediaWriteError that crosses a Schema boundary", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const blocker = Path.join(yield* fs.makeTempDirectoryScoped(), "not-a-folder")
      yield* fs.writeFileString(blocker, "")
      const dir = Path.join(blocker, "mcp_media")
      const failure = yield* Effect.flip(MediaStore.fromCallResult(media, dir))
      assert.instanceOf(failure, MediaStore.MediaWriteError)
      assert.include(failure.message, `could not save a media result in ${dir}`)
      const wire = Schema.encodeSync(MediaStore.MediaWriteError)(failure)
      const back = Schema.decodeUnknownSync(MediaStore.MediaWriteError)(JSON.parse(JSON.stringify(wire)))
      assert.strictEqual(back.message, failure.message)
    }).pipe(Effect.provide(NodeContext.layer)))
})
