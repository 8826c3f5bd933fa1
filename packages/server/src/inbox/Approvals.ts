/**
 * The approval gate (docs/inbox.md, *Approvals*): every tool call the agent makes passes `check`
 * before it runs. The rules (ApprovalRules.ts) decide `allow`, `deny` or `ask`; an `ask` becomes,
 * by the gate's mode:
 *
 * - `ask`: an `Approval` item in the inbox, and the call waits for the person's answer — `Approve`
 *   runs it (`always: true` also stores an `allow` rule for that exact tool, so the next call runs
 *   without asking), `Deny` (or the deadline passing) refuses it. Interrupting the wait (a stopped
 *   turn) withdraws the item;
 * - `allow`: it runs (no person is there, and the caller chose to trust the agent);
 * - `deny`: it is refused (no person is there).
 *
 * A refused call does not run: the loop records it `denied` and the model reads `deniedResult`.
 *
 * @since 0.1.0
 */
import { InboxItem } from "@skald/domain"
import * as Span from "@skald/mcp/internal/span"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { CorruptRow, DatabaseError } from "../host/HostError.js"
import { ApprovalRules, type Decision, type Verdict } from "./ApprovalRules.js"
import { Inbox } from "./Inbox.js"

/** What an `ask` becomes: a question in the inbox, or, when no person is there, allowed or denied. */
export const Mode = Schema.Literal("ask", "allow", "deny")
export type Mode = typeof Mode.Type

/** The gate's settings. */
export interface Options {
  /** What an `ask` becomes (default `ask`: the inbox). */
  readonly mode?: Mode | undefined
  /** How long an approval waits for its answer before it is denied (default 5 minutes). */
  readonly deadline?: Duration.DurationInput | undefined
}

/** The defaults of `Options`. */
export const defaults = { mode: "ask" as Mode, deadline: "5 minutes" as Duration.DurationInput } as const

/** A tool call at the gate. */
export interface Call {
  /** The qualified name (`mcp__<server>__<tool>`) or a built-in's. */
  readonly name: string
  readonly arguments: unknown
  /** The tool's MCP annotations (hints), if any. */
  readonly annotations?: Readonly<Record<string, unknown>> | undefined
  /** Who asks: the session, the server, the call. */
  readonly origin: InboxItem.Origin
}

/** Who refused a call. */
export type DeniedBy =
  /** A `deny` rule. */
  | "rule"
  /** The person (or nobody, before the deadline). */
  | "person"
  /** The gate's mode `deny`: nobody was there to ask. */
  | "mode"

/** What the gate says of a call. */
export type Gate =
  | { readonly _tag: "Allowed"; readonly verdict: Verdict }
  | { readonly _tag: "Denied"; readonly verdict: Verdict; readonly by: DeniedBy }

/** The text the model reads for a refused call (it must not retry it). */
export const deniedResult = (call: Pick<Call, "name">, gate: Extract<Gate, { _tag: "Denied" }>): string => {
  const who = gate.by === "rule"
    ? `by the approval rule ${gate.verdict.rule ?? ""}`.trimEnd()
    : gate.by === "person"
    ? "by the person (or it was not answered in time)"
    : "because no person was there to approve it"
  return `The call to ${call.name} was denied ${who}; it did not run. Do not call it again with the same ` +
    "arguments: go on without it, or tell the person what you wanted to do and why."
}

/** The approval gate. */
export class Approvals extends Effect.Service<Approvals>()("@skald/server/Approvals", {
  dependencies: [ApprovalRules.Default],
  effect: (options: Options = {}) =>
    Effect.gen(function*() {
      const rules = yield* ApprovalRules
      const inbox = yield* Inbox
      const mode = options.mode ?? defaults.mode
      const deadline = options.deadline ?? defaults.deadline

      const allowed = (verdict: Verdict): Gate => ({ _tag: "Allowed", verdict })
      const denied = (verdict: Verdict, by: DeniedBy): Gate => ({ _tag: "Denied", verdict, by })

      /** An `ask` verdict put to the person (the inbox), who allows or refuses the call. */
      const askPerson = (call: Call, verdict: Verdict) =>
        Effect.gen(function*() {
          const answer = yield* inbox.ask({
            _tag: "Approval",
            origin: call.origin,
            tool: call.name,
            arguments: call.arguments,
            annotations: call.annotations ?? {},
            reason: verdict.reason
          }, { deadline })
          if (answer._tag !== "Approve") return denied(verdict, "person")
          // "Always allow this tool": an exact rule, so it outranks every glob (ApprovalRules.ts).
          if (answer.always) {
            yield* rules.set(call.name, "allow").pipe(
              Effect.catchTag(
                "InvalidApprovalPattern",
                (error) =>
                  Effect.logWarning(`this call was approved, but no rule can be stored for it: ${error.message}`)
              )
            )
          }
          return allowed(verdict)
        })

      /** The rules' verdict, then (for `ask`) the mode or the person. */
      const decided = (call: Call, verdict: Verdict): Effect.Effect<Gate, DatabaseError | CorruptRow> => {
        const decision: Decision = verdict.decision
        if (decision === "allow") return Effect.succeed(allowed(verdict))
        if (decision === "deny") return Effect.succeed(denied(verdict, "rule"))
        if (mode === "allow") return Effect.succeed(allowed(verdict))
        if (mode === "deny") return Effect.succeed(denied(verdict, "mode"))
        return askPerson(call, verdict)
      }

      /**
       * Whether `call` may run. It is on every call's path, so its `Approvals.check` span (with the
       * tool and the decision) is made only under an installed tracer (as the MCP client's are).
       */
      const check = (call: Call): Effect.Effect<Gate, DatabaseError | CorruptRow> =>
        Effect.withFiberRuntime((fiber) => {
          const gate = Effect.flatMap(
            rules.verdict({ name: call.name, annotations: { readOnlyHint: call.annotations?.readOnlyHint === true } }),
            (verdict) => decided(call, verdict)
          )
          if (!Span.isTraced(fiber)) return gate
          return Effect.tap(
            gate,
            (outcome) =>
              Effect.annotateCurrentSpan({ "approval.tool": call.name, "approval.decision": outcome.verdict.decision })
          ).pipe(Effect.withSpan("Approvals.check", { captureStackTrace: false }))
        })

      return { check, mode } as const
    })
}) {}

/**
 * The gate where no person is there to ask (tests, benches, scripts): an `ask` is allowed or
 * denied by `mode`; the rules still apply. Its inbox is its own (it is never asked).
 */
export const unattended = (mode: Exclude<Mode, "ask">) => Approvals.Default({ mode }).pipe(Layer.provide(Inbox.Default))
