/**
 * MCP prompts as chat commands (docs/agent.md): `/SERVER:PROMPT name=value …` gets the prompt
 * (`prompts/get`) from that connected server and its messages become the user's turn; `/help`
 * lists the prompts of the connected servers that declared `prompts`. Values may be quoted
 * (`city="New York"`). A required argument left out is said before anything is sent.
 *
 * @since 0.1.0
 */
import type { McpPrompt } from "@skald/domain"
import * as Effect from "effect/Effect"
import { McpManager } from "../host/McpManager.js"

/** A parsed `/SERVER:PROMPT …` line. */
export interface Invocation {
  readonly server: string
  readonly prompt: string
  readonly args: Readonly<Record<string, string>>
}

/** What a command line does: text to print, or a message to send as the user's turn. */
export type Outcome =
  | { readonly _tag: "Print"; readonly text: string }
  | { readonly _tag: "Send"; readonly message: string }

/** Whether a chat line is a command (starts with `/`). */
export const isCommand = (line: string): boolean => line.trimStart().startsWith("/")

/** Parses `/SERVER:PROMPT name=value name="two words" …`; undefined when it is not that shape (pure). */
export const parse = (line: string): Invocation | string | undefined => {
  const match = /^\/([^\s:]+):(\S+)(.*)$/s.exec(line.trim())
  if (match === null) return undefined
  const args: Record<string, string> = {}
  const rest = match[3]!
  const pair = /\s*([^\s=]+)=("((?:[^"\\]|\\.)*)"|\S*)/gy
  let at = 0
  while (at < rest.length) {
    if (rest.slice(at).trim().length === 0) break
    pair.lastIndex = at
    const m = pair.exec(rest)
    if (m === null) {
      return `expected name=value after /${match[1]}:${match[2]}, got ${JSON.stringify(rest.slice(at).trim())}`
    }
    args[m[1]!] = m[3] === undefined ? m[2]! : m[3].replace(/\\(.)/g, "$1")
    at = pair.lastIndex
  }
  return { server: match[1]!, prompt: match[2]!, args }
}

/** A prompt's messages as one user turn: each message's text, a non-user one prefixed by its role (pure). */
export const toMessage = (result: McpPrompt.PromptResult): string =>
  result.messages.map((m) => {
    const content = m.content
    const resource = content.resource as { readonly text?: unknown; readonly uri?: unknown } | undefined
    const text = content.type === "text" && typeof content.text === "string"
      ? content.text
      : content.type === "resource" && typeof resource?.text === "string"
      ? resource.text
      : `[${content.type}${typeof resource?.uri === "string" ? ` ${resource.uri}` : ""}]`
    return m.role === "user" ? text : `${m.role}: ${text}`
  }).join("\n\n")

/** The `/help` text: one line per prompt, `/server:prompt name* other` (`*`: required). */
export const helpText = (
  prompts: ReadonlyArray<{ readonly server: string; readonly prompt: McpPrompt.McpPrompt }>
): string => {
  const lines = [
    "Commands:",
    "  /help  this list",
    "  /SERVER:PROMPT name=value …  send a server's prompt as your message"
  ]
  if (prompts.length === 0) lines.push("No connected server offers prompts.")
  else lines.push("Prompts:")
  for (const { prompt, server } of prompts) {
    const args = prompt.arguments.map((a) => `${a.name}=${a.required ? "… (required)" : "…"}`).join(" ")
    const about = prompt.title ?? prompt.description?.split("\n")[0]
    lines.push(
      `  /${server}:${prompt.name}${args.length > 0 ? ` ${args}` : ""}${about === undefined ? "" : `  — ${about}`}`
    )
  }
  return lines.join("\n")
}

/** Runs a command line against the manager's connected servers. */
export const run = Effect.fn("PromptCommands.run")(function*(line: string) {
  const manager = yield* McpManager
  const print = (text: string): Outcome => ({ _tag: "Print", text })
  if (line.trim() === "/help") {
    const servers = yield* manager.declaring("prompts")
    const listed = yield* Effect.forEach(servers, (server) =>
      manager.listPrompts(server).pipe(
        Effect.map((prompts) => prompts.map((prompt) => ({ server, prompt }))),
        Effect.orElseSucceed(() => [])
      ))
    return print(helpText(listed.flat()))
  }
  const parsed = parse(line)
  if (parsed === undefined) return print(`unknown command ${JSON.stringify(line.trim())}; /help lists the commands`)
  if (typeof parsed === "string") return print(parsed)
  const prompts = yield* manager.listPrompts(parsed.server).pipe(Effect.either)
  if (prompts._tag === "Left") return print(prompts.left.message)
  const prompt = prompts.right.find((p) => p.name === parsed.prompt)
  if (prompt === undefined) {
    return print(
      `${parsed.server} has no prompt ${JSON.stringify(parsed.prompt)}; it has ${
        prompts.right.map((p) => p.name).join(", ") || "none"
      }`
    )
  }
  const missing = prompt.arguments.filter((a) => a.required && parsed.args[a.name] === undefined).map((a) => a.name)
  if (missing.length > 0) {
    return print(`/${parsed.server}:${parsed.prompt} needs ${missing.map((m) => `${m}=…`).join(" ")}`)
  }
  const got = yield* manager.getPrompt(parsed.server, parsed.prompt, parsed.args).pipe(Effect.either)
  if (got._tag === "Left") return print(got.left.message)
  return { _tag: "Send", message: toMessage(got.right) } satisfies Outcome as Outcome
})
