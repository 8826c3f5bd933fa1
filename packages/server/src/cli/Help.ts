/**
 * The command line's conventions where @effect/cli's own do not fit (docs/cli.md, *Conventions*):
 * help as plain text wrapped to the terminal (80 columns when piped) with usage lines that start
 * with `skald` and an example for every command; completion scripts that complete the right
 * level; global options (`--home`, `--log-level`) anywhere before `--`; unknown commands named
 * with the commands on offer. @effect/cli 0.77 colours its help and errors unconditionally, prints
 * usage as `$ <leaf> …`, builds bash completions that only ever reach the first level, and accepts
 * `--log-level` only before a command's own options: so help, completions and those checks run
 * here, before it parses, and what it prints itself (parse errors) goes through `plainErrors`.
 *
 * @since 0.1.0
 */
import { HelpDoc } from "@effect/cli"
import * as CliConfig from "@effect/cli/CliConfig"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import type * as Span from "@effect/cli/HelpDoc/Span"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as LogLevel from "effect/LogLevel"
import * as Util from "node:util"

// --- describing a command ----------------------------------------------------------------

/** What a command's help says beyond its options: a summary, usage lines, examples. */
export interface About {
  /** One sentence: what the command does (shown in its parent's command list too). */
  readonly summary: string
  /** More paragraphs. */
  readonly details?: ReadonlyArray<string> | undefined
  /** Usage lines, each starting with `skald`. */
  readonly usage: ReadonlyArray<string>
  /** At least one example command line, each starting with `skald`. */
  readonly examples: ReadonlyArray<string>
}

/** A command's description as @effect/cli keeps it (`Command.withDescription(Help.about({…}))`). */
export const about = (a: About): HelpDoc.HelpDoc =>
  HelpDoc.blocks([
    HelpDoc.p(a.summary),
    ...(a.details ?? []).map((d) => HelpDoc.p(d)),
    HelpDoc.h2("USAGE"),
    ...a.usage.map((u) => HelpDoc.p(u)),
    HelpDoc.h2("EXAMPLES"),
    ...a.examples.map((e) => HelpDoc.p(e))
  ])

// --- the command tree ----------------------------------------------------------------------

/** A command of the tree, with what its help says, section by section. */
export interface Node {
  readonly name: string
  /** The words that run it, from `skald`: `["skald", "mcp", "add"]`. */
  readonly path: ReadonlyArray<string>
  readonly sections: ReadonlyMap<string, ReadonlyArray<HelpDoc.HelpDoc>>
  readonly children: ReadonlyArray<Node>
}

const config = CliConfig.make({ showBuiltIns: false })

interface Instruction {
  readonly _tag: "Standard" | "GetUserInput" | "Map" | "Subcommands"
  readonly name?: string
  readonly command?: Instruction
  readonly parent?: Instruction
  readonly children?: ReadonlyArray<Instruction>
}

/** A help document's blocks, split at its headers ("" holds what comes before the first). */
const sectionsOf = (doc: HelpDoc.HelpDoc): Map<string, Array<HelpDoc.HelpDoc>> => {
  const sections = new Map<string, Array<HelpDoc.HelpDoc>>()
  let current = ""
  const walk = (d: HelpDoc.HelpDoc): void => {
    switch (d._tag) {
      case "Empty":
        return
      case "Sequence":
        walk(d.left)
        walk(d.right)
        return
      case "Header":
        current = spanText(d.value)
        if (!sections.has(current)) sections.set(current, [])
        return
      default: {
        const list = sections.get(current) ?? []
        list.push(d)
        sections.set(current, list)
      }
    }
  }
  walk(doc)
  return sections
}

/**
 * The tree of a command. @effect/cli's public `getSubcommands` goes one level deep only, so this
 * walks its descriptor (a `Standard`, `Map` or `Subcommands` node; 0.77's shape) and asks the
 * public `getHelp` of each node.
 */
export const tree = (command: { readonly descriptor: unknown }): Node => {
  const walk = (d: Instruction, path: ReadonlyArray<string>): Node => {
    switch (d._tag) {
      case "Map":
        return walk(d.command!, path)
      case "Subcommands": {
        const parent = walk(d.parent!, path)
        return { ...parent, children: d.children!.map((c) => walk(c, parent.path)) }
      }
      default: {
        const name = d.name!
        const help = Descriptor.getHelp(d as unknown as Descriptor.Command<unknown>, config)
        return { name, path: [...path, name], sections: sectionsOf(help), children: [] }
      }
    }
  }
  return walk(command.descriptor as unknown as Instruction, [])
}

/** The node at `words` (command names from the root's children on), and how many words it took. */
export const locate = (root: Node, words: ReadonlyArray<string>): { readonly node: Node; readonly used: number } => {
  let node = root
  let used = 0
  for (const word of words) {
    const child = node.children.find((c) => c.name === word)
    if (child === undefined) break
    node = child
    used++
  }
  return { node, used }
}

/** Every node, depth first. */
export const all = (root: Node): ReadonlyArray<Node> => [root, ...root.children.flatMap(all)]

// --- plain text ----------------------------------------------------------------------------

const spanText = (span: Span.Span): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
    default:
      return spanText(span.value)
  }
}

/** Words wrapped to `width` columns, every line indented by `indent` spaces. */
export const wrap = (text: string, width: number, indent = 0): string => {
  const room = Math.max(20, width - indent)
  const pad = " ".repeat(indent)
  const lines: Array<string> = []
  for (const paragraph of text.split("\n")) {
    let line = ""
    for (let word of paragraph.split(/\s+/).filter((w) => w.length > 0)) {
      while (word.length > room) {
        if (line.length > 0) lines.push(line)
        lines.push(word.slice(0, room))
        word = word.slice(room)
        line = ""
      }
      if (line.length === 0) line = word
      else if (line.length + 1 + word.length <= room) line += ` ${word}`
      else {
        lines.push(line)
        line = word
      }
    }
    lines.push(line)
  }
  return lines.map((l) => l.length === 0 ? "" : pad + l).join("\n")
}

/** Paragraphs @effect/cli adds to every option that say nothing about it. */
const boilerplate = [
  /^A user-defined piece of text\.$/,
  /^A true or false value\.$/,
  /^A floating point number\.$/,
  /^An integer\.$/,
  /^This setting is optional\.$/,
  /^A file or directory that must exist\.$/,
  /^A file that must exist\.$/,
  /^One of the following: /,
  /^- May be specified (a single time|multiple times): /
]

/** Options.keyValueMap's paragraph: the option takes K=V pairs. */
const keyValueParagraph = /^This setting is a property argument which:$/

const shorter = (p: string) => p.replace(/^This option may be repeated zero or more times\.$/, "Repeatable.")

const paragraphs = (doc: HelpDoc.HelpDoc): Array<string> => {
  switch (doc._tag) {
    case "Empty":
    case "Header":
      return []
    case "Paragraph":
      return [spanText(doc.value)]
    case "Sequence":
      return [...paragraphs(doc.left), ...paragraphs(doc.right)]
    case "Enumeration":
      return doc.elements.flatMap(paragraphs).map((p) => `- ${p}`)
    case "DescriptionList":
      return doc.definitions.flatMap(([term, d]) => [spanText(term), ...paragraphs(d)])
  }
}

/** The entries of an ARGUMENTS or OPTIONS section: term and what it says. */
const entries = (blocks: ReadonlyArray<HelpDoc.HelpDoc>): Array<readonly [string, string]> =>
  blocks.flatMap((b) =>
    b._tag === "DescriptionList"
      ? b.definitions.map(([term, doc]) => {
        const name = spanText(term).replace(/^\((.*)\)$/, "$1").replace(/ text\b/, " TEXT").replace(/ float\b/, " S")
          .replace(/ integer\b/, " N").replace(/ \/path\/to\/file\b/, " FILE")
        const all = paragraphs(doc)
        const keyValue = all.some((p) => keyValueParagraph.test(p))
        const said = all.filter((p) => !boilerplate.some((re) => re.test(p))).map((p) =>
          keyValueParagraph.test(p) ? "Repeatable." : shorter(p)
        )
        const shown = name.replace(/^<(.*)>$/, "$1")
        return [keyValue ? shown.replace(/ TEXT$/, " K=V") : shown, said.join(" ")] as const
      })
      : []
  )

const firstParagraph = (node: Node): string => {
  const description = node.sections.get("DESCRIPTION") ?? []
  const first = description.find((b) => b._tag === "Paragraph")
  return first === undefined ? "" : paragraphs(first)[0] ?? ""
}

/** The option names a command accepts (`--json`, `-f`, …), built-ins excluded. */
export const optionNames = (node: Node): ReadonlyArray<string> =>
  entries(node.sections.get("OPTIONS") ?? []).flatMap(([term]) => term.match(/--?[A-Za-z][\w-]*/g) ?? [])

/** The paragraphs of one section of a command's help. */
const lines = (node: Node, section: string) => (node.sections.get(section) ?? []).flatMap(paragraphs)

/** The usage lines of a command. */
export const usageOf = (node: Node): ReadonlyArray<string> => {
  const given = lines(node, "USAGE")
  if (given.length > 0) return given
  const words = node.path.join(" ")
  return node.children.length > 0 ? [`${words} COMMAND [options]`] : [`${words} [options]`]
}

/** The examples of a command. */
export const examplesOf = (node: Node): ReadonlyArray<string> => lines(node, "EXAMPLES")

/** An example command line: indented 2, broken shell-style (` \\`, then indented 4) when too long. */
const example = (line: string, width: number): string => {
  const lines = wrap(line, width - 2, 4).split("\n").map((l) => l.trimStart())
  return lines.map((l, i) => `${i === 0 ? "  " : "    "}${l}${i < lines.length - 1 ? " \\" : ""}`).join("\n")
}

/**
 * The help of a command, `width` columns wide: plain text, with the section titles in bold when
 * `colour` (see `colourAllowed`).
 */
export const render = (node: Node, width: number, version: string, colour = false): string => {
  const out: Array<string> = []
  const title = (t: string) => colour ? `\x1b[1m${t}\x1b[0m` : t
  const usage = usageOf(node)
  out.push(
    usage.map((u, i) => `${i === 0 ? title("Usage:") + " " : "       "}${wrap(u, width, 7).slice(7)}`).join("\n")
  )
  const description = (node.sections.get("DESCRIPTION") ?? []).flatMap(paragraphs)
  if (node.path.length === 1) description.unshift(`skald ${version}`)
  if (description.length > 0) out.push(description.map((p) => wrap(p, width)).join("\n\n"))
  const table = (name: string, rows: ReadonlyArray<readonly [string, string]>) => {
    if (rows.length === 0) return
    const termWidth = Math.min(24, Math.max(...rows.map(([t]) => t.length)))
    out.push(
      `${title(name)}:\n` + rows.map(([term, said]) => {
        // A term wider than the page (an option with long choices) wraps at its spaces.
        const long = `  ${wrap(term, width, 4).slice(4)}`
        if (said.length === 0) return long
        if (term.length <= termWidth && width - termWidth - 4 >= 30) {
          const body = wrap(said, width, termWidth + 4).slice(termWidth + 4)
          return `  ${term.padEnd(termWidth)}  ${body}`
        }
        return `${long}\n${wrap(said, width, 6)}`
      }).join("\n")
    )
  }
  table("Arguments", entries(node.sections.get("ARGUMENTS") ?? []))
  table("Commands", node.children.map((c) => [c.name, firstParagraph(c)] as const))
  table("Options", entries(node.sections.get("OPTIONS") ?? []))
  table("Global options", [
    ["--log-level LEVEL", "all, trace, debug, info, warning (default), error, fatal or none: what shows on stderr."],
    ["-h, --help", "Show this help."],
    ...(node.path.length === 1
      ? [
        ["--version", "Print the version."] as const,
        ["--completions SHELL", "Print a completion script for bash, zsh or fish."] as const
      ]
      : [])
  ])
  const examples = examplesOf(node)
  if (examples.length > 0) out.push(`${title("Examples")}:\n${examples.map((e) => example(e, width)).join("\n")}`)
  return `${out.join("\n\n")}\n`
}

// --- colour and width ----------------------------------------------------------------------

/** True when ANSI may be written to `stream`: a terminal, and no `NO_COLOR`. */
export const colourAllowed = (stream: NodeJS.WriteStream): boolean =>
  stream.isTTY === true && (process.env.NO_COLOR ?? "") === ""

/** The width help is wrapped to: the terminal's, 80 when not a terminal. */
export const widthOf = (stream: NodeJS.WriteStream): number =>
  stream.isTTY === true && typeof stream.columns === "number" && stream.columns > 0 ? stream.columns : 80

/**
 * Runs `effect` with @effect/cli's own messages (it writes parse errors with `Console.error`,
 * coloured) as plain `skald: …` lines on stderr, with a hint when an argument was not expected.
 */
export const plainErrors = <A, E, R>(effect: Effect.Effect<A, E, R>, hint: (text: string) => string | undefined) =>
  Effect.flatMap(Console.consoleWith((console) => Effect.succeed(console)), (console) =>
    Effect.withConsole(effect, {
      ...console,
      error: (...args: ReadonlyArray<unknown>) =>
        Effect.sync(() => {
          const text = Util.stripVTControlCharacters(args.map(String).join(" ")).trim()
          if (text.length === 0) return
          const said = text.split(/\n+/).map((l) => l.trim()).filter((l) => l.length > 0).join(" ")
          const extra = hint(said)
          process.stderr.write(`skald: ${said}\n${extra === undefined ? "" : `skald: ${extra}\n`}`)
        }),
      unsafe: {
        ...console.unsafe,
        error: (...args) =>
          void process.stderr.write(`skald: ${Util.stripVTControlCharacters(args.map(String).join(" "))}\n`)
      }
    }))

// --- global options ------------------------------------------------------------------------

/** The log levels `--log-level` takes. */
export const LOG_LEVELS: Record<string, LogLevel.LogLevel> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None
}

/** What the command line asks before @effect/cli parses it. */
export type Prepared =
  | { readonly _tag: "Help"; readonly node: Node }
  | { readonly _tag: "Completions"; readonly shell: string }
  | { readonly _tag: "Problem"; readonly message: string }
  | {
    readonly _tag: "Run"
    /** argv for @effect/cli, the global options moved where it accepts them. */
    readonly argv: ReadonlyArray<string>
    readonly logLevel: LogLevel.LogLevel | undefined
    readonly node: Node
  }

/** Takes `--name VALUE` / `--name=VALUE` out of `argv` (the last one given wins). */
const takeOption = (argv: Array<string>, name: string): { value: string | undefined; missing: boolean } => {
  let value: string | undefined
  let missing = false
  for (let i = 0; i < argv.length;) {
    const word = argv[i]!
    if (word === `--${name}`) {
      if (i + 1 >= argv.length) {
        missing = true
        argv.splice(i, 1)
        continue
      }
      value = argv[i + 1]
      argv.splice(i, 2)
    } else if (word.startsWith(`--${name}=`)) {
      value = word.slice(name.length + 3)
      argv.splice(i, 1)
    } else i++
  }
  return { value, missing }
}

/**
 * Reads the command line (argv before `--`) as far as the conventions go: help, completions,
 * unknown commands, a group without its command, and the global options wherever they are.
 */
export const prepare = (root: Node, own: ReadonlyArray<string>): Prepared => {
  const argv = [...own]
  const completions = takeOption(argv, "completions")
  if (completions.value !== undefined || completions.missing) {
    return { _tag: "Completions", shell: completions.value ?? "" }
  }
  const level = takeOption(argv, "log-level")
  if (level.missing) {
    return { _tag: "Problem", message: `--log-level takes one of ${Object.keys(LOG_LEVELS).join(", ")}` }
  }
  const logLevel = level.value === undefined ? undefined : LOG_LEVELS[level.value.toLowerCase()]
  if (level.value !== undefined && logLevel === undefined) {
    return {
      _tag: "Problem",
      message: `--log-level ${JSON.stringify(level.value)} is not a level: use one of ${
        Object.keys(LOG_LEVELS).join(", ")
      }`
    }
  }
  const home = takeOption(argv, "home")
  if (home.missing) return { _tag: "Problem", message: "--home takes a folder, e.g. --home ~/skald" }
  // The command words: every word up to the first that is not a command of the level reached.
  const positional = argv.filter((w) => !w.startsWith("-"))
  const { node, used } = locate(root, positional)
  if (argv.includes("--help") || argv.includes("-h")) return { _tag: "Help", node }
  if (argv.includes("--version") && node === root) return { _tag: "Run", argv, logLevel, node }
  // A group with options of its own (`skald inbox [--json] [--token T]`) also runs without a
  // command: @effect/cli parses it (an option's value is not a command word).
  if (node.children.length > 0 && optionNames(node).length === 0) {
    const next = positional[used]
    const names = node.children.map((c) => c.name).join(", ")
    const words = node.path.join(" ")
    return next === undefined
      ? { _tag: "Problem", message: `\`${words}\` needs a command: ${names} (\`${words} --help\` says more)` }
      : { _tag: "Problem", message: `\`${words}\` has no command '${next}': use one of ${names}` }
  }
  if (home.value !== undefined) {
    if (!optionNames(node).includes("--home")) {
      return { _tag: "Problem", message: `--home does not apply to \`${node.path.join(" ")}\` (it uses no home)` }
    }
    // After the command words, where the command's own options go.
    const at = argv.indexOf(node.name) + 1
    argv.splice(at, 0, "--home", home.value)
  }
  return { _tag: "Run", argv, logLevel, node }
}

// --- completion scripts --------------------------------------------------------------------

const words = (node: Node): string =>
  [
    ...node.children.map((c) => c.name),
    ...optionNames(node),
    "--help",
    "--log-level",
    ...(node.path.length === 1 ? ["--version", "--completions"] : [])
  ]
    .join(" ")

/** The levels of the tree as `path` (command words after `skald`, space-separated) → words to offer. */
const levels = (root: Node) => all(root).map((n) => ({ path: n.path.slice(1).join(" "), node: n, offer: words(n) }))

/** A completion script for `shell` (bash, zsh or fish), or undefined for another shell. */
export const completions = (root: Node, shell: string): string | undefined => {
  const all = levels(root)
  const steps = all.flatMap(({ node, path }) =>
    node.children.map((c) => ({ from: path, word: c.name, to: [path, c.name].filter((p) => p.length > 0).join(" ") }))
  )
  switch (shell) {
    case "bash":
    case "sh":
      return [
        "# skald completions for bash: source this file, e.g. `source <(skald --completions bash)`",
        "_skald_completions() {",
        "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" path=\"\" word i",
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        "        word=\"${COMP_WORDS[i]}\"",
        "        # After `--` comes the server's command line: complete files.",
        "        if [[ \"$word\" == \"--\" ]]; then COMPREPLY=($(compgen -f -- \"$cur\")); return 0; fi",
        "        case \"$path|$word\" in",
        ...steps.map((s) => `            "${s.from}|${s.word}") path="${s.to}" ;;`),
        "        esac",
        "    done",
        "    local offer=\"\"",
        "    case \"$path\" in",
        ...all.map((l) => `        "${l.path}") offer="${l.offer}" ;;`),
        "    esac",
        "    COMPREPLY=($(compgen -W \"$offer\" -- \"$cur\"))",
        "}",
        "complete -o default -F _skald_completions skald",
        ""
      ].join("\n")
    case "zsh":
      return [
        "#compdef skald",
        "# skald completions for zsh: put this file on $fpath as _skald, or `source <(skald --completions zsh)`",
        "_skald() {",
        "    local path=\"\" word i",
        "    for ((i = 2; i < CURRENT; i++)); do",
        "        word=\"${words[i]}\"",
        "        if [[ \"$word\" == \"--\" ]]; then _files; return; fi",
        "        case \"$path|$word\" in",
        ...steps.map((s) => `            "${s.from}|${s.word}") path="${s.to}" ;;`),
        "        esac",
        "    done",
        "    local -a offer",
        "    case \"$path\" in",
        ...all.map((l) => `        "${l.path}") offer=(${l.offer}) ;;`),
        "    esac",
        "    compadd -- $offer",
        "}",
        "if (( $+functions[compdef] )); then compdef _skald skald; fi",
        ""
      ].join("\n")
    case "fish":
      return [
        "# skald completions for fish: `skald --completions fish > ~/.config/fish/completions/skald.fish`",
        "function __skald_path",
        "    set -l path skald",
        "    for word in (commandline -opc)[2..-1]",
        "        if test \"$word\" = \"--\"; echo \"--\"; return; end",
        "        switch \"$path|$word\"",
        ...steps.map((s) =>
          `            case 'skald${
            s.from.length > 0 ? ` ${s.from}` : ""
          }|${s.word}'\n                set path 'skald ${s.to}'`
        ),
        "        end",
        "    end",
        "    echo $path",
        "end",
        ...all.map((l) =>
          `complete -c skald -f -n 'test (__skald_path) = "skald${
            l.path.length > 0 ? ` ${l.path}` : ""
          }"' -a '${l.offer}'`
        ),
        ""
      ].join("\n")
    default:
      return undefined
  }
}
