/**
 * Shutdown over stdio: closing the scope runs close stdin → SIGTERM → SIGKILL on the server's
 * whole process group, so a server that ignores SIGTERM and stdin EOF goes, and so does the
 * grandchild it spawned (which ignores SIGTERM too). Then 200 connect/close cycles leave nothing
 * behind. And after a host is killed outright, the next host stops the process groups it left,
 * whatever their command lines look like by then.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runSkald, skald, startServe, stopProcess } from "./cli-support.js"
import { fixture, fixturePath, repoRoot } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { tempHome } from "./host-support.js"
import { modelEnv } from "./serve-support.js"
import { connect, eventually, eventuallyEffect, isAlive, makeLogCapture, processesMatching } from "./support.js"
import type { TransportTuning } from "./support.js"

const marker = `skald-orphan-marker-${process.pid}-${Date.now()}`
const stubborn = fixture("grandchild", undefined, [marker])
const fast: TransportTuning = { stdinGrace: "100 millis", termGrace: "100 millis" }

/** Connects to the stubborn fixture and asks it for its pids. */
const connectAndGetPids = (server: string, transport: TransportTuning) =>
  Effect.gen(function*() {
    const client = yield* connect(server, stubborn, { transport })
    const outcome = yield* client.callTool("pids")
    const pids = outcome.wire.structuredContent as { child: number; grandchild: number }
    assert.isNumber(pids.child)
    assert.isNumber(pids.grandchild)
    return pids
  })

describe("shutdown", () => {
  it.scopedLive(
    "a process that exits with a server still open: its server and grandchild are stopped after it all the same",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempHome
        // A plain app on the Promise face (the bundle `@skald/mcp/promise` is), calling
        // process.exit() with the connection open: no scope closes, no finalizer runs.
        const script = Path.join(dir, "exits.mjs")
        Fs.writeFileSync(
          script,
          `import { connect } from ${JSON.stringify(Path.join(repoRoot, "packages/mcp/dist/bundle/promise.js"))}\n` +
            `const client = await connect(${
              JSON.stringify({ ...stubborn, stdinGrace: "300 millis", termGrace: "300 millis" })
            })\n` +
            `const outcome = await client.callTool("pids")\n` +
            `process.stdout.write(JSON.stringify(outcome.wire.structuredContent) + "\\n")\n` +
            `process.exit(0)\n`
        )
        const out = yield* Effect.promise(() =>
          new Promise<string>((resolve, reject) =>
            ChildProcess.execFile(process.execPath, [script], (error, stdout, stderr) =>
              error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`)))
          )
        )
        const pids = JSON.parse(out) as { child: number; grandchild: number }
        // The app is gone; its server ignores its stdin's end and SIGTERM, and is stopped anyway.
        yield* eventually(
          () =>
            !isAlive(pids.child),
          `server ${pids.child} gone`,
          "10 seconds"
        )
        yield* eventually(
          () =>
            !isAlive(pids.grandchild),
          `grandchild ${pids.grandchild} gone`,
          "10 seconds"
        )
        assert.deepStrictEqual(processesMatching([marker]), [])
      })
  )

  it.live("closing the scope kills a server that ignores SIGTERM and stdin EOF, and its grandchild", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      let seen: { child: number; grandchild: number } | undefined
      yield* Effect.scoped(
        Effect.gen(function*() {
          const pids = yield* connectAndGetPids("stubborn", fast)
          seen = pids
          assert.isTrue(isAlive(pids.child), "the server runs")
          assert.isTrue(isAlive(pids.grandchild), "the grandchild runs")
          assert.include(processesMatching([marker]).map((p) => p.pid), pids.grandchild)
        })
      ).pipe(logs.provide)
      const pids = seen!
      // The scope waited for the server's exit; the group's SIGKILL is on its way to the grandchild.
      assert.isFalse(isAlive(pids.child), "the server is gone")
      yield* eventually(() => !isAlive(pids.grandchild), `grandchild ${pids.grandchild} gone`)
      assert.deepStrictEqual(processesMatching([marker]), [])

      assert.include(logs.withTag("stderr"), `grandchild pid ${pids.grandchild}`)
      const lifecycle = logs.withTag("lifecycle")
      assert.includeMembers(lifecycle, [
        "did not exit 100ms after stdin closed; sending SIGTERM",
        "did not exit 100ms after SIGTERM; sending SIGKILL"
      ])
    }))

  // ENGINE BUG (StdioTransport log pump): fails today. The child's exit line is offered to the
  // log queue in the same turn that resumes the shutdown; the scope then interrupts the pump
  // fiber, which has already been handed the line by `Queue.take` but not emitted it, so the
  // line is lost (the final `Queue.takeAll` drain finds the queue empty).
  it.live("the exit line of a server killed at shutdown reaches the log sink", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      yield* Effect.scoped(connectAndGetPids("stubborn-exit-line", fast)).pipe(logs.provide)
      assert.include(logs.withTag("lifecycle"), "killed by SIGKILL", logs.withTag("lifecycle").join("\n"))
    }))

  it.live("a server that exits on stdin EOF is not signalled", () =>
    Effect.gen(function*() {
      const logs = makeLogCapture()
      // A long stdin grace: a polite server exits as soon as it sees EOF, however loaded the machine
      // (100 ms was too short once); one that ignored EOF would still get SIGTERM, after 10 s.
      const patient: TransportTuning = { stdinGrace: "10 seconds", termGrace: "100 millis" }
      yield* Effect.scoped(connect("polite", fixture("hostile", undefined, ["silent"]), { transport: patient })).pipe(
        logs.provide
      )
      const lifecycle = logs.withTag("lifecycle")
      assert.include(lifecycle, "exited with code 0")
      assert.isFalse(lifecycle.some((l) => l.includes("SIGTERM") || l.includes("SIGKILL")), lifecycle.join("\n"))
    }))

  it.live("200 connect/close cycles leave no process behind", () =>
    Effect.gen(function*() {
      const cycles = 200
      const tuning: TransportTuning = { stdinGrace: "50 millis", termGrace: "50 millis" }
      // A quiet sink: 200 cycles of lifecycle lines are noise.
      const logs = makeLogCapture()
      const all = yield* Effect.forEach(
        Array.from({ length: cycles }, (_, i) => i),
        (i) => Effect.scoped(connectAndGetPids(`cycle-${i}`, tuning)),
        { concurrency: 8 }
      ).pipe(logs.provide)
      assert.strictEqual(all.length, cycles)
      assert.strictEqual(new Set(all.map((p) => p.grandchild)).size, cycles)
      assert.strictEqual(
        logs.withTag("lifecycle").filter((l) => l.endsWith("after SIGTERM; sending SIGKILL")).length,
        cycles
      )

      const needles = [marker, fixturePath("grandchild")]
      yield* eventually(() => processesMatching(needles).length === 0, "every cycle's processes gone")
      assert.deepStrictEqual(processesMatching(needles), [])
      assert.deepStrictEqual(all.filter((p) => isAlive(p.child) || isAlive(p.grandchild)), [])
    }), 180_000) // ~45 s alone on 2 cores: the default 60 s is too close under a loaded run.
})

/** The members of process group `pgid` that are alive (not zombies). */
const groupMembers = (pgid: number): Array<number> =>
  Fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e)).map(Number).filter((pid) => {
    try {
      const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      return fields[0] !== "Z" && Number(fields[2]) === pgid
    } catch {
      return false
    }
  })

/** Polls (bounded) until `ok` holds for what `get` returns. */
const until = <A>(what: string, get: () => Promise<A> | A, ok: (a: A) => boolean) =>
  eventuallyEffect(Effect.promise(async () => await get()), ok, what, "60 seconds")

describe("a host that was killed", () => {
  it.live(
    "leaves wrapped servers (npx-style, shebang scripts, an exited leader) and a starting one that the next host stops",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const host = fixture("host")
        const wrapper = fixturePath("wrapper")
        const script = Path.join(home, "server.sh")
        Fs.writeFileSync(
          script,
          `#!/bin/sh\n${JSON.stringify(host.command)} ${host.args.map((a) => JSON.stringify(a)).join(" ")}\n`
        )
        Fs.chmodSync(script, 0o755)
        const kinds: Record<string, ReadonlyArray<string>> = {
          npx: [process.execPath, wrapper, "stay", host.command, ...host.args],
          shebang: [script],
          leaver: [process.execPath, wrapper, "leave", host.command, ...host.args]
        }
        for (const [name, commandLine] of Object.entries(kinds)) {
          // Servers that ignore the end of their stdin, as a server that outlives a killed host does.
          const added = yield* Effect.promise(() =>
            runSkald(["mcp", "add", name, "--home", home, "--env", "HOST_FIXTURE_STAY=1", "--", ...commandLine])
          )
          assert.strictEqual(added.status, 0, added.stderr)
        }
        // And one that never answers initialize: still `starting` when the host is killed.
        const mute = yield* Effect.promise(() =>
          runSkald(["mcp", "add", "mute", "--home", home, "--", process.execPath, "-e", "setInterval(() => {}, 1000)"])
        )
        assert.strictEqual(mute.status, 0, mute.stderr)
        // Ours, not the demo server that the first run adds.
        const list = () =>
          runSkald(["mcp", "list", "--json", "--home", home]).then((r) =>
            (JSON.parse(r.stdout) as Array<{ name: string; state: string; pid?: number }>).filter((s) =>
              s.name in kinds
            )
          )
        const first = yield* Effect.promise(() => startServe(home))
        yield* Effect.addFinalizer(() =>
          Effect.sync(() =>
            first.child.exitCode === null && first.child.signalCode === null && first.child.kill("SIGKILL")
          )
        )
        const listed = yield* until(
          "every server connected",
          list,
          (l) => l.length === 3 && l.every((s) => s.state === "connected")
        )
        const groups = new Map(listed.map((s) => [s.name, s.pid!]))
        // Each group holds the launcher and the real server.
        for (const [name, pgid] of groups) {
          assert.strictEqual(groupMembers(pgid).length, 2, `${name}: ${groupMembers(pgid)}`)
        }
        const starting = yield* until("mute spawned", () =>
          runSkald(["mcp", "list", "--json", "--home", home]).then((r) =>
            (JSON.parse(r.stdout) as Array<{ name: string; state: string; pid?: number }>).find((s) =>
              s.name === "mute"
            )
          ), (s) => s?.state === "starting" && s.pid !== undefined)
        groups.set("mute", starting!.pid!)

        first.child.kill("SIGKILL")
        yield* Effect.promise(() =>
          new Promise((r) => first.child.once("exit", r))
        )
        // The leaver's launcher exits with its host; its server stays behind in the group.
        yield* until("the leaver's launcher to exit", () =>
          groupMembers(groups.get("leaver")!), (m) =>
          m.length === 1 && !m.includes(groups.get("leaver")!))
        for (const [name, pgid] of groups) {
          assert.isNotEmpty(groupMembers(pgid), `${name} outlived the killed host`)
        }

        const second = yield* Effect.promise(() =>
          startServe(home)
        )
        yield* Effect.addFinalizer(() => Effect.promise(() => stopProcess(second.child)))
        for (const [name, pgid] of groups) {
          yield* until(`${name}'s leftover group to be gone`, () => groupMembers(pgid), (m) => m.length === 0)
        }
        assert.include(second.stderr(), "left running by a previous host")
        const again = yield* until("every server connected again", list, (l) =>
          l.length === 3 && l.every((s) =>
            s.state === "connected"
          ))
        for (const s of again) {
          assert.notStrictEqual(s.pid, groups.get(s.name))
        }
        for (const name of [...Object.keys(kinds), "mute"]) {
          const logs = yield* Effect.promise(() => runSkald(["mcp", "logs", name, "--home", home]))
          assert.include(logs.stdout, "[lifecycle]  stopped a process a previous host left running", name)
        }
      }).pipe(Effect.scoped),
    180_000
  )
})

describe("a one-off command that was killed", () => {
  it.live(
    "leaves a server that ignores its stdin's end; the next command's manager stops it and forgets it",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const host = fixture("host")
        const marker = `guest-leftover-${process.pid}-${Date.now()}`
        const added = yield* Effect.promise(() =>
          runSkald([
            "mcp",
            "add",
            "stay",
            "--home",
            home,
            "--env",
            "HOST_FIXTURE_STAY=1",
            "--",
            host.command,
            ...host.args,
            marker
          ])
        )
        assert.strictEqual(added.status, 0, added.stderr)
        // The first turn's model request hangs, so the command is still running when it is killed.
        const standin = yield* ModelStandin.start([
          ModelStandin.hanging(),
          ModelStandin.text("Done."),
          ModelStandin.text("Done again.")
        ])
        const env = modelEnv(standin.url)
        const first = ChildProcess.spawn(process.execPath, [
          skald,
          "agent",
          "run",
          "--home",
          home,
          "--approve",
          "deny",
          "hi"
        ], {
          env: { ...process.env, ...env },
          stdio: ["ignore", "ignore", "pipe"]
        })
        yield* Effect.addFinalizer(() => Effect.sync(() => first.exitCode === null && first.kill("SIGKILL")))
        yield* standin.awaitRequests(1)
        const servers = processesMatching([marker])
        assert.strictEqual(servers.length, 1, JSON.stringify(servers))
        const pgid = Number(Fs.readFileSync(`/proc/${servers[0]!.pid}/stat`, "utf8").split(") ")[1]!.split(" ")[2])
        assert.isNotEmpty(groupMembers(pgid))
        // Whatever happens below, the test leaves no process behind.
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            if (groupMembers(pgid).length > 0) process.kill(-pgid, "SIGKILL")
          })
        )

        first.kill("SIGKILL")
        yield* Effect.promise(() => new Promise((r) => first.once("exit", r)))
        // No finalizer ran: the server is still there.
        assert.isNotEmpty(groupMembers(pgid), "the server outlived the killed command")

        // The next command's manager (a guest too) stops it before its own servers start.
        const second = yield* Effect.promise(() =>
          runSkald(["agent", "run", "--home", home, "--approve", "deny", "again"], { env })
        )
        assert.strictEqual(second.status, 0, second.stderr)
        assert.strictEqual(second.stdout, "Done.\n")
        assert.include(second.stderr, "stopped MCP server 'stay', left running by a command that was killed")
        assert.deepStrictEqual(groupMembers(pgid), [])
        const logs = yield* Effect.promise(() => runSkald(["mcp", "logs", "stay", "--home", home]))
        assert.include(logs.stdout, "[lifecycle]  stopped a process a killed command left running")
        // The second command stopped its own server as it ended, and forgot it: a third finds nothing to stop.
        assert.deepStrictEqual(processesMatching([marker]), [])
        const third = yield* Effect.promise(() =>
          runSkald(["agent", "run", "--home", home, "--approve", "deny", "once more"], { env })
        )
        assert.strictEqual(third.stdout, "Done again.\n", third.stderr)
        assert.notInclude(third.stderr, "left running")
      }).pipe(Effect.scoped),
    180_000
  )
})
