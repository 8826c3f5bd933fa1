import { assert, describe, it } from "@effect/vitest"
import { execFile, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fixture } from "./fixtures/fixtures.js"
import { isAlive, readRecords } from "./support.js"

const root = Path.resolve(import.meta.dirname, "..")
const skald = Path.join(root, "packages/server/bin/skald.js")
const everything = [
  "node",
  Path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
  "stdio"
]

interface Run {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Run> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [skald, ...args],
      { cwd: root, env: { ...process.env, ...env } },
      (error, stdout, stderr) => {
        resolve({ status: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr })
      }
    )
  })

describe("skald CLI over stdio", () => {
  it("tools --json lists every tool as sent, including those registered after initialize", async () => {
    const r = await run(["tools", "--json", "--", ...everything])
    assert.strictEqual(r.status, 0, r.stderr)
    const tools = JSON.parse(r.stdout) as Array<
      { name: string; execution?: { taskSupport?: string }; outputSchema?: unknown }
    >
    const byName = new Map(tools.map((t) => [t.name, t]))
    assert.strictEqual(byName.get("simulate-research-query")?.execution?.taskSupport, "required")
    assert.isDefined(byName.get("get-structured-content")?.outputSchema)
    assert.isDefined(byName.get("echo"))
  })

  it("tools prints one tool a line, name first", async () => {
    const r = await run(["tools", "--", ...everything])
    assert.strictEqual(r.status, 0, r.stderr)
    const lines = r.stdout.trim().split("\n")
    assert.isTrue(lines.some((l) => l.startsWith("echo ") && l.includes("Echo")))
    assert.isTrue(lines.some((l) => l.startsWith("simulate-research-query")))
  })

  it("call prints structuredContent as pretty JSON", async () => {
    const r = await run([
      "call",
      "get-structured-content",
      "--args",
      "{\"location\":\"New York\"}",
      "--",
      ...everything
    ])
    assert.strictEqual(r.status, 0, r.stderr)
    const value = JSON.parse(r.stdout) as { temperature: number }
    assert.isNumber(value.temperature)
    assert.isTrue(r.stdout.includes("\n  \""), "pretty-printed")
  })

  it("call --json prints the CallToolResult as sent", async () => {
    const r = await run(["call", "echo", "--json", "--args", "{\"message\":\"hi\"}", "--", ...everything])
    assert.strictEqual(r.status, 0, r.stderr)
    assert.deepStrictEqual(JSON.parse(r.stdout), { content: [{ type: "text", text: "Echo: hi" }] })
  })

  it("call writes an image to --media-dir and prints its absolute link", async () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-media-"))
    const r = await run(["call", "get-tiny-image", "--media-dir", dir, "--", ...everything])
    assert.strictEqual(r.status, 0, r.stderr)
    const match = /!\[image\]\((\/[^)]+\.png)\) \(image\/png, [\d.]+ KB\)/.exec(r.stdout)
    assert.isNotNull(match, r.stdout)
    const file = match![1]!
    assert.strictEqual(Path.dirname(file), dir)
    const bytes = Fs.readFileSync(file)
    assert.deepStrictEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    Fs.rmSync(dir, { recursive: true })
  })

  it("passes everything after -- to the server untouched", async () => {
    // server-everything ignores unknown arguments; skald must not treat --help as its own.
    const r = await run(["call", "echo", "--args", "{\"message\":\"x\"}", "--", ...everything, "--help"])
    assert.strictEqual(r.status, 0, r.stderr)
    assert.strictEqual(r.stdout, "Echo: x\n")
  })

  it("an unknown tool exits 2 and names the tools on offer", async () => {
    const r = await run(["call", "no-such-tool", "--", ...everything])
    assert.strictEqual(r.status, 2)
    assert.strictEqual(r.stdout, "")
    assert.match(r.stderr.split("\n")[0]!, /has no tool 'no-such-tool'; it offers: echo/)
  })

  it("usage errors exit 2 with a message first", async () => {
    const bad = await run(["call", "echo", "--args", "[1]", "--", ...everything])
    assert.strictEqual(bad.status, 2)
    assert.match(bad.stderr.split("\n")[0]!, /--args must be a JSON object/)
    const none = await run(["call", "echo"])
    assert.strictEqual(none.status, 2)
    assert.match(none.stderr.split("\n")[0]!, /no MCP server given/)
    const unknownCommand = await run(["frobnicate"])
    assert.strictEqual(unknownCommand.status, 2)
  })

  it("a server command that does not exist exits 2 and says so", async () => {
    const r = await run(["tools", "--", "/nonexistent/mcp-server"])
    assert.strictEqual(r.status, 2)
    assert.match(r.stderr.split("\n")[0]!, /could not be started .*command not found/)
  })

  it("a timed-out call exits 2 with the timeout in the message", async () => {
    const r = await run([
      "call",
      "trigger-long-running-operation",
      "--timeout",
      "0.3",
      "--args",
      "{\"duration\":5,\"steps\":5}",
      "--",
      ...everything
    ])
    assert.strictEqual(r.status, 2)
    assert.match(r.stderr.split("\n")[0]!, /did not answer tools\/call within 0.3 s/)
  })

  it("Ctrl-C cancels the call on the server, exits 130 and leaves no server behind", async () => {
    const record = Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-cli-")), "record.jsonl")
    const server = fixture("cancel", { FIXTURE_RECORD: record })
    const child = spawn(process.execPath, [skald, "call", "wait", "--", server.command, ...server.args], {
      cwd: root,
      env: { ...process.env, FIXTURE_RECORD: record },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stderr = ""
    child.stderr.on("data", (d) => (stderr += String(d)))
    // Interrupt once the server has started the call.
    const started = await waitFor(() => readRecords(record).find((r) => r.event === "started" && r.tool === "wait"))
    const serverPid = childPids(child.pid!)[0]
    assert.isDefined(serverPid)
    child.kill("SIGINT")
    const status = await new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
    assert.strictEqual(status, 130, stderr)
    assert.deepStrictEqual(
      readRecords(record).filter((r) => r.event === "cancelled"),
      [{ event: "cancelled", requestId: started.requestId, reason: "cancelled by the client" }]
    )
    await waitFor(() => (isAlive(serverPid!) ? undefined : true))
  })

  it("a timeout reaches the server as notifications/cancelled with reason timeout", async () => {
    const record = Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-cli-")), "record.jsonl")
    const server = fixture("cancel", { FIXTURE_RECORD: record })
    const r = await run(["call", "wait", "--timeout", "0.5", "--", server.command, ...server.args], {
      FIXTURE_RECORD: record
    })
    assert.strictEqual(r.status, 2)
    assert.match(r.stderr.split("\n")[0]!, /did not answer tools\/call within 0.5 s/)
    const started = readRecords(record).find((e) => e.event === "started")
    assert.isDefined(started)
    assert.deepStrictEqual(
      readRecords(record).filter((e) => e.event === "cancelled"),
      [{ event: "cancelled", requestId: started!.requestId, reason: "timeout" }]
    )
  })

  it("a task tool shows its status on stderr while it polls and prints the result", async () => {
    const r = await run(["call", "simulate-research-query", "--args", "{\"topic\":\"x\"}", "--", ...everything])
    assert.strictEqual(r.status, 0, r.stderr)
    assert.include(r.stdout, "Research Report: x")
    const lines = r.stderr.trim().split("\n")
    assert.isTrue(lines.some((l) => /^task \w+: working — .+ \(\d+\.\d s\)$/.test(l)), r.stderr)
    assert.match(lines.at(-1)!, /^task \w+: completed/)
  })

  it("Ctrl-C during a task sends tasks/cancel for it and exits 130", async () => {
    const record = Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-cli-")), "record.jsonl")
    const server = fixture("tasks")
    const child = spawn(process.execPath, [skald, "call", "slow_task", "--", server.command, ...server.args], {
      cwd: root,
      env: { ...process.env, FIXTURE_RECORD: record },
      stdio: ["ignore", "pipe", "pipe"]
    })
    await waitFor(() => readRecords(record).find((r) => r.event === "received" && r.method === "tasks/get"))
    child.kill("SIGINT")
    const status = await new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
    assert.strictEqual(status, 130)
    const started = readRecords(record).find((r) => r.event === "started")!
    assert.deepStrictEqual(
      readRecords(record).filter((r) => r.event === "received" && r.method === "tasks/cancel").map((r) => r.params),
      [{ taskId: started.taskId }]
    )
  })

  it("a failed task exits 1 with its isError result, or 2 with its message when it has none", async () => {
    const server = fixture("tasks")
    const withResult = await run(["call", "fail_with_result", "--", server.command, ...server.args])
    assert.strictEqual(withResult.status, 1, withResult.stderr)
    assert.include(withResult.stdout, "the tool failed")
    const without = await run(["call", "fail_without_result", "--", server.command, ...server.args])
    assert.strictEqual(without.status, 2)
    assert.match(without.stderr.trim().split("\n").at(-1)!, /failed: fail_without_result: the work crashed/)
  })

  it("--elicit answers a form elicitation; defaults fill what it leaves out", async () => {
    const answer = JSON.stringify({ action: "accept", content: { name: "Ada Lovelace", check: true } })
    const r = await run(["call", "trigger-elicitation-request", "--elicit", answer, "--", ...everything])
    assert.strictEqual(r.status, 0, r.stderr)
    assert.include(r.stdout, "Name: Ada Lovelace")
    assert.include(r.stdout, "\"firstLine\": \"It was a dark and stormy night.\"")
    assert.match(r.stderr, /asks: Please provide inputs/)
  })

  it("--args @FILE reads the arguments from a file; an unreadable @FILE is a usage error naming it", async () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-args-"))
    const file = Path.join(dir, "args.json")
    Fs.writeFileSync(file, JSON.stringify({ message: "from a file" }))
    const ok = await run(["call", "echo", "--args", `@${file}`, "--", ...everything])
    assert.strictEqual(ok.status, 0, ok.stderr)
    assert.include(ok.stdout, "from a file")
    const missing = Path.join(dir, "missing.json")
    for (const option of ["args", "elicit"]) {
      const r = await run(["call", "echo", `--${option}`, `@${missing}`, "--", ...everything])
      assert.strictEqual(r.status, 2, r.stderr)
      assert.strictEqual(r.stderr.split("\n")[0], `skald: --${option}: cannot read the file ${missing}`)
    }
  })

  it("--elicit @FILE and @- read the answer from a file and from stdin", async () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-elicit-"))
    const file = Path.join(dir, "answer.json")
    Fs.writeFileSync(file, JSON.stringify({ action: "decline" }))
    const fromFile = await run(["call", "trigger-elicitation-request", "--elicit", `@${file}`, "--", ...everything])
    assert.strictEqual(fromFile.status, 0, fromFile.stderr)
    assert.include(fromFile.stdout, "declined")
    const child = spawn(process.execPath, [
      skald,
      "call",
      "trigger-elicitation-request",
      "--elicit",
      "@-",
      "--",
      ...everything
    ], {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    child.stdout.on("data", (d) => (stdout += String(d)))
    child.stdin.end(JSON.stringify({ action: "cancel" }))
    const status = await new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
    assert.strictEqual(status, 0)
    assert.include(stdout, "cancelled")
  })

  it("an --elicit answer that does not fit the form exits 2, prints no result and never echoes the value", async () => {
    const marker = "value-9f2c7e1b"
    const answer = JSON.stringify({ action: "accept", content: { name: marker, integer: "not a number" } })
    const r = await run(["call", "trigger-elicitation-request", "--elicit", answer, "--", ...everything])
    assert.strictEqual(r.status, 2)
    assert.strictEqual(r.stdout, "")
    assert.match(r.stderr, /--elicit does not fit the form .*'integer' must be a number/)
    assert.notInclude(r.stderr, marker)
    const bad = await run(["call", "echo", "--elicit", `{"secret": "${marker}"`, "--", ...everything])
    assert.strictEqual(bad.status, 2)
    assert.notInclude(bad.stderr, marker)
  })

  it("without --elicit and without a terminal, an elicitation is declined with a hint", async () => {
    const r = await run(["call", "trigger-elicitation-request", "--", ...everything])
    assert.strictEqual(r.status, 0, r.stderr)
    assert.include(r.stdout, "declined")
    assert.match(r.stderr, /declined — pass --elicit/)
  })

  it("a URL elicitation shows the URL on stderr; --elicit accept means it was opened", async () => {
    const answer = JSON.stringify({ action: "accept" })
    const r = await run([
      "call",
      "trigger-url-elicitation",
      "--args",
      JSON.stringify({ url: "http://127.0.0.1:9/consent" }),
      "--elicit",
      answer,
      "--",
      ...everything
    ])
    assert.strictEqual(r.status, 0, r.stderr)
    assert.match(r.stderr, /asks you to open http:\/\/127\.0\.0\.1:9\/consent/)
    assert.include(r.stdout, "User completed the URL elicitation flow")
  })

  it("after --elicit accepts a URL elicitation, the server's completion notification is reported", async () => {
    const server = fixture("elicit")
    const r = await run([
      "call",
      "url_flow",
      "--elicit",
      JSON.stringify({ action: "accept" }),
      "--",
      server.command,
      ...server.args
    ])
    assert.strictEqual(r.status, 0, r.stderr)
    assert.match(r.stderr, /asks you to open http:\/\/127\.0\.0\.1:\d+\//)
    assert.match(r.stderr, /the server says the URL flow .+ is complete/)
  })

  it("an isError result is printed on stdout and exits 1", async () => {
    const server = fixture("echo")
    const r = await run(["call", "fail", "--", server.command, ...server.args])
    assert.strictEqual(r.status, 1, r.stderr)
    assert.isAbove(r.stdout.trim().length, 0)
  })
})

const childPids = (pid: number): Array<number> => {
  const out: Array<number> = []
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = Fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      if (ppid === pid) out.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return out
}

/** Polls `probe` until it gives a value; a 30 s bound against a hang (a loaded machine starts tsx fixtures slowly). */
const waitFor = async <A>(probe: () => A | undefined): Promise<A> => {
  for (let i = 0; i < 600; i++) {
    const value = probe()
    if (value !== undefined) return value
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error("timed out waiting")
}
