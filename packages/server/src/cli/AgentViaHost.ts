/**
 * `skald agent run` and `skald chat` through the running host (docs/rpc.md *The CLI as a
 * client*): when a `skald serve` runs for the home, a turn is `Agent.Send` over its RPC (its
 * servers, its rules, its inbox) instead of an agent in this process; Ctrl-C stops it with
 * `Agent.Stop`. What the host asks of this process's turns is answered here:
 *
 * - approvals of this process's sessions: on the terminal (`--approve ask`: ApprovalPrompt.ts),
 *   or answered at once with yes (`allow`) or no (`deny`) through `Inbox.Resolve`;
 * - elicitations of the servers this process's turn is calling (a server's question names no
 *   session): on a terminal asked inline (InboxPrompt.ts), else left in the host's inbox for
 *   `skald inbox answer` (or another client), with a line saying so.
 *
 * The access token, when the host has one, comes from `SKALD_TOKEN`.
 *
 * @since 0.1.0
 */
import type { TurnEvent } from "@skald/domain"
import { InboxItem, ToolName } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { RunInput } from "../agent/Agent.js"
import { Paths } from "../host/Paths.js"
import type * as Approvals from "../inbox/Approvals.js"
import * as ApprovalPrompt from "./ApprovalPrompt.js"
import type * as InboxPrompt from "./InboxPrompt.js"
import { stderr } from "./Io.js"
import * as RpcHost from "./RpcHost.js"

/** The running host's URL for the home, if one runs. */
export const find = (home: Option.Option<string>) =>
  RpcHost.find.pipe(
    Effect.map(Option.map((address) => address.url)),
    Effect.provide(Paths.Default(home).pipe(Layer.orDie))
  )

/** A connection to the host, for the current scope. */
export const connect = (url: string) =>
  Effect.gen(function*() {
    const client = yield* RpcHost.connectTo(url, yield* RpcHost.tokenOf(Option.none()))
    const reach = RpcHost.reaching(url)
    /** The sessions this process's turns ran in. */
    const sessions = new Set<string>()
    /** The servers a call of this process's running turn belongs to, with how many calls run. */
    const calling = new Map<string, number>()
    const serverOf = (name: string) => Option.getOrUndefined(Option.map(ToolName.parse(name), (q) => q.server))
    const track = (event: TurnEvent.TurnEvent) => {
      if (event._tag === "TurnStarted") sessions.add(event.sessionId)
      const server = event._tag === "ToolStarted" || event._tag === "ToolDone" ? serverOf(event.name) : undefined
      if (server === undefined) return
      const n = (calling.get(server) ?? 0) + (event._tag === "ToolStarted" ? 1 : -1)
      if (n > 0) calling.set(server, n)
      else calling.delete(server)
    }
    const ours = (item: InboxItem.InboxItem): boolean =>
      item._tag === "Approval"
        ? item.origin.sessionId !== undefined && sessions.has(item.origin.sessionId)
        : item._tag === "Elicitation" && item.origin.server !== undefined && calling.has(item.origin.server)

    /** The host's inbox as this process's turns see it: their items only. */
    const source: InboxPrompt.Source = {
      watch: client.Inbox.Watch().pipe(
        Stream.filter((change) => change._tag === "ItemResolved" || ours(change.item))
      ),
      resolve: (id, answer) => reach(client.Inbox.Resolve({ id, answer }))
    }

    /** One turn over RPC, each event handed to `onEvent`; interrupted, it stops the turn and waits for its end. */
    const turn = <E, R>(input: RunInput, onEvent: (event: TurnEvent.TurnEvent) => Effect.Effect<void, E, R>) =>
      Effect.gen(function*() {
        let sessionId = input.sessionId
        const fiber = yield* client.Agent.Send({
          message: input.message,
          ...(input.sessionId === undefined ? {} : { sessionId: input.sessionId }),
          ...(input.agent === undefined ? {} : { agent: input.agent })
        }).pipe(
          Stream.runForEach((event) =>
            Effect.suspend(() => {
              track(event)
              if (event._tag === "TurnStarted") sessionId = event.sessionId
              return onEvent(event)
            })
          ),
          reach,
          Effect.forkScoped
        )
        return yield* Fiber.join(fiber).pipe(
          Effect.onInterrupt(() =>
            sessionId === undefined
              ? Fiber.interrupt(fiber)
              : Effect.zipRight(client.Agent.Stop({ sessionId }).pipe(Effect.ignore), Fiber.await(fiber))
          )
        )
      }).pipe(Effect.scoped)

    /** Answers this process's approvals the way `mode` says, in the current scope. */
    const answerApprovals = (mode: Approvals.Mode) =>
      mode === "ask"
        ? ApprovalPrompt.onTerminalOf(source)
        : source.watch.pipe(
          Stream.runForEach((change) =>
            change._tag === "ItemAdded" && change.item._tag === "Approval"
              ? source.resolve(
                change.item.id,
                mode === "allow" ? new InboxItem.Approve({ always: false }) : new InboxItem.Deny()
              ).pipe(Effect.ignore)
              : Effect.void
          ),
          Effect.ignore,
          Effect.forkScoped,
          Effect.asVoid
        )

    /** Says of each elicitation of this process's turn that it waits in the host's inbox (no terminal to ask on). */
    const noteElicitations = source.watch.pipe(
      Stream.runForEach((change) =>
        change._tag === "ItemAdded" && change.item._tag === "Elicitation"
          ? stderr(
            `skald: MCP server '${change.item.origin.server}' asks: ${change.item.message}\n` +
              `skald: it waits in the host's inbox: \`skald inbox\` shows it, ` +
              `\`skald inbox answer ${change.item.id} …\` answers it`
          )
          : Effect.void
      ),
      Effect.ignore,
      Effect.forkScoped,
      Effect.asVoid
    )

    /** A chat command (`/help`, `/SERVER:PROMPT …`) run against the host's servers (agent/PromptCommands.ts). */
    const command = (line: string) => reach(client.Agent.Command({ line }))

    return { url, client, source, turn, answerApprovals, noteElicitations, command }
  })
