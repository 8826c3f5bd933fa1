/**
 * How `skald call` answers a server's elicitation: `--elicit ANSWER` (JSON, `@FILE` or `@-`), a
 * prompt on the terminal, or a decline. The CLI always declares elicitation (form and url): it
 * always has one of these. Elicited values are never echoed, logged or put in an error.
 *
 * @since 0.1.0
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Elicitation from "@skald/mcp/Elicitation"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import type * as Scope from "effect/Scope"
import * as Readline from "node:readline"
import { UsageError } from "./CliError.js"
import { readSpec } from "./Io.js"

type Answer = Elicitation.Response

/** Reads `--elicit`: literal JSON, `@FILE`, or `@-` for stdin. Errors never quote the value. */
export const readAnswer = (spec: string): Effect.Effect<Answer, UsageError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const text = yield* readSpec("elicit", spec)
    const value = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => new UsageError({ message: "--elicit is not valid JSON (the value is not shown)" })
    })
    if (
      !Predicate.isRecord(value) ||
      (value.action !== "accept" && value.action !== "decline" && value.action !== "cancel")
    ) {
      return yield* new UsageError({
        message: "--elicit must be an ElicitResult: {\"action\": \"accept\"|\"decline\"|\"cancel\", \"content\"?: {…}}"
      })
    }
    if (value.content !== undefined && !Predicate.isRecord(value.content)) {
      return yield* new UsageError({ message: "--elicit: content must be a JSON object" })
    }
    if (value.action !== "accept") return { action: value.action }
    return value.content === undefined ? { action: "accept" } : { action: "accept", content: value.content }
  })

const say = (text: string) => Effect.sync(() => void process.stderr.write(`${text}\n`))

const describe = (request: Elicitation.Request) =>
  request._tag === "Url"
    ? `MCP server '${request.server}' asks you to open ${request.url}${request.message ? ` — ${request.message}` : ""}`
    : `MCP server '${request.server}' asks: ${request.message}`

/** A record of what went wrong with a given answer (a usage error, reported after the call). */
export interface Problems {
  readonly add: (message: string) => void
  readonly first: () => string | undefined
}

export const makeProblems = (): Problems => {
  const list: Array<string> = []
  return { add: (m) => void list.push(m), first: () => list[0] }
}

/**
 * Answers every elicitation of the call with the same given answer. After accepting a URL
 * elicitation it waits, in `scope` (the call's), for the server's completion notification and
 * says so on stderr; the call's own result ends the wait.
 */
export const fromAnswer = (answer: Answer, problems: Problems, scope: Scope.Scope): Elicitation.Handler => ({
  url: true,
  elicit: (request) =>
    Effect.gen(function*() {
      yield* say(`skald: ${describe(request)}`)
      if (answer.action !== "accept" || request._tag === "Url") {
        if (request._tag === "Url" && answer.action === "accept") {
          yield* say("skald: answered that you opened it; waiting for the server to say the flow is complete")
          yield* request.completed.pipe(
            Effect.zipRight(say(`skald: the server says the URL flow ${request.elicitationId} is complete`)),
            Effect.forkIn(scope)
          )
        }
        return { action: answer.action }
      }
      const checked = Elicitation.validate(request.fields, answer.content)
      if (Either.isLeft(checked)) {
        problems.add(`--elicit does not fit the form of MCP server '${request.server}': ${checked.left}`)
        return { action: "cancel" }
      }
      return { action: "accept", content: checked.right }
    })
})

/** Declines every elicitation, saying how to answer next time. */
export const declining: Elicitation.Handler = {
  url: true,
  elicit: (request) =>
    Effect.as(
      say(`skald: ${describe(request)}\nskald: declined — pass --elicit (or run on a terminal) to answer`),
      { action: "decline" }
    )
}

// --- the terminal prompt ----------------------------------------------------------------

/** Reads one line from the terminal; masked input echoes nothing. `undefined` at end of input. */
export const readLine = (prompt: string, masked: boolean): Effect.Effect<string | undefined> =>
  Effect.async<string | undefined>((resume) => {
    const input = process.stdin
    const output = process.stderr
    output.write(prompt)
    if (!masked) {
      const rl = Readline.createInterface({ input, terminal: false })
      let done = false
      rl.once("line", (line) => {
        done = true
        rl.close()
        resume(Effect.succeed(line))
      })
      rl.once("close", () => {
        if (!done) resume(Effect.succeed(undefined))
      })
      return Effect.sync(() => rl.close())
    }
    let value = ""
    const wasRaw = input.isRaw
    input.setRawMode?.(true)
    input.resume()
    const finish = (result: string | undefined) => {
      input.removeListener("data", onData)
      input.setRawMode?.(wasRaw)
      input.pause()
      output.write("\n")
      resume(Effect.succeed(result))
    }
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString("utf8")) {
        if (char === "\r" || char === "\n") return finish(value)
        if (char === "\u0003" || char === "\u0004") return finish(undefined)
        if (char === "\u007f" || char === "\b") value = value.slice(0, -1)
        else value += char
      }
    }
    input.on("data", onData)
    return Effect.sync(() => {
      input.removeListener("data", onData)
      input.setRawMode?.(wasRaw)
      input.pause()
    })
  })

const fieldPrompt = (field: Elicitation.Field): string => {
  const label = field.title ?? field.name
  const hints: Array<string> = []
  if (field.kind === "enum" || field.kind === "multi-enum") {
    hints.push(field.choices.map((c, i) => `${i + 1}=${c.title ?? c.value}`).join(", "))
    if (field.kind === "multi-enum") hints.push("several: 1,3")
  } else if (field.kind === "boolean") hints.push("y/n")
  else hints.push(field.kind === "string" && field.format !== undefined ? field.format : field.kind)
  if (field.default !== undefined && !field.masked) hints.push(`default ${JSON.stringify(field.default)}`)
  if (!field.required) hints.push("optional")
  return `  ${label}${field.description ? ` (${field.description})` : ""} [${hints.join("; ")}]: `
}

const pick = (choices: ReadonlyArray<Elicitation.Choice>, text: string): string | undefined => {
  const n = Number(text)
  if (Number.isInteger(n) && n >= 1 && n <= choices.length) return choices[n - 1]!.value
  return choices.find((c) => c.value === text || c.title === text)?.value
}

/** Turns typed text into the field's value; `undefined` for "no answer" (default or omitted). Also `skald inbox answer`'s. */
export const parseInput = (field: Elicitation.Field, text: string): unknown => {
  if (text.length === 0) return undefined
  switch (field.kind) {
    case "string":
      return text
    case "number":
    case "integer":
      return Number(text)
    case "boolean":
      return /^(y|yes|true|1)$/i.test(text) ? true : /^(n|no|false|0)$/i.test(text) ? false : text
    case "enum":
      return pick(field.choices, text) ?? text
    case "multi-enum":
      return text.split(",").map((part) => pick(field.choices, part.trim()) ?? part.trim())
  }
}

/** Asks on the terminal (stdin and stderr). Masked fields are typed without echo. */
export const terminal: Elicitation.Handler = {
  url: true,
  elicit: (request) =>
    Effect.gen(function*() {
      yield* say(`\nskald: ${describe(request)}`)
      if (request._tag === "Url") {
        const line = yield* Effect.raceFirst(
          readLine("  Open it, then press Enter (d = decline, c = cancel): ", false),
          Effect.as(request.completed, "")
        )
        return line === undefined || /^c/i.test(line) ?
          { action: "cancel" } :
          /^d/i.test(line) ?
          { action: "decline" } :
          {
            action: "accept"
          }
      }
      if (request.confirmation) {
        const line = yield* readLine("  Confirm? [y/n/c]: ", false)
        return line === undefined || /^c/i.test(line) ?
          { action: "cancel" } :
          /^y/i.test(line) ?
          { action: "accept" } :
          {
            action: "decline"
          }
      }
      while (true) {
        const content: Record<string, unknown> = {}
        for (const field of request.fields) {
          const line = yield* readLine(fieldPrompt(field), field.masked)
          if (line === undefined) return { action: "cancel" }
          const value = parseInput(field, line.trim())
          if (value !== undefined) content[field.name] = value
        }
        const checked = Elicitation.validate(request.fields, content)
        if (Either.isRight(checked)) {
          const line = yield* readLine("  Send? [y = send, n = decline, c = cancel, r = retype]: ", false)
          if (line === undefined || /^c/i.test(line)) return { action: "cancel" }
          if (/^n/i.test(line)) return { action: "decline" }
          if (/^r/i.test(line)) continue
          return { action: "accept", content: checked.right }
        }
        yield* say(`  ${checked.left}; try again (Ctrl-D cancels)`)
      }
    })
}
