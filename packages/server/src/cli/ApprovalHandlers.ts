/**
 * What `skald approvals list|set|rm` do (their options and help are in ApprovalCommands.ts; this
 * module is loaded when one of them runs, see Lazy.ts): thin over `ApprovalRules`, which holds the
 * rules and checks the patterns.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import { ApprovalRules } from "../inbox/ApprovalRules.js"
import type * as ApprovalCommands from "./ApprovalCommands.js"
import { UsageError } from "./CliError.js"
import * as Host from "./HostRuntime.js"
import { stderr, stdout } from "./Io.js"
import * as Output from "./Output.js"

const rulesLayer = (home: Option.Option<string>) => ApprovalRules.Default.pipe(Layer.provide(Host.layer(home)))

/** `skald approvals list`. */
export const list = ({ home, json }: ApprovalCommands.ListArgs) =>
  Effect.gen(function*() {
    const rules = yield* (yield* ApprovalRules).list
    if (json) return yield* stdout(Output.json(rules))
    if (rules.length === 0) {
      return yield* stderr("skald: no approval rules: read-only tools run, the others ask (docs/inbox.md)")
    }
    const width = Math.max(...rules.map((r) => r.pattern.length))
    yield* stdout(rules.map((r) => `${r.pattern.padEnd(width)}  ${r.decision.padEnd(5)}  ${r.createdAt}`).join("\n"))
  }).pipe(Effect.provide(rulesLayer(home)))

/** `skald approvals set`. */
export const set = ({ decision, home, pattern }: ApprovalCommands.SetArgs) =>
  Effect.gen(function*() {
    yield* (yield* ApprovalRules).set(pattern, decision)
    yield* stderr(`skald: ${pattern} → ${decision}`)
  }).pipe(Effect.provide(rulesLayer(home)))

/** `skald approvals rm`. */
export const rm = ({ home, pattern }: ApprovalCommands.RmArgs) =>
  Effect.gen(function*() {
    if (!(yield* (yield* ApprovalRules).remove(pattern))) {
      return yield* new UsageError({ message: `no approval rule for ${pattern}; see \`skald approvals list\`` })
    }
    yield* stderr(`skald: removed the rule for ${pattern}`)
  }).pipe(Effect.provide(rulesLayer(home)))
