/**
 * `read_resource(server, uri?)` (docs/agent.md): the model reads a resource of an MCP server it
 * may use — one whose tools it is offered (granted with `activate_tools`, or always offered) and
 * that declared the `resources` capability; no other server is offered, and a call naming one
 * is refused. Without `uri` it lists the server's resources and resource templates; with one it
 * reads it: text as text, blobs saved in the media store and linked in markdown like media tool
 * results (`[file](/api/mcp-media/<id>.<ext>) (application/pdf, 1.2 MB)`). The loop caps the
 * answer like any tool result.
 *
 * @since 0.1.0
 */
import type { McpResource } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { McpManager } from "../../host/McpManager.js"
import { offered, type ResolvedGrant } from "../Grants.js"
import { decode, type Definition, ToolInputError } from "./ToolInput.js"

/** The tool's name. */
export const NAME = "read_resource"

/**
 * The servers whose resources the model may read (pure): those whose tools it is offered — the
 * granted ones that are registered and enabled, plus `always` (`"all"`: every connected server)
 * — among `declaring`, the connected servers that declared `resources`. Sorted.
 */
export const readable = (
  grants: ReadonlyArray<ResolvedGrant>,
  always: "all" | ReadonlyArray<string>,
  declaring: ReadonlyArray<string>
): ReadonlyArray<string> => {
  const allowed = always === "all" ? undefined : new Set([...offered(grants), ...always])
  return [...new Set(declaring)].filter((name) => allowed === undefined || allowed.has(name)).sort()
}

/** Its definition, naming the servers it may read from (`servers`, never empty: else it is not offered). */
export const definition = (servers: ReadonlyArray<string>): Definition => ({
  name: NAME,
  description: "Read a resource (a file, a document, a record…) of an MCP server by its URI. " +
    "Omit uri to list the server's resources and resource templates first. " +
    "Text comes back as text; binary contents as a markdown link to the saved file.",
  inputSchema: {
    type: "object",
    properties: {
      server: { type: "string", enum: [...servers], description: "The MCP server that has the resource." },
      uri: { type: "string", description: "The resource's URI, as listed (a template filled in)." }
    },
    required: ["server"],
    additionalProperties: false
  },
  annotations: { readOnlyHint: true }
})

const Arguments = Schema.Struct({ server: Schema.String, uri: Schema.optional(Schema.String) })

const about = (
  entry: { readonly name: string; readonly title?: string | undefined; readonly description?: string | undefined },
  mimeType: string | undefined
) =>
  [
    entry.title ?? entry.name,
    ...(entry.description === undefined ? [] : [entry.description.split("\n")[0]!.trim()]),
    ...(mimeType === undefined ? [] : [`(${mimeType})`])
  ].join(" — ")

/** A listing as the model reads it: one resource a line, then the templates. */
export const listing = (
  server: string,
  resources: ReadonlyArray<McpResource.McpResource>,
  templates: ReadonlyArray<McpResource.McpResourceTemplate>
): string => {
  const lines = [`Resources of ${server}:`]
  if (resources.length === 0) lines.push("(none)")
  for (const r of resources) lines.push(`- ${r.uri} — ${about(r, r.mimeType)}`)
  if (templates.length > 0) {
    lines.push("", "Resource templates (fill in the {variables} to get a URI):")
    for (const t of templates) lines.push(`- ${t.uriTemplate} — ${about(t, t.mimeType)}`)
  }
  return lines.join("\n")
}

/** Runs a call: `servers` are the ones it may read from this round (`readable`). */
export const run = Effect.fn("read_resource")(function*(args: unknown, servers: ReadonlyArray<string>) {
  const { server, uri } = yield* decode(NAME, Arguments, args)
  if (!servers.includes(server)) {
    return yield* new ToolInputError({
      tool: NAME,
      reason: `you may not read resources of ${JSON.stringify(server)}; you may read from ${
        servers.map((s) => JSON.stringify(s)).join(", ")
      } (a server's resources are readable where its tools are offered and it has resources)`
    })
  }
  const manager = yield* McpManager
  if (uri === undefined) {
    const { resources, templates } = yield* manager.listResources(server)
    return listing(server, resources, templates)
  }
  return yield* manager.readResource(server, uri)
})
