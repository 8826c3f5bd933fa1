/**
 * `skald secret set|list|rm`: the secret store. Values are read from stdin (one trailing newline
 * stripped) or a masked prompt on a terminal — never from argv, which other users can see. The
 * commands and their options; what they do is in SecretHandlers.ts.
 *
 * @since 0.1.0
 */
import { Args, Command } from "@effect/cli"
import * as Help from "./Help.js"
import * as Host from "./Host.js"
import * as Lazy from "./Lazy.js"

const secretName = Args.text({ name: "NAME" }).pipe(
  Args.withDescription("The secret's name, as referenced by ${NAME}.")
)

const setConfig = { name: secretName, home: Host.home }

/** What `skald secret set` parsed. */
export type SetArgs = Command.Command.ParseConfig<typeof setConfig>

const set = Command.make("set", setConfig, Lazy.handler(() => import("./SecretHandlers.js"), (m) => m.set)).pipe(
  Command.withDescription(Help.about({
    summary: "Store a secret, read from stdin (one trailing newline stripped) or a masked prompt; never from argv.",
    usage: ["skald secret set [options] NAME"],
    examples: ["skald secret set WEATHER_TOKEN", "printf %s \"$TOKEN\" | skald secret set WEATHER_TOKEN"]
  }))
)

const listConfig = { home: Host.home }

/** What `skald secret list` parsed. */
export type ListArgs = Command.Command.ParseConfig<typeof listConfig>

const list = Command.make("list", listConfig, Lazy.handler(() => import("./SecretHandlers.js"), (m) => m.list)).pipe(
  Command.withDescription(Help.about({
    summary: "List the stored secrets' names (never their values).",
    usage: ["skald secret list [options]"],
    examples: ["skald secret list"]
  }))
)

const rmConfig = { name: secretName, home: Host.home }

/** What `skald secret rm` parsed. */
export type RmArgs = Command.Command.ParseConfig<typeof rmConfig>

const rm = Command.make("rm", rmConfig, Lazy.handler(() => import("./SecretHandlers.js"), (m) => m.rm)).pipe(
  Command.withDescription(Help.about({
    summary: "Delete a stored secret.",
    usage: ["skald secret rm [options] NAME"],
    examples: ["skald secret rm WEATHER_TOKEN"]
  }))
)

/** `skald secret …`. */
export const command = Command.make("secret").pipe(
  Command.withDescription(Help.about({
    summary: "Manage the secret store (secrets/vars/<NAME>, mode 0600).",
    usage: ["skald secret COMMAND [options]"],
    examples: ["skald secret set WEATHER_TOKEN", "skald secret list"]
  })),
  Command.withSubcommands([set, list, rm])
)
