/**
 * How `skald` starts: the shim (packages/server/bin/skald.js) answers `--version` and `--help`
 * from the bundle's record of the real CLI's output, runs the bundle while it is current and the
 * tsc output otherwise; the command tree loads none of the handlers' dependencies.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { root, runScript, runSkald, skald } from "./cli-support.js"

const server = Path.join(root, "packages/server")
const everything = [
  "node",
  Path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
  "stdio"
]
const tscMain = Path.join(server, "dist/cli/main.js")
const bundleDir = Path.join(server, "dist/bundle")

/** A shell word. */
const quote = (word: string) => `'${word.replace(/'/g, "'\\''")}'`

/**
 * Runs `node SCRIPT ARGS…` with stdout on a terminal `columns` wide (a pseudo-terminal made by
 * util-linux `script`), and returns what it printed there.
 */
const runOnTerminal = (
  script: string,
  args: ReadonlyArray<string>,
  columns: number,
  env: Record<string, string> = {}
) =>
  new Promise<string>((resolve, reject) => {
    const line = `stty cols ${columns}; exec ${[process.execPath, script, ...args].map(quote).join(" ")}`
    execFile("script", ["-qec", line, "/dev/null"], { cwd: root, env: { ...process.env, ...env } }, (error, stdout) =>
      error ? reject(error) : resolve(stdout))
  })

interface Fast {
  readonly stamps: Record<string, number>
}

describe("skald start-up", () => {
  it("--version, --help and -h through the shim print exactly what the CLI prints, from a current bundle", async () => {
    // test/globalSetup.ts built and bundled: the record is current, so the shim answers from it.
    const fast = JSON.parse(Fs.readFileSync(Path.join(bundleDir, "fast.json"), "utf8")) as Fast
    assert.deepStrictEqual(Object.keys(fast.stamps).sort(), [
      "../domain/build/tsconfig.src.tsbuildinfo",
      "../mcp/build/tsconfig.src.tsbuildinfo",
      "build/tsconfig.src.tsbuildinfo"
    ])
    for (const [file, mtimeMs] of Object.entries(fast.stamps)) {
      assert.strictEqual(Fs.statSync(Path.join(server, file)).mtimeMs, mtimeMs, file)
    }
    for (const args of [["--version"], ["--help"], ["-h"]]) {
      const live = await runScript(tscMain, args)
      assert.strictEqual(live.status, 0, live.stderr)
      assert.isAbove(live.stdout.length, 0)
      assert.deepStrictEqual(await runSkald(args), live, args.join(" "))
      assert.deepStrictEqual(await runScript(Path.join(bundleDir, "main.js"), args), live, `bundle ${args.join(" ")}`)
    }
    // On a terminal the help is the terminal's width (and coloured): the same as the live CLI's.
    for (const [columns, env] of [[120, { NO_COLOR: "" }], [60, { NO_COLOR: "1" }], [80, { NO_COLOR: "" }]] as const) {
      const live = await runOnTerminal(tscMain, ["--help"], columns, env)
      assert.strictEqual(await runOnTerminal(skald, ["--help"], columns, env), live, `a terminal ${columns} wide`)
      assert.notStrictEqual(
        live.replace(/\r\n/g, "\n"),
        (await runSkald(["--help"])).stdout,
        `a terminal ${columns} wide`
      )
    }
    // Anything else goes to the CLI itself.
    const sub = await runSkald(["tools", "--help"])
    assert.deepStrictEqual(sub, await runScript(tscMain, ["tools", "--help"]))
    assert.include(sub.stdout, "skald tools")
  })

  it("the shim runs the bundle only while it is current, and answers only a lone --version, --help or -h", async () => {
    // A package layout of its own: the real shim, stand-ins for the tsc output and the bundle.
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skald-shim-"))
    try {
      const pkg = Path.join(dir, "packages/server")
      const write = (file: string, text: string) => {
        Fs.mkdirSync(Path.dirname(Path.join(pkg, file)), { recursive: true })
        Fs.writeFileSync(Path.join(pkg, file), text)
      }
      write("bin/skald.js", Fs.readFileSync(skald, "utf8"))
      write("package.json", "{\"type\":\"module\"}")
      const echo = (who: string) =>
        `process.stdout.write(${JSON.stringify(who)} + " " + JSON.stringify(process.argv.slice(2)))\n`
      write("dist/cli/main.js", echo("tsc"))
      write("dist/bundle/main.js", echo("bundle"))
      const stampFiles = [
        "build/tsconfig.src.tsbuildinfo",
        "../mcp/build/tsconfig.src.tsbuildinfo",
        "../domain/build/tsconfig.src.tsbuildinfo"
      ]
      for (const file of stampFiles) write(file, "{}")
      const stamps = Object.fromEntries(stampFiles.map((f) => [f, Fs.statSync(Path.join(pkg, f)).mtimeMs]))
      const record = { stamps, version: { stdout: "9.9.9\n\n", status: 0 }, help: { stdout: "the help\n", status: 0 } }
      write("dist/bundle/fast.json", JSON.stringify(record))
      const shim = (...args: Array<string>) => runScript(Path.join(pkg, "bin/skald.js"), args)

      assert.strictEqual((await shim("--version")).stdout, "9.9.9\n\n")
      assert.strictEqual((await shim("--help")).stdout, "the help\n")
      assert.strictEqual((await shim("-h")).stdout, "the help\n")
      assert.strictEqual((await shim("tools", "--help")).stdout, "bundle [\"tools\",\"--help\"]")
      assert.strictEqual((await shim("--version", "--help")).stdout, "bundle [\"--version\",\"--help\"]")
      assert.strictEqual((await shim("--", "--version")).stdout, "bundle [\"--\",\"--version\"]")

      // The help was recorded piped (80 columns, no colour): a terminal of another width, or one
      // where help is coloured (no NO_COLOR), gets the live CLI's help.
      const onTerminal = (columns: number, env: Record<string, string>) =>
        runOnTerminal(Path.join(pkg, "bin/skald.js"), ["--help"], columns, env)
      assert.strictEqual(await onTerminal(120, { NO_COLOR: "1" }), "bundle [\"--help\"]")
      assert.strictEqual(await onTerminal(80, { NO_COLOR: "" }), "bundle [\"--help\"]")
      assert.strictEqual((await onTerminal(80, { NO_COLOR: "1" })).replace(/\r\n/g, "\n"), "the help\n")
      assert.strictEqual(
        (await runOnTerminal(Path.join(pkg, "bin/skald.js"), ["--version"], 120)).replace(/\r\n/g, "\n"),
        "9.9.9\n\n"
      )

      // A rebuild by tsc alone (a newer tsbuildinfo of any package): the bundle is stale.
      const later = new Date(Date.now() + 5000)
      Fs.utimesSync(Path.join(pkg, "../mcp/build/tsconfig.src.tsbuildinfo"), later, later)
      assert.strictEqual((await shim("--version")).stdout, "tsc [\"--version\"]")
      assert.strictEqual((await shim("tools")).stdout, "tsc [\"tools\"]")

      // No bundle at all.
      Fs.rmSync(Path.join(pkg, "dist/bundle"), { recursive: true })
      assert.strictEqual((await shim("--help")).stdout, "tsc [\"--help\"]")

      // No build at all: the hint, exit 2.
      Fs.rmSync(Path.join(pkg, "dist"), { recursive: true })
      const missing = await shim("--version")
      assert.strictEqual(missing.status, 2)
      assert.include(missing.stderr, "run `npm run build`")
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("the command tree loads no handler dependencies: no MCP client, SQLite or HTTP server before a command runs", () => {
    interface Meta {
      readonly outputs: Record<string, {
        readonly imports: ReadonlyArray<{ readonly path: string; readonly kind: string; readonly external?: boolean }>
        readonly inputs: Record<string, unknown>
        readonly entryPoint?: string
      }>
    }
    const meta = JSON.parse(Fs.readFileSync(Path.join(bundleDir, "meta.json"), "utf8")) as Meta
    /** Every input (and external) an output loads before its code runs: its static import closure. */
    const staticClosure = (output: string) => {
      const seen = new Set<string>()
      const loaded = new Set<string>()
      const visit = (file: string) => {
        if (seen.has(file)) return
        seen.add(file)
        const out = meta.outputs[file]!
        for (const input of Object.keys(out.inputs)) loaded.add(input)
        for (const i of out.imports) {
          if (i.kind !== "import-statement") continue
          if (i.external === true) loaded.add(`external:${i.path}`)
          else visit(i.path)
        }
      }
      visit(output)
      return [...loaded]
    }
    const outputFor = (entry: RegExp) => {
      const found = Object.keys(meta.outputs).find((f) =>
        f.endsWith(".js") && Object.keys(meta.outputs[f]!.inputs).some((i) => entry.test(i))
      )
      assert.isDefined(found, String(entry))
      return found!
    }
    const tree = staticClosure(outputFor(/packages\/server\/dist\/cli\/main\.js$/))
    const heavy = [
      /better-sqlite3/,
      /@effect\/sql/,
      /packages\/mcp\//,
      /server\/dist\/host\//,
      /NodeHttpServer/,
      /ssh2/
    ]
    for (const pattern of heavy) {
      assert.deepStrictEqual(tree.filter((i) => pattern.test(i)), [], `the command tree loads ${pattern}`)
    }
    assert.isTrue(tree.some((i) => /@effect\/cli/.test(i)))
    // `skald tools` and `skald call` add the MCP client, still no database or HTTP server.
    const client = staticClosure(outputFor(/packages\/server\/dist\/cli\/ClientHandlers\.js$/))
    assert.isTrue(client.some((i) => /packages\/mcp\/dist\/McpClient\.js$/.test(i)))
    for (const pattern of [/better-sqlite3/, /@effect\/sql/, /server\/dist\/host\//, /NodeHttpServer/, /ssh2/]) {
      assert.deepStrictEqual(client.filter((i) => pattern.test(i)), [], `skald tools loads ${pattern}`)
    }
    // The host commands do open the database, but not the serve process's graph — nor the agent's,
    // the TIC's or their model providers, behind the host's RPC handlers (the client of the host
    // needs only the groups' schemas: rpc/Rpcs.ts).
    const host = staticClosure(outputFor(/packages\/server\/dist\/cli\/McpHandlers\.js$/))
    assert.isTrue(host.some((i) => i === "external:better-sqlite3" || /sql-sqlite-node/.test(i)))
    assert.isTrue(host.some((i) => /server\/dist\/cli\/RpcHost\.js$/.test(i)))
    for (
      const pattern of [
        /server\/dist\/ServeLayer\.js$/,
        /NodeHttpServer/,
        /server\/dist\/rpc\/RpcServer\.js$/,
        /server\/dist\/agent\//,
        /server\/dist\/tic\//,
        /gpt-tokenizer/,
        /@effect\/ai/,
        /undici/
      ]
    ) {
      assert.deepStrictEqual(host.filter((i) => pattern.test(i)), [], `skald mcp loads ${pattern}`)
    }
    // `skald serve` loads its composition root (ServeLayer.ts), which brings the manager and the HTTP server.
    const serve = staticClosure(outputFor(/packages\/server\/dist\/cli\/ServeHandler\.js$/))
    for (const pattern of [/server\/dist\/ServeLayer\.js$/, /NodeHttpServer/, /server\/dist\/host\/McpManager\.js$/]) {
      assert.isTrue(serve.some((i) => pattern.test(i)), `skald serve loads ${pattern}`)
    }
    assert.deepStrictEqual(tree.filter((i) => /ServeLayer/.test(i)), [])
    // The OpenTelemetry SDK and exporters load only when an OTEL_* variable asks (Telemetry.ts):
    // in no command's static closure, but in the chunk the telemetry layer imports on demand.
    for (const [command, closure] of Object.entries({ tree, client, host, serve })) {
      assert.deepStrictEqual(closure.filter((i) => /@opentelemetry|TelemetrySdk/.test(i)), [], `${command} loads OTel`)
    }
    const sdk = staticClosure(outputFor(/packages\/server\/dist\/TelemetrySdk\.js$/))
    assert.isTrue(sdk.some((i) => /@opentelemetry\/exporter-trace-otlp-http/.test(i)))
  })

  /** Runs `skald call TOOL --OPTION @- -- everything`, writing `input` on its stdin 1.5 s after start. */
  const callWithLateStdin = async (tool: string, option: string, input: string) => {
    const child = spawn(process.execPath, [skald, "call", tool, `--${option}`, "@-", "--", ...everything], {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += String(d)))
    child.stderr.on("data", (d) => (stderr += String(d)))
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
    // The input comes a while after start-up, as from a slow pipe; stdin stays open until then.
    const early = await Promise.race([
      exited.then(() => "exited" as const),
      new Promise<"waiting">((r) => setTimeout(() => r("waiting"), 1500))
    ])
    assert.strictEqual(early, "waiting", stderr)
    child.stdin.write(input)
    child.stdin.end()
    return { status: await exited, stdout, stderr }
  }

  it("--elicit @- waits for an answer that arrives after skald started (a fast start reaches the read first)", async () => {
    const r = await callWithLateStdin("trigger-elicitation-request", "elicit", JSON.stringify({ action: "cancel" }))
    assert.strictEqual(r.status, 0, r.stderr)
    assert.include(r.stdout, "cancelled")
  })

  it("--args @- waits for arguments that arrive after skald started", async () => {
    const r = await callWithLateStdin("echo", "args", JSON.stringify({ message: "late but here" }))
    assert.strictEqual(r.status, 0, r.stderr)
    assert.include(r.stdout, "late but here")
  })
})
