/**
 * What `skald tools` and `skald call` print on stdout.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { MediaType } from "@skald/domain"
import type { McpCallResult, McpTool } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Crypto from "node:crypto"

/** One tool a line: the name (padded), then its title and the first line of its description. */
export const toolLines = (tools: ReadonlyArray<McpTool.McpTool>): string => {
  const width = Math.min(40, Math.max(0, ...tools.map((t) => t.name.length)))
  return tools
    .map((tool) => {
      const summary = tool.description?.split("\n").find((l) => l.trim().length > 0)?.trim()
      const about = [tool.title, summary].filter((s): s is string => s !== undefined && s.length > 0).join(" — ")
      return about.length === 0 ? tool.name : `${tool.name.padEnd(width)}  ${about}`
    })
    .join("\n")
}

/** Pretty JSON, as printed by `--json` and for Json results. */
export const json = (value: unknown): string => JSON.stringify(value, null, 2) ?? "null"

const label = (item: McpCallResult.McpInlineMedia): string =>
  item.kind === "image" ? "image" : item.kind === "audio" ? "audio" : "file"

/**
 * Renders a result as text. Media items are written under `mediaDir` (created if missing) and
 * shown as markdown links to their absolute paths; resource links as `[<mime>](<uri>)`.
 */
export const renderResult = (result: McpCallResult.McpCallResult, mediaDir: string) =>
  Effect.gen(function*() {
    switch (result._tag) {
      case "Text":
        return result.text
      case "Json":
        return json(result.value)
      case "Task":
        return json({ taskId: result.taskId, status: result.status, statusMessage: result.statusMessage })
      case "Media": {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const dir = path.resolve(mediaDir)
        const lines: Array<string> = []
        if (result.text.length > 0) lines.push(result.text)
        if (result.structured !== undefined) lines.push(json(result.structured))
        let madeDir = false
        for (const item of result.items) {
          if (item._tag === "Link") {
            lines.push(`[${item.mimeType ?? item.name ?? "link"}](${item.uri})`)
            continue
          }
          if (!madeDir) {
            yield* fs.makeDirectory(dir, { recursive: true })
            madeDir = true
          }
          const file = path.join(dir, `${Crypto.randomUUID()}.${MediaType.extensionFor(item.mimeType)}`)
          yield* fs.writeFile(file, item.data)
          const link = item.kind === "image" ? `![image](${file})` : `[${label(item)}](${file})`
          lines.push(`${link} (${item.mimeType}, ${MediaType.formatSize(item.data.length)})`)
        }
        return lines.join("\n")
      }
    }
  })
