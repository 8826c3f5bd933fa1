/**
 * The media store. From what a server answered (`McpCallResult`) to what the host keeps and the model reads
 * (`ToolResult`): Text stays text, Json stays JSON, a task outcome becomes JSON, and media are
 * written to `data/mcp_media/<id>.<ext>` and referenced by URL in markdown (the seed's *Media
 * tool results*): `![image](/api/mcp-media/<id>.png) (image/png, 412 KB)`, `[audio](…)`,
 * `[file](…)`; resource links become `[<mime>](<uri>)`. When the host's address is known (the
 * manager inside `skald serve`), the links are absolute: `http://127.0.0.1:8787/api/mcp-media/…`.
 *
 * @since 0.1.0
 */
import { McpCallResult, MediaType, ToolResult } from "@skald/domain"
import type { McpResource } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The URL path under which media files are served. */
export const MEDIA_URL_PREFIX = "/api/mcp-media/"

/** A media file could not be written (a Schema error: it crosses the RPC boundary). */
export class MediaWriteError extends Schema.TaggedError<MediaWriteError>("@skald/server/MediaWriteError")(
  "MediaWriteError",
  { directory: Schema.String, reason: Schema.String }
) {
  override get message(): string {
    return `could not save a media result in ${this.directory}: ${this.reason}. ` +
      `Check that the folder is writable and that the disk has room.`
  }
}

/** Writes one media item; returns its file name (`<id>.<ext>`). */
const save = (mediaDir: string, item: McpCallResult.McpInlineMedia) =>
  Effect.try({
    try: () => {
      // Private: the folder 0700, each file 0600.
      Fs.mkdirSync(mediaDir, { recursive: true, mode: 0o700 })
      const file = `${Crypto.randomUUID()}.${MediaType.extensionFor(item.mimeType)}`
      // "wx": a new file, never through a link planted under that name; 0600: results may be private.
      Fs.writeFileSync(Path.join(mediaDir, file), item.data, { flag: "wx", mode: 0o600 })
      return file
    },
    catch: (cause) => new MediaWriteError({ directory: mediaDir, reason: (cause as Error).message })
  })

/**
 * Converts a call's result, saving media under `mediaDir`; links start with `baseUrl`
 * (`http://127.0.0.1:8787`) when given, else they are the bare `/api/mcp-media/…` path.
 */
export const fromCallResult = (
  result: McpCallResult.McpCallResult,
  mediaDir: string,
  baseUrl?: string | undefined
): Effect.Effect<ToolResult.ToolResult, MediaWriteError> =>
  Effect.gen(function*() {
    // `isError` is carried through (absent when false): the agent records such a call as failed.
    const flag = result._tag !== "Task" && result.isError ? { isError: true } : {}
    switch (result._tag) {
      case "Text":
        return ToolResult.TextResult.make({ text: result.text, ...flag })
      case "Json":
        return ToolResult.JsonResult.make({ value: result.value, ...flag })
      case "Task":
        return ToolResult.JsonResult.make({
          value: {
            taskId: result.taskId,
            status: result.status,
            ...(result.statusMessage === undefined ? {} : { statusMessage: result.statusMessage })
          }
        })
      case "Media": {
        const lines: Array<string> = []
        if (result.text.length > 0) lines.push(result.text)
        if (result.structured !== undefined) lines.push(JSON.stringify(result.structured))
        for (const item of result.items) {
          if (item._tag === "Link") {
            lines.push(`[${item.mimeType ?? item.name ?? "link"}](${item.uri})`)
            continue
          }
          lines.push((yield* saveLine(mediaDir, item, baseUrl)).line)
        }
        return ToolResult.TextResult.make({ text: lines.join("\n"), ...flag })
      }
    }
  })

/** Saves one item and gives its markdown line: `![image](url) (image/png, 412 KB)`, `[audio](…)`, `[file](…)`. */
const saveLine = (mediaDir: string, item: McpCallResult.McpInlineMedia, baseUrl: string | undefined) =>
  Effect.map(save(mediaDir, item), (file) => {
    const url = `${baseUrl?.replace(/\/+$/, "") ?? ""}${MEDIA_URL_PREFIX}${file}`
    const link = item.kind === "image"
      ? `![image](${url})`
      : item.kind === "audio"
      ? `[audio](${url})`
      : `[file](${url})`
    return { url, line: `${link} (${item.mimeType}, ${MediaType.formatSize(item.data.length)})` }
  })

/** One item of a read resource once saved: text as it came, a blob as the URL of its saved file. */
export type SavedContents =
  | { readonly _tag: "Text"; readonly uri: string; readonly mimeType?: string | undefined; readonly text: string }
  | {
    readonly _tag: "Saved"
    readonly uri: string
    readonly mimeType: string
    /** `/api/mcp-media/<id>.<ext>`, absolute when `baseUrl` was given. */
    readonly url: string
    readonly size: number
    /** The markdown line of a media tool result. */
    readonly line: string
  }

/**
 * Saves the blobs of a `resources/read` answer under `mediaDir` (an `image/*` blob linked as
 * `![image](…)`, `audio/*` as `[audio](…)`, anything else `[file](…)`); text stays text.
 */
export const saveContents = (
  contents: ReadonlyArray<McpResource.McpResourceContents>,
  mediaDir: string,
  baseUrl?: string | undefined
): Effect.Effect<ReadonlyArray<SavedContents>, MediaWriteError> =>
  Effect.forEach(contents, (item) => {
    if (item._tag === "Text") {
      return Effect.succeed<SavedContents>({ _tag: "Text", uri: item.uri, mimeType: item.mimeType, text: item.text })
    }
    const mimeType = item.mimeType ?? "application/octet-stream"
    const kind = mimeType.startsWith("image/") ? "image" : mimeType.startsWith("audio/") ? "audio" : "resource"
    return Effect.map(
      saveLine(mediaDir, McpCallResult.McpInlineMedia.make({ kind, mimeType, data: item.data }), baseUrl),
      ({ line, url }): SavedContents => ({ _tag: "Saved", uri: item.uri, mimeType, url, size: item.data.length, line })
    )
  })

/**
 * A `resources/read` answer as the markdown text the model (or a terminal) reads: text contents
 * as they are, each blob saved and linked like a media tool result (`saveContents`), one a line.
 */
export const fromResourceContents = (
  contents: ReadonlyArray<McpResource.McpResourceContents>,
  mediaDir: string,
  baseUrl?: string | undefined
): Effect.Effect<string, MediaWriteError> =>
  Effect.map(
    saveContents(contents, mediaDir, baseUrl),
    (saved) => saved.map((item) => item._tag === "Text" ? item.text : item.line).join("\n")
  )
