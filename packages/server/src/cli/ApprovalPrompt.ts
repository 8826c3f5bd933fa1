/**
 * The approval question on the terminal (`skald chat`, `skald agent run --approve ask`): each
 * `Approval` item of this process's inbox is asked on stderr, one at a time, and the answer —
 * `y` (run it), `n` (refuse it), `a` (always: run it and allow the tool from now on) — resolves
 * it. A question whose item ends otherwise (the turn stopped, the deadline) is taken back. The
 * rules are the gate's (inbox/Approvals.ts); this module only asks.
 *
 * @since 0.1.0
 */
import { InboxItem } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as Stream from "effect/Stream"
import { Inbox } from "../inbox/Inbox.js"
import type * as InboxPrompt from "./InboxPrompt.js"
import { terminal } from "./TerminalLock.js"

/** The question for an approval. */
export const question = (item: InboxItem.Approval): string => {
  const args = JSON.stringify(item.arguments, null, 2) ?? "{}"
  return [
    `┌ approve ${item.tool}? (${item.reason})`,
    ...args.split("\n").map((line) => `│ ${line}`),
    `└ y = run it, n = refuse it, a = always allow ${item.tool}: `
  ].join("\n")
}

/** The answer a line gives (`undefined`: not one; ask again). End of input refuses. */
export const answerOf = (line: string | undefined): InboxItem.InboxAnswer | undefined => {
  if (line === undefined) return new InboxItem.Deny()
  switch (line.trim().toLowerCase()) {
    case "y":
    case "yes":
      return new InboxItem.Approve({ always: false })
    case "a":
    case "always":
      return new InboxItem.Approve({ always: true })
    case "n":
    case "no":
      return new InboxItem.Deny()
    default:
      return undefined
  }
}

/**
 * Reads one answer line from the terminal (`undefined`: end of input). It listens to stdin without
 * a readline interface of its own and leaves stdin as it found it: in `skald chat` the REPL's
 * readline keeps reading (it must see Ctrl-C, and it echoes what is typed), and closing a second
 * interface would pause the stream under it.
 */
const readAnswer = (prompt: string): Effect.Effect<string | undefined> =>
  Effect.async<string | undefined>((resume) => {
    const input = process.stdin
    process.stderr.write(prompt)
    const wasPaused = input.isPaused()
    let line = ""
    const cleanup = () => {
      input.off("data", onData)
      input.off("end", onEnd)
      if (wasPaused) input.pause()
    }
    const finish = (result: string | undefined) => {
      cleanup()
      resume(Effect.succeed(result))
    }
    const onData = (chunk: Buffer | string) => {
      for (const char of chunk.toString()) {
        if (char === "\r" || char === "\n") return finish(line)
        if (char === "\u0004") return finish(undefined)
        if (char === "\u007f" || char === "\b") line = line.slice(0, -1)
        else if (char >= " ") line += char
      }
    }
    const onEnd = () => finish(undefined)
    input.on("data", onData)
    input.once("end", onEnd)
    input.resume()
    return Effect.sync(cleanup)
  })

/** Asks one approval until it gets an answer, and gives it to the inbox. */
const askOne = (inbox: InboxPrompt.Source, item: InboxItem.Approval) =>
  Effect.gen(function*() {
    let answer: InboxItem.InboxAnswer | undefined = undefined
    let prompt = question(item)
    while (answer === undefined) {
      answer = answerOf(yield* readAnswer(prompt))
      prompt = "  y, n or a: "
    }
    // Too late (the item ended meanwhile): nothing to do.
    yield* inbox.resolve(item.id, answer).pipe(Effect.ignore)
  })

/**
 * Answers the inbox's approvals on the terminal while the scope is open (a background fiber).
 * Only one question is on the terminal at a time (elicitations included: TerminalLock.ts); the
 * others wait their turn.
 */
export const onTerminal = Effect.flatMap(Inbox, (inbox) => onTerminalOf(inbox))

/** {@link onTerminal} over another source of items (the running host's inbox: AgentViaHost.ts). */
export const onTerminalOf = (inbox: InboxPrompt.Source) =>
  Effect.gen(function*() {
    const questions = yield* FiberMap.make<string>()
    yield* inbox.watch.pipe(
      Stream.runForEach((change) => {
        if (change._tag === "ItemResolved") return FiberMap.remove(questions, change.id)
        const item = change.item
        return item._tag === "Approval"
          ? FiberMap.run(questions, item.id, terminal.withPermits(1)(askOne(inbox, item)), { onlyIfMissing: true })
          : Effect.void
      }),
      Effect.forkScoped
    )
  })
