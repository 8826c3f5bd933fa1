/**
 * The command line's own cost (`npm run bench`, or `BENCH_SERVERS=cli npm run bench` alone, or
 * `node build/root/bench/cli.js`): wall time and peak RSS of `skald --version`, `skald --help` and
 * `skald tools -- <server-everything>` against the same listing through a plain SDK-client script
 * (bench/clients/sdk-tools.ts), each a fresh process as a user starts it, N runs in rotating order
 * (`BENCH_CLI_RUNS`, default 9). Wall time is from spawn to exit as the bench sees it; peak RSS and
 * CPU time are the client process's own (`process.resourceUsage()` through the preload
 * bench/rss.ts; the MCP server's are not counted). Pinned like the client sections: the client on CPU 0, the server
 * (`taskset -c 1` in its command line) on CPU 1. It bundles the CLI first
 * (packages/server/scripts/bundle.js, as `npm run build` does after `tsc -b`), so the shim runs a
 * current bundle.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath, pathToFileURL } from "node:url"
import { clientEnv, fmt, median, pin } from "./machine.js"

const here = Path.dirname(fileURLToPath(import.meta.url))
/** The repository root (this file runs as build/root/bench/cli.js). */
const root = Path.resolve(here, "../../..")
const skald = Path.join(root, "packages/server/bin/skald.js")
const everything = Path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
const serverCommand = [...(pin ? ["taskset", "-c", "1"] : []), process.execPath, everything, "stdio"]

interface Job {
  readonly key: string
  readonly label: string
  readonly argv: ReadonlyArray<string>
}

/**
 * What is measured. `skald …` goes through the committed shim, as a user runs it; the two
 * `… (no fast path)` rows run the CLI itself (the bundle when it is built, else the tsc output),
 * the `(tsc output)` rows the unbundled build, so each option's cost stays visible.
 */
const jobs = (): ReadonlyArray<Job> => {
  const bundle = Path.join(root, "packages/server/dist/bundle/main.js")
  const tscMain = Path.join(root, "packages/server/dist/cli/main.js")
  const direct = Fs.existsSync(bundle) ? bundle : tscMain
  return [
    { key: "node", label: "`node -e 0` (node's own start)", argv: ["-e", "0"] },
    { key: "version", label: "`skald --version`", argv: [skald, "--version"] },
    { key: "help", label: "`skald --help`", argv: [skald, "--help"] },
    { key: "versionCli", label: "`--version` through the CLI (no fast path)", argv: [direct, "--version"] },
    { key: "helpCli", label: "`--help` through the CLI (no fast path)", argv: [direct, "--help"] },
    { key: "versionTsc", label: "`--version`, tsc output", argv: [tscMain, "--version"] },
    { key: "tools", label: "`skald tools -- server-everything`", argv: [skald, "tools", "--", ...serverCommand] },
    {
      key: "toolsTsc",
      label: "`tools -- server-everything`, tsc output",
      argv: [tscMain, "tools", "--", ...serverCommand]
    },
    {
      key: "sdk",
      label: "SDK-client script (bench/clients/sdk-tools.ts)",
      argv: [Path.join(here, "clients/sdk-tools.js"), ...serverCommand]
    }
  ]
}

interface Sample {
  readonly wallMs: number
  readonly cpuMs: number
  readonly rssMB: number
  readonly lines: number
}

const preload = pathToFileURL(Path.join(here, "rss.js")).href

const runOnce = (job: Job): Promise<Sample> =>
  new Promise((resolve, reject) => {
    const rssFile = Path.join(Os.tmpdir(), `skald-bench-rss-${process.pid}-${job.key}`)
    Fs.rmSync(rssFile, { force: true })
    const node = [process.execPath, "--import", preload, ...job.argv]
    const [command, ...args] = pin ? ["taskset", "-c", "0", ...node] : node
    const started = performance.now()
    const child = ChildProcess.spawn(command!, args, {
      cwd: root,
      env: { ...clientEnv, BENCH_RSS_FILE: rssFile },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    let wallMs = 0
    child.stdout.on("data", (d: Buffer) => (out += d.toString()))
    child.stderr.on("data", (d: Buffer) => (err += d.toString()))
    child.once("exit", () => (wallMs = performance.now() - started))
    child.once("error", reject)
    // Timed to the exit; the next run starts once every pipe closed (no server left behind).
    child.once("close", (code) => {
      if (code !== 0 || (job.key !== "node" && out.trim().length === 0)) {
        return reject(new Error(`${job.label} exited ${code} with ${out.length} bytes on stdout:\n${err}`))
      }
      const [rss, cpu] = Fs.readFileSync(rssFile, "utf8").split(" ").map(Number)
      Fs.rmSync(rssFile, { force: true })
      resolve({ wallMs, cpuMs: cpu! / 1000, rssMB: rss! / 1024 / 1024, lines: out.trim().split("\n").length })
    })
  })

/** Runs the section and prints its table (markdown on stdout, per-run lines on stderr). */
export const runCliSection = async (runs = Number(process.env.BENCH_CLI_RUNS ?? 9)): Promise<void> => {
  ChildProcess.execFileSync(process.execPath, [Path.join(root, "packages/server/scripts/bundle.js")], {
    stdio: "inherit"
  })
  const list = jobs()
  const samples = new Map<string, Array<Sample>>(list.map((j) => [j.key, []]))
  process.stderr.write(
    `bench cli: ${runs} runs of ${list.length} commands, ${pin ? "client on CPU 0, server on CPU 1" : "not pinned"}\n`
  )
  for (let run = 0; run < runs; run++) {
    const order = list.map((_, i) => list[(i + run) % list.length]!)
    for (const job of order) {
      const s = await runOnce(job)
      samples.get(job.key)!.push(s)
    }
    const line = (k: string) => `${k} ${samples.get(k)!.at(-1)!.wallMs.toFixed(0)} ms`
    process.stderr.write(`  run ${run + 1}: ${["version", "help", "tools", "sdk"].map(line).join(", ")}\n`)
  }
  const of = (k: string) => samples.get(k)!
  const wall = (k: string) => median(of(k).map((s) => s.wallMs))
  const rss = (k: string) => median(of(k).map((s) => s.rssMB))
  const cpu = (k: string) => median(of(k).map((s) => s.cpuMs))
  const perRun = (a: string, b: string, f: (s: Sample) => number) => median(of(a).map((s, i) => f(s) / f(of(b)[i]!)))
  const toolsWall = perRun("tools", "sdk", (s) => s.wallMs)
  const toolsRss = perRun("tools", "sdk", (s) => s.rssMB)
  const toolsCpu = perRun("tools", "sdk", (s) => s.cpuMs)
  const toolsTscWall = perRun("toolsTsc", "sdk", (s) => s.wallMs)
  console.log(`\n### The command line (medians of ${runs} runs)\n`)
  console.log("| command | wall (ms) | client CPU (ms) | peak RSS (MB) | spread (wall) |")
  console.log("| --- | ---: | ---: | ---: | ---: |")
  for (const job of list) {
    const xs = of(job.key).map((s) => s.wallMs)
    const spread = ((Math.max(...xs) - Math.min(...xs)) / median(xs)) * 50
    console.log(
      `| ${job.label} | ${fmt(wall(job.key), 0)} | ${fmt(cpu(job.key), 0)} | ${fmt(rss(job.key), 1)} | ±${
        fmt(spread, 0)
      }% |`
    )
  }
  const verdict = (ok: boolean) => (ok ? "met" : "**not met**")
  console.log("\n| target | measured | |")
  console.log("| --- | ---: | --- |")
  console.log(`| \`skald --version\` ≤ 150 ms | ${fmt(wall("version"), 0)} ms | ${verdict(wall("version") <= 150)} |`)
  console.log(`| \`skald --help\` ≤ 150 ms | ${fmt(wall("help"), 0)} ms | ${verdict(wall("help") <= 150)} |`)
  console.log(
    `| \`skald tools\` wall ≤ 1.1× the SDK script | ${fmt(toolsWall, 2)}× (tsc output: ${fmt(toolsTscWall, 2)}×) | ${
      verdict(toolsWall <= 1.1)
    } |`
  )
  console.log(`| \`skald tools\` peak RSS ≤ the SDK script's | ${fmt(toolsRss, 2)}× | ${verdict(toolsRss <= 1)} |`)
  console.log(`| (not a target) \`skald tools\` client CPU / the SDK script's | ${fmt(toolsCpu, 2)}× | |`)
  console.log(
    `\nTools listed: skald ${of("tools")[0]!.lines}, SDK script ${of("sdk")[0]!.lines} ` +
      "(server-everything registers its elicitation and sampling tools only for clients that declare them; skald declares elicitation). " +
      "Ratios are per run (same run, same machine state), then the median."
  )
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === Path.resolve(process.argv[1])) {
  await runCliSection()
}
