/**
 * The command line's conventions, from the real `skald` binary as a user runs it (its output
 * piped, as in a script): no ANSI, help within 80 columns with usage lines that start with `skald`
 * and an example for every command of the tree, completion scripts that complete the right level,
 * global options anywhere before `--`, and unknown commands, a missing `--` and an unknown server
 * said as such (exit 2).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cli } from "@skald/server"
import * as Help from "@skald/server/cli/Help"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { runSkald } from "./cli-support.js"
import { makeHome } from "./host-support.js"

const ESC = "\x1b["

/** Every command of the tree: its words after `skald`. */
const commands = Help.all(Help.tree(Cli.command)).map((n) => n.path.slice(1))

describe("skald CLI conventions", () => {
  it("the tree is walked: every command, nested ones included", () => {
    const names = commands.map((c) => c.join(" "))
    for (
      const c of [
        "",
        "tools",
        "call",
        "mcp",
        "mcp add",
        "mcp show",
        "mcp call",
        "mcp logs",
        "secret set",
        "serve",
        "events"
      ]
    ) {
      assert.include(names, c)
    }
  })

  it("every command's help: plain text within 80 columns, usage starting with skald, an example", async () => {
    for (const words of commands) {
      const r = await runSkald([...words, "--help"], { env: { NO_COLOR: "" } })
      const what = `skald ${words.join(" ")} --help`
      assert.strictEqual(r.status, 0, `${what}: ${r.stderr}`)
      assert.notInclude(r.stdout + r.stderr, ESC, what)
      for (const line of r.stdout.split("\n")) assert.isAtMost(line.length, 80, `${what}: ${JSON.stringify(line)}`)
      const usage = /^Usage: (.*)$/m.exec(r.stdout)
      assert.isNotNull(usage, what)
      assert.match(usage![1]!, new RegExp(`^skald${words.length > 0 ? ` ${words.join(" ")}` : ""}( |$)`), what)
      const examples = /^Examples:\n((?: {2}.*\n?)+)/m.exec(r.stdout)
      assert.isNotNull(examples, `${what} has an example`)
      // Each example starts at 2 columns (a long one continues at 4 after a shell-style ` \`).
      const starts = examples![1]!.split("\n").filter((l) => /^ {2}\S/.test(l))
      assert.isAbove(starts.length, 0, what)
      for (const example of starts) assert.match(example.trim(), /^(skald |echo .*\| skald |printf .*\| skald )/, what)
    }
  }, 300_000)

  it("NO_COLOR=1 or piped: no ANSI in help, errors or results", async () => {
    for (const env of [{ NO_COLOR: "1" }, { NO_COLOR: "" }]) {
      for (const args of [["mcp", "--help"], ["mcp", "add"], ["tools", "--nosuch"]]) {
        const r = await runSkald(args, { env })
        assert.notInclude(r.stdout + r.stderr, ESC, `${args.join(" ")} ${JSON.stringify(env)}`)
        assert.isAbove(r.stdout.length + r.stderr.length, 0)
      }
    }
  }, 120_000)

  it("colour only on a terminal without NO_COLOR; the width is the terminal's, else 80", () => {
    const saved = process.env.NO_COLOR
    try {
      const tty = { isTTY: true, columns: 120 } as unknown as NodeJS.WriteStream
      const pipe = { isTTY: false } as unknown as NodeJS.WriteStream
      delete process.env.NO_COLOR
      assert.isTrue(Help.colourAllowed(tty))
      assert.isFalse(Help.colourAllowed(pipe))
      process.env.NO_COLOR = "1"
      assert.isFalse(Help.colourAllowed(tty))
      assert.strictEqual(Help.widthOf(tty), 120)
      assert.strictEqual(Help.widthOf(pipe), 80)
      const root = Help.tree(Cli.command)
      const add = Help.locate(root, ["mcp", "add"]).node
      assert.include(Help.render(add, 80, Cli.VERSION, true), ESC)
      const narrow = Help.render(add, 50, Cli.VERSION, false)
      assert.notInclude(narrow, ESC)
      for (const line of narrow.split("\n")) assert.isAtMost(line.length, 50, line)
    } finally {
      if (saved === undefined) delete process.env.NO_COLOR
      else process.env.NO_COLOR = saved
    }
  })

  it("an unknown command says so and lists the commands of that level (exit 2)", async () => {
    const r = await runSkald(["mcp", "foo"])
    assert.strictEqual(r.status, 2)
    assert.include(r.stderr, "has no command 'foo'")
    for (const name of ["add", "show", "list", "call", "logs", "import"]) assert.include(r.stderr, name)
    assert.notInclude(r.stderr, "serve", "the mcp commands, not the top level's")
    const top = await runSkald(["nosuch"])
    assert.strictEqual(top.status, 2)
    assert.include(top.stderr, "'nosuch'")
    assert.include(top.stderr, "mcp")
  })

  it("a server command line without `--` gets a hint (exit 2)", async () => {
    const r = await runSkald(["tools", "node", "server.js"])
    assert.strictEqual(r.status, 2)
    assert.include(r.stderr, "'node'")
    assert.include(r.stderr, "`skald tools -- node server.js`")
  })

  it("global options anywhere before `--`: --log-level and --home after the command's options", async () => {
    const home = makeHome()
    for (
      const args of [
        ["mcp", "list", "--json", "--log-level", "debug", "--home", home],
        ["--log-level=debug", "mcp", "list", "--home", home, "--json"],
        ["--home", home, "mcp", "--log-level", "debug", "list", "--json"]
      ]
    ) {
      const r = await runSkald(args)
      assert.strictEqual(r.status, 0, `${args.join(" ")}: ${r.stderr}`)
      assert.deepStrictEqual(JSON.parse(r.stdout), [])
      assert.include(r.stderr, "skald: debug:", "debug lines show")
      assert.isTrue(Fs.existsSync(Path.join(home, "data")), "the home given is used")
    }
    const noHome = await runSkald(["tools", "--home", home, "--", "node", "x.js"])
    assert.strictEqual(noHome.status, 2)
    assert.include(noHome.stderr, "--home does not apply to `skald tools`")
    const bad = await runSkald(["mcp", "list", "--log-level", "loud"])
    assert.strictEqual(bad.status, 2)
    assert.include(bad.stderr, "is not a level")
  }, 120_000)

  it("a start timeout names SKALD_MCP_START_TIMEOUT, for a one-off server and a registered one", async () => {
    const env = { SKALD_MCP_START_TIMEOUT: "1" }
    const silent = ["node", "-e", "setInterval(() => {}, 1000)"]
    const oneOff = await runSkald(["tools", "--", ...silent], { env })
    assert.strictEqual(oneOff.status, 2)
    assert.include(oneOff.stderr, "did not answer initialize within 1 s")
    assert.include(oneOff.stderr, "SKALD_MCP_START_TIMEOUT")
    const home = makeHome()
    assert.strictEqual((await runSkald(["mcp", "add", "quiet", "--home", home, "--", ...silent])).status, 0)
    const registered = await runSkald(["mcp", "tools", "quiet", "--home", home], { env })
    assert.strictEqual(registered.status, 2)
    assert.include(registered.stderr, "'quiet' did not start within 1 s")
    assert.include(registered.stderr, "SKALD_MCP_START_TIMEOUT")
    assert.include(registered.stderr, "skald: the start timeout is SKALD_MCP_START_TIMEOUT (seconds, default 120)")
  }, 120_000)

  it("`mcp logs` of a server never registered exits 2 with a message", async () => {
    const r = await runSkald(["mcp", "logs", "nosuch", "--home", makeHome()])
    assert.strictEqual(r.status, 2)
    assert.include(r.stderr, "no MCP server named 'nosuch'")
    // The error names no command; the command line's hint, on the next line, does.
    assert.strictEqual(r.stderr.trim().split("\n")[1], "skald: `skald mcp list` shows the registered servers")
  })

  it("bash completion of `skald mcp <TAB>` offers mcp's commands; of `skald <TAB>` the top level", async () => {
    const r = await runSkald(["--completions", "bash"])
    assert.strictEqual(r.status, 0, r.stderr)
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-completion-"))
    const script = Path.join(dir, "skald.bash")
    Fs.writeFileSync(script, r.stdout)
    const complete = (line: ReadonlyArray<string>) =>
      execFileSync("bash", [
        "-c",
        [
          `source ${JSON.stringify(script)}`,
          `COMP_WORDS=(${line.map((w) => JSON.stringify(w)).join(" ")})`,
          `COMP_CWORD=${line.length - 1}`,
          "_skald_completions",
          "printf '%s\\n' \"${COMPREPLY[@]}\""
        ].join("\n")
      ], { encoding: "utf8" }).trim().split("\n").filter((l) => l.length > 0).sort()
    assert.deepStrictEqual(complete(["skald", "mcp", ""]), [
      "--help",
      "--log-level",
      "add",
      "call",
      "disable",
      "enable",
      "import",
      "list",
      "login",
      "logout",
      "logs",
      "prompt",
      "prompts",
      "read",
      "resources",
      "restart",
      "rm",
      "show",
      "tools"
    ])
    assert.includeMembers(complete(["skald", ""]), [
      "tools",
      "call",
      "resources",
      "read",
      "prompts",
      "prompt",
      "mcp",
      "secret",
      "serve",
      "events"
    ])
    assert.notInclude(complete(["skald", ""]), "add")
    assert.deepStrictEqual(complete(["skald", "mcp", "sh"]), ["show"])
    assert.includeMembers(complete(["skald", "mcp", "add", "--"]), ["--replace", "--secret-env", "--home"])
    assert.includeMembers(complete(["skald", "--log-level", "debug", "mcp", "a"]), ["add"])
    for (const shell of ["zsh", "fish"]) {
      const s = await runSkald(["--completions", shell])
      assert.strictEqual(s.status, 0, s.stderr)
      assert.include(
        s.stdout,
        "add show list tools call resources read prompts prompt enable disable restart rm login logout logs import"
      )
    }
    Fs.rmSync(dir, { recursive: true })
  }, 120_000)
})
