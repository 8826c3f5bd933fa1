/**
 * What `skald inbox` and `skald inbox answer` do (their options and help are in InboxCommands.ts;
 * this module is loaded when one of them runs, see Lazy.ts): thin over the running host's Inbox
 * group (RpcHost.ts). The host checks every answer; this side turns flags and stdin lines into one.
 * An answer's values are read from stdin and go only to the host: never printed, never on argv.
 *
 * @since 0.1.0
 */
import { InboxItem } from "@skald/domain"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import { Paths } from "../host/Paths.js"
import { UsageError } from "./CliError.js"
import { parseInput } from "./Elicit.js"
import type * as InboxCommands from "./InboxCommands.js"
import { readStdin, stderr, stdout } from "./Io.js"
import * as Output from "./Output.js"
import * as RpcHost from "./RpcHost.js"

const paths = (home: Option.Option<string>) => Paths.Default(home).pipe(Layer.orDie)

const span = (ms: number): string => Duration.format(Duration.millis(Math.max(0, Math.round(ms / 1000) * 1000)))

const kindOf = (item: InboxItem.InboxItem): string => item._tag.toLowerCase()

const originOf = (origin: InboxItem.Origin): string =>
  [
    origin.sessionId === undefined ? undefined : `session ${origin.sessionId}`,
    origin.server === undefined ? undefined : `server ${origin.server}`,
    origin.tool === undefined ? undefined : `tool ${origin.tool}`
  ].filter((part) => part !== undefined).join(", ") || "the host"

const fieldLine = (field: InboxItem.Field): string =>
  `  field ${field.name} (${
    [field.kind, field.required ? "required" : "optional", ...(field.masked ? ["masked"] : [])].join(", ")
  })${field.title === undefined ? "" : `: ${field.title}`}`

/** An item as text: a header line, then its details indented. Never a value typed by anyone. */
export const describeItem = (item: InboxItem.InboxItem, now: number): string => {
  const deadline = item.deadline === undefined ? "no deadline" : `deadline in ${span(item.deadline - now)}`
  const head = `${kindOf(item)}  ${item.id}  ${originOf(item.origin)}  age ${span(now - item.createdAt)}  ${deadline}`
  switch (item._tag) {
    case "Approval":
      return [
        head,
        `  tool ${item.tool} (${item.reason})`,
        `  arguments ${JSON.stringify(item.arguments)}`
      ].join("\n")
    case "Elicitation":
      return [
        head,
        `  ${item.mode === "url" ? "url" : item.confirmation ? "confirm" : "form"}: ${item.message}`,
        ...(item.url === undefined ? [] : [`  open ${item.url}`]),
        ...item.fields.map(fieldLine)
      ].join("\n")
    case "Notification":
      return [head, `  ${item.title}`, ...item.body.split("\n").map((line) => `  ${line}`)].join("\n")
  }
}

/** `skald inbox`. */
export const list = ({ home, json, token }: InboxCommands.ListArgs) =>
  Effect.gen(function*() {
    const { client, url } = yield* RpcHost.connect(yield* RpcHost.tokenOf(token))
    const items = yield* client.Inbox.List().pipe(RpcHost.reaching(url))
    if (json) return yield* stdout(Output.json(items))
    if (items.length === 0) return yield* stderr(`skald: the inbox of the host at ${url} is empty`)
    const now = yield* Clock.currentTimeMillis
    yield* stdout(items.map((item) => describeItem(item, now)).join("\n"))
  }).pipe(Effect.scoped, Effect.provide(paths(home)))

const FIELD = /^([^=]+)=@-$/

/** The answer the flags ask for, or a usage error (exactly one choice; `--field` only with `--accept`). */
const choiceOf = (args: InboxCommands.AnswerArgs) => {
  const chosen = (["accept", "decline", "cancel", "yes", "no", "always", "dismiss"] as const).filter((k) => args[k])
  if (chosen.length !== 1) {
    return Effect.fail(
      new UsageError({
        message: "give exactly one of --yes, --no, --always, --accept, --decline, --cancel, --dismiss" +
          (chosen.length > 1 ? ` (got ${chosen.map((c) => `--${c}`).join(", ")})` : "")
      })
    )
  }
  if (args.field.length > 0 && chosen[0] !== "accept") {
    return Effect.fail(new UsageError({ message: "--field goes with --accept (the form's values)" }))
  }
  return Effect.succeed(chosen[0]!)
}

/** The `--field` names, in order; a value on argv (anything but `K=@-`) is refused without repeating it. */
const fieldNames = (fields: ReadonlyArray<string>) =>
  Effect.forEach(fields, (spec, i) => {
    const m = FIELD.exec(spec)
    return m === null
      ? Effect.fail(
        new UsageError({
          message: `--field number ${i + 1} is not K=@-: values come from stdin only, never the command line ` +
            "(give --field NAME=@- and write the value as one line on stdin)"
        })
      )
      : Effect.succeed(m[1]!)
  })

/** The form's content from stdin: one line per field, in order, typed as the item's fields say. */
const contentOf = (client: RpcHost.Client, id: string, names: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const items = yield* client.Inbox.List()
    const item = items.find((i) => i.id === id)
    const fields = item?._tag === "Elicitation" ? item.fields : []
    const lines = (yield* readStdin("field")).split(/\r?\n/)
    if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop()
    if (lines.length < names.length) {
      return yield* new UsageError({
        message: `--field asks for ${names.length} value(s) on stdin, one line each; stdin had ${lines.length}`
      })
    }
    const content: Record<string, unknown> = {}
    names.forEach((name, i) => {
      const field = fields.find((f) => f.name === name)
      const text = lines[i]!
      const value = field === undefined ? text : parseInput(field, text)
      if (value !== undefined) content[name] = value
    })
    return content
  })

/** `skald inbox answer`. */
export const answer = (args: InboxCommands.AnswerArgs) =>
  Effect.gen(function*() {
    const choice = yield* choiceOf(args)
    const names = yield* fieldNames(args.field)
    const { client, url } = yield* RpcHost.connect(yield* RpcHost.tokenOf(args.token))
    const answer: InboxItem.InboxAnswer = yield* Effect.gen(function*() {
      switch (choice) {
        case "yes":
          return new InboxItem.Approve({ always: false })
        case "always":
          return new InboxItem.Approve({ always: true })
        case "no":
          return new InboxItem.Deny()
        case "decline":
          return new InboxItem.Decline()
        case "cancel":
          return new InboxItem.Cancel()
        case "dismiss":
          return new InboxItem.Dismiss()
        case "accept":
          return names.length === 0
            ? new InboxItem.Accept({})
            : new InboxItem.Accept({ content: yield* contentOf(client, args.id, names) })
      }
    }).pipe(RpcHost.reaching(url))
    yield* client.Inbox.Resolve({ id: args.id, answer }).pipe(RpcHost.reaching(url))
    yield* stderr(`skald: ${args.id} ${InboxItem.outcomeOf(answer)}`)
  }).pipe(Effect.scoped, Effect.provide(paths(args.home)))
