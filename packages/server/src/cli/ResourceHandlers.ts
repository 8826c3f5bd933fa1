/**
 * What `skald resources|read|prompts|prompt` and `skald mcp resources|read|prompts|prompt` do
 * (their options and help are in ResourceCommands.ts and McpCommands.ts; this module is loaded
 * when one of them runs, see Lazy.ts). The one-off forms talk to the command line's target
 * (offering it the `--root` folders); the `mcp` forms connect a registered server in this
 * process, as `skald mcp tools|call` do.
 *
 * @since 0.1.0
 */
import type { McpError } from "@skald/domain"
import type * as McpClient from "@skald/mcp/McpClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as MediaStore from "../host/MediaStore.js"
import { Paths } from "../host/Paths.js"
import * as CallParse from "./CallParse.js"
import { withClient } from "./ClientHandlers.js"
import { UsageError } from "./CliError.js"
import { stdout } from "./Io.js"
import type { McpPromptArgs, McpPromptsArgs, McpReadArgs, McpResourcesArgs } from "./McpCommands.js"
import { withServer } from "./McpHandlers.js"
import * as Output from "./Output.js"
import type { PromptArgs, PromptsArgs, ReadArgs, ResourcesArgs } from "./ResourceCommands.js"
import * as ResourceOutput from "./ResourceOutput.js"

/**
 * The resources and the templates. A server that declares resources but answers
 * `resources/templates/list` "method not found" (an SDK `Server` without that handler) has none.
 */
const listResources = (client: McpClient.Service, json: boolean) =>
  Effect.gen(function*() {
    const resources = yield* client.listResources
    const templates = yield* client.listResourceTemplates.pipe(
      Effect.catchIf(
        (error: McpError.McpError) => error._tag === "McpRequestError" && error.code === -32601,
        () => Effect.succeed({ templates: [], wire: [] } satisfies McpClient.ResourceTemplateList)
      )
    )
    yield* stdout(
      json
        ? Output.json({ resources: resources.wire, resourceTemplates: templates.wire })
        : ResourceOutput.resourceLines(resources.resources, templates.templates)
    )
  })

const readResource = (client: McpClient.Service, uri: string, json: boolean, mediaDir: string) =>
  Effect.gen(function*() {
    const outcome = yield* client.readResource(uri)
    yield* stdout(json ? Output.json(outcome.wire) : yield* ResourceOutput.readText(outcome.contents, mediaDir))
  })

const listPrompts = (client: McpClient.Service, json: boolean) =>
  Effect.flatMap(
    client.listPrompts,
    (list) => stdout(json ? Output.json(list.wire) : ResourceOutput.promptLines(list.prompts))
  )

/**
 * `--args` for a prompt: a JSON object (inline, @FILE, @-) whose values are strings; numbers and
 * booleans are given as their text, anything else is a usage error.
 */
const promptArguments = (spec: Option.Option<string>) =>
  Effect.gen(function*() {
    if (Option.isNone(spec)) return undefined
    const given = yield* CallParse.parseArgs(spec.value)
    const args: Record<string, string> = {}
    for (const [key, value] of Object.entries(given)) {
      if (typeof value === "string") args[key] = value
      else if (typeof value === "number" || typeof value === "boolean") args[key] = String(value)
      else {
        return yield* new UsageError({
          message: `--args: a prompt's arguments are strings, but ${JSON.stringify(key)} is ${
            value === null ? "null" : Array.isArray(value) ? "an array" : "an object"
          }`
        })
      }
    }
    return args
  })

const getPrompt = (
  client: McpClient.Service,
  name: string,
  args: Readonly<Record<string, string>> | undefined,
  json: boolean
) =>
  Effect.flatMap(
    client.getPrompt(name, args),
    (outcome) => stdout(json ? Output.json(outcome.wire) : ResourceOutput.promptText(outcome.result))
  )

/** `skald resources`. */
export const resources = ({ json, ...target }: ResourcesArgs) =>
  withClient(target, (client) => listResources(client, json)).pipe(Effect.withSpan("skald resources"))

/** `skald read`. */
export const read = ({ json, mediaDir, uri, ...target }: ReadArgs) =>
  withClient(target, (client) => readResource(client, uri, json, mediaDir)).pipe(Effect.withSpan("skald read"))

/** `skald prompts`. */
export const prompts = ({ json, ...target }: PromptsArgs) =>
  withClient(target, (client) => listPrompts(client, json)).pipe(Effect.withSpan("skald prompts"))

/** `skald prompt`. */
export const prompt = ({ args, json, name, ...target }: PromptArgs) =>
  Effect.flatMap(promptArguments(args), (given) => withClient(target, (client) => getPrompt(client, name, given, json)))
    .pipe(Effect.withSpan("skald prompt"))

/** `skald mcp resources`. */
export const mcpResources = ({ home, json, server }: McpResourcesArgs) =>
  withServer(home, server, ({ client }) => listResources(client, json))

/**
 * `skald mcp read`: as `skald mcp call` treats media, blobs go into the home's media store and
 * are shown as `/api/mcp-media/…` links (`--json`: `{contents: [{uri, mimeType, text} | {uri,
 * mimeType, url, size}]}`), never as base64.
 */
export const mcpRead = ({ home, json, server, uri }: McpReadArgs) =>
  withServer(home, server, ({ client }) =>
    Effect.gen(function*() {
      const outcome = yield* client.readResource(uri)
      const saved = yield* MediaStore.saveContents(outcome.contents, (yield* Paths).mediaDir)
      yield* stdout(
        json
          ? Output.json({
            contents: saved.map((item) =>
              item._tag === "Text"
                ? {
                  uri: item.uri,
                  ...(item.mimeType === undefined ? {} : { mimeType: item.mimeType }),
                  text: item.text
                }
                : { uri: item.uri, mimeType: item.mimeType, url: item.url, size: item.size }
            )
          })
          : saved.map((item) => item._tag === "Text" ? item.text : item.line).join("\n")
      )
    }))

/** `skald mcp prompts`. */
export const mcpPrompts = ({ home, json, server }: McpPromptsArgs) =>
  withServer(home, server, ({ client }) => listPrompts(client, json))

/** `skald mcp prompt`. */
export const mcpPrompt = ({ args, home, json, name, server }: McpPromptArgs) =>
  Effect.flatMap(
    promptArguments(args),
    (given) => withServer(home, server, ({ client }) => getPrompt(client, name, given, json))
  )
