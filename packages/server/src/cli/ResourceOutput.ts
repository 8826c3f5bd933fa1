/**
 * What `skald resources|read|prompts|prompt` (and their `skald mcp` forms) print on stdout.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { MediaType } from "@skald/domain"
import type { McpPrompt, McpResource } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Crypto from "node:crypto"
import { json } from "./Output.js"

const firstLine = (text: string | undefined): string | undefined =>
  text?.split("\n").find((l) => l.trim().length > 0)?.trim()

/** `key  about` lines, the keys padded to one width (at most 60). */
const aligned = (rows: ReadonlyArray<readonly [string, string]>): Array<string> => {
  const width = Math.min(60, Math.max(0, ...rows.map(([key]) => key.length)))
  return rows.map(([key, about]) => (about.length === 0 ? key : `${key.padEnd(width)}  ${about}`))
}

const about = (
  entry: { readonly name: string; readonly title?: string | undefined; readonly description?: string | undefined },
  mimeType: string | undefined
): string => {
  const parts = [entry.title ?? entry.name, firstLine(entry.description)].filter(
    (s): s is string => s !== undefined && s.length > 0
  )
  return `${parts.join(" — ")}${mimeType === undefined ? "" : ` (${mimeType})`}`
}

/** One resource a line (URI, then its title or name, description and type), then the templates under a heading. */
export const resourceLines = (
  resources: ReadonlyArray<McpResource.McpResource>,
  templates: ReadonlyArray<McpResource.McpResourceTemplate>
): string => {
  const lines = aligned(resources.map((r) => [r.uri, about(r, r.mimeType)] as const))
  if (templates.length > 0) {
    if (lines.length > 0) lines.push("")
    lines.push("resource templates:")
    lines.push(...aligned(templates.map((t) => [t.uriTemplate, about(t, t.mimeType)] as const)))
  }
  return lines.length === 0 ? "(no resources)" : lines.join("\n")
}

/** One prompt a line: its name, title and description, then its arguments (`*`: required). */
export const promptLines = (prompts: ReadonlyArray<McpPrompt.McpPrompt>): string => {
  if (prompts.length === 0) return "(no prompts)"
  return aligned(prompts.map((p) => {
    const args = p.arguments.map((a) => `${a.name}${a.required ? "*" : ""}`).join(", ")
    const text = about(p, undefined)
    return [p.name, args.length === 0 ? text : `${text} (arguments: ${args})`] as const
  })).join("\n")
}

/** A content block as text: text as it is, an embedded text resource's text, anything else as JSON. */
const blockText = (content: McpPrompt.PromptMessage["content"]): string => {
  if (content.type === "text" && typeof content.text === "string") return content.text
  const resource = content.resource as { readonly text?: unknown } | undefined
  if (content.type === "resource" && typeof resource?.text === "string") return resource.text
  return json(content)
}

/** A prompt's messages: `role: text`, separated by blank lines (its description first, when it has one). */
export const promptText = (result: McpPrompt.PromptResult): string =>
  [
    ...(result.description === undefined ? [] : [result.description]),
    ...result.messages.map((m) => `${m.role}: ${blockText(m.content)}`)
  ].join("\n\n")

/**
 * A read's contents: text as it is; binary contents written under `mediaDir` (created if
 * missing) and shown as a markdown link to the absolute path with the type and size.
 */
export const readText = (contents: ReadonlyArray<McpResource.McpResourceContents>, mediaDir: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const parts: Array<string> = []
    for (const item of contents) {
      if (item._tag === "Text") {
        parts.push(item.text)
        continue
      }
      const dir = path.resolve(mediaDir)
      yield* fs.makeDirectory(dir, { recursive: true })
      const mimeType = item.mimeType ?? "application/octet-stream"
      const file = path.join(dir, `${Crypto.randomUUID()}.${MediaType.extensionFor(mimeType)}`)
      yield* fs.writeFile(file, item.data)
      parts.push(`[file](${file}) (${mimeType}, ${MediaType.formatSize(item.data.length)})`)
    }
    return parts.join("\n")
  })
