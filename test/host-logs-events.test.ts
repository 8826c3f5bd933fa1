/**
 * The host's per-server logs and push events, against real server processes and a real SQLite
 * file: the seed's line format and tags, rotation at 5 MB with one backup, a writer that never
 * holds a server back, secrets redacted; every event stored exactly once, protocol notifications
 * never.
 */
import { assert, describe, it } from "@effect/vitest"
import { ServerName } from "@skald/domain"
import { EventRepo, SecretStore, ServerLogs } from "@skald/server"
import { Chunk, Context, Effect, Fiber, Layer, Option, Queue, Redacted, Stream } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { commandEntry, fixtureEntry, servicesLayer, startManager, tempHome, waitForState } from "./host-support.js"
import { eventually, eventuallyEffect } from "./support.js"

const linePattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \[[a-z]+\] {1,4} ?\S?/

const readLines = (file: string): Array<string> =>
  Fs.existsSync(file) ? Fs.readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0) : []

describe("per-server logs", () => {
  /** The log service of a fresh home, and that home's file for `server`. */
  const logsOf = (server: string) =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const context = yield* Layer.build(servicesLayer(home))
      const logs = Context.get(context, ServerLogs.ServerLogs)
      const file = Path.join(home, "logs", "mcp", `${server}.log`)
      Fs.mkdirSync(Path.dirname(file), { recursive: true })
      return { logs, file }
    })
  const text = (bytes: Chunk.Chunk<Uint8Array>) => Chunk.toArray(bytes).map((b) => Buffer.from(b).toString()).join("")

  it.scoped("read gives the whole file, or none when there is no log", () =>
    Effect.gen(function*() {
      const { file, logs } = yield* logsOf("reader")
      assert.isTrue(Option.isNone(yield* logs.read("reader")))
      Fs.writeFileSync(file, "one\ntwo\n")
      const got = yield* logs.read("reader")
      assert.strictEqual(Option.map(got, (b) => Buffer.from(b).toString()).pipe(Option.getOrUndefined), "one\ntwo\n")
    }))

  it.scopedLive("follow is tail -f: appended bytes as they come, a late file, truncation and rotation start over", () =>
    Effect.gen(function*() {
      const { file, logs } = yield* logsOf("tailed")
      const seen = yield* Queue.unbounded<string>()
      // Polled often, so the test runs fast; each step waits for what it expects (bounded against a hang).
      const fiber = yield* logs.follow("tailed", { every: "10 millis" }).pipe(
        Stream.runForEach((bytes) => Queue.offer(seen, Buffer.from(bytes).toString())),
        Effect.fork
      )
      const next = Queue.take(seen).pipe(Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => "no bytes" }))
      // No file yet: nothing, and no failure; then the file appears.
      yield* Effect.sleep("50 millis")
      assert.isTrue(Option.isNone(yield* Queue.poll(seen)))
      Fs.writeFileSync(file, "first\n")
      assert.strictEqual(yield* next, "first\n")
      Fs.appendFileSync(file, "second\n")
      assert.strictEqual(yield* next, "second\n")
      // Truncated: printed from the start again.
      Fs.writeFileSync(file, "x\n")
      assert.strictEqual(yield* next, "x\n")
      // Rotated (renamed away, a new file): the new file from its start, even when it already
      // outgrew the old one's length before the poll saw it.
      Fs.renameSync(file, `${file}.1`)
      Fs.writeFileSync(file, "a new file, longer than the old one\n")
      assert.strictEqual(yield* next, "a new file, longer than the old one\n")
      assert.isTrue(Option.isNone(yield* Queue.poll(seen)))
      yield* Fiber.interrupt(fiber)
    }))

  it.scopedLive("follow from an offset gives only what comes after it", () =>
    Effect.gen(function*() {
      const { file, logs } = yield* logsOf("offset")
      Fs.writeFileSync(file, "old\n")
      const taken = yield* logs.follow("offset", { every: "10 millis", from: 4 }).pipe(
        Stream.take(1),
        Stream.runCollect,
        Effect.fork
      )
      yield* Effect.sleep("50 millis")
      Fs.appendFileSync(file, "new\n")
      assert.strictEqual(text(yield* Fiber.join(taken)), "new\n")
    }))

  it("formats lines as the seed does and sanitizes file names", () => {
    const at = new Date("2026-07-03T12:34:56.789Z")
    assert.strictEqual(
      ServerLogs.formatLine(at, "stderr", "INFO: server ready"),
      "2026-07-03T12:34:56.789Z [stderr]     INFO: server ready"
    )
    assert.strictEqual(
      ServerLogs.formatLine(at, "warning", "scraper: rate limit approaching"),
      "2026-07-03T12:34:56.789Z [warning]    scraper: rate limit approaching"
    )
    assert.strictEqual(
      ServerLogs.formatLine(at, "lifecycle", "failed to start: command not found"),
      "2026-07-03T12:34:56.789Z [lifecycle]  failed to start: command not found"
    )
    assert.strictEqual(ServerLogs.sanitize("a/b c..d"), "a_b_c..d")
  })

  it.scopedLive("stderr, log records and lifecycle events land in logs/mcp/<name>.log with their tags", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const { manager } = yield* startManager(home)
      yield* manager.register(fixtureEntry("chatty", "host"))
      yield* manager.register(commandEntry("broken", "/nonexistent/skald-broken", []))
      yield* waitForState(manager, "chatty", "connected")
      yield* manager.call("mcp__chatty__log", { level: "warning", message: "rate limit approaching" })
      yield* manager.call("mcp__chatty__log", { level: "error", message: "disk full" })
      yield* Effect.flip(manager.call("mcp__chatty__crash"))
      yield* waitForState(manager, "chatty", "connected")
      yield* waitForState(manager, "broken", "failed")
      yield* manager.setEnabled(ServerName.make("chatty"), false)
      yield* waitForState(manager, "chatty", "disabled")

      const file = Path.join(home, "logs/mcp/chatty.log")
      yield* eventually(() => readLines(file).some((l) => l.includes("stopped by the host")), "the stop to be logged")
      const lines = readLines(file)
      for (const line of lines) assert.match(line, linePattern, line)
      const tagged = (tag: string, text: string) =>
        lines.some((l) => l.slice(25).startsWith(`[${tag}]`) && l.includes(text))
      assert.isTrue(tagged("stderr", "host fixture: ready"), "a stderr line")
      assert.isTrue(tagged("stderr", "crashing on purpose"), "the crash's stderr")
      assert.isTrue(tagged("warning", "rate limit approaching"), "a notifications/message record at its level")
      assert.isTrue(tagged("error", "disk full"))
      assert.isTrue(tagged("lifecycle", "started (pid"), "start")
      assert.isTrue(tagged("lifecycle", "connected: fixture-host"), "connect")
      assert.isTrue(tagged("lifecycle", "exited with code 7"), "the crash")
      assert.isTrue(tagged("lifecycle", "disconnected:"), "disconnect")
      assert.isTrue(tagged("lifecycle", "restarting in"), "restart")
      assert.isTrue(tagged("lifecycle", "stopped by the host"), "stop")
      const broken = readLines(Path.join(home, "logs/mcp/broken.log"))
      assert.isTrue(broken.some((l) => l.includes("[lifecycle]  failed to start:") && l.includes("command not found")))
    }))

  it.scopedLive("a start timeout is a lifecycle line", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const { manager } = yield* startManager(home, { startTimeout: "1 second" })
      yield* manager.register(commandEntry("mute", process.execPath, ["-e", "setInterval(() => {}, 1000)"]))
      yield* waitForState(manager, "mute", "failed")
      const file = Path.join(home, "logs/mcp/mute.log")
      yield* eventually(
        () => readLines(file).some((l) => l.includes("failed to start: MCP server 'mute' did not start within 1 s")),
        "the timeout line"
      )
    }))

  it.scopedLive(
    "100,000 stderr lines: calls keep being answered, every line is kept, the file rotates at 5 MB with one backup",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const { manager } = yield* startManager(home)
        yield* manager.register(fixtureEntry("loud", "host"))
        yield* waitForState(manager, "loud", "connected")
        const total = 100_000
        yield* manager.call("mcp__loud__flood", { lines: total })
        // While the flood is being written, the server keeps answering.
        let answered = 0
        for (let i = 0; i < 50; i++) {
          const r = yield* manager.call("mcp__loud__echo", { message: `ping ${i}` })
          if (r._tag === "Text" && r.text === `ping ${i}`) answered++
        }
        assert.strictEqual(answered, 50)
        const file = Path.join(home, "logs/mcp/loud.log")
        const floodLines = () => [...readLines(`${file}.1`), ...readLines(file)].filter((l) => l.includes("flood line"))
        yield* eventually(() => floodLines().length === total, "every flood line to be written", "60 seconds")
        const lines = floodLines()
        // In order, none lost or duplicated, each whole.
        lines.forEach((line, i) =>
          assert.isTrue(line.endsWith(`flood line ${i} of ${total}: the quick brown fox`), line)
        )
        assert.isTrue(Fs.existsSync(`${file}.1`), "rotated once")
        assert.isAtMost(Fs.statSync(`${file}.1`).size, ServerLogs.MAX_FILE_BYTES)
        assert.isAbove(Fs.statSync(`${file}.1`).size, ServerLogs.MAX_FILE_BYTES - 4096)
        assert.isAtMost(Fs.statSync(file).size, ServerLogs.MAX_FILE_BYTES)
        assert.isFalse(Fs.existsSync(`${file}.2`), "one backup only")
        assert.strictEqual(
          Fs.readdirSync(Path.join(home, "logs/mcp")).filter((f) => f.startsWith("loud")).sort().join(","),
          "loud.log,loud.log.1"
        )
      }),
    { timeout: 120_000 }
  )

  it.scopedLive("a server that prints its secret has it redacted from its log file and statuses", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const secret = `leaky-${Crypto.randomUUID()}`
      const { context, manager } = yield* startManager(home)
      yield* Context.get(context, SecretStore.SecretStore).set("LEAKY_TOKEN", Redacted.make(secret))
      yield* manager.register(
        fixtureEntry("leaky", "host", { TOKEN: "${LEAKY_TOKEN}", HOST_FIXTURE_LEAK_ENV: "TOKEN" })
      )
      yield* waitForState(manager, "leaky", "connected")
      yield* Effect.flip(manager.call("mcp__leaky__crash"))
      const failed = yield* waitForState(manager, "leaky", "failed")
      yield* waitForState(manager, "leaky", "connected")
      const file = Path.join(home, "logs/mcp/leaky.log")
      yield* eventually(
        () => readLines(file).some((l) => l.includes("careless banner, TOKEN=[redacted]")),
        "the redacted banner"
      )
      assert.notInclude(Fs.readFileSync(file, "utf8"), secret)
      assert.notInclude(failed?.error ?? "", secret)
    }))
})

describe("push events", () => {
  it.scopedLive(
    "a burst of 10,000 events lands as 10,000 rows, in order; protocol notifications are not events",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const { context, manager } = yield* startManager(home)
        const repo = Context.get(context, EventRepo.EventRepo)
        yield* manager.register(fixtureEntry("pusher", "host"))
        yield* waitForState(manager, "pusher", "connected")
        yield* manager.call("mcp__pusher__chatter")
        assert.strictEqual(
          yield* Effect.map(
            manager.call("mcp__pusher__burst", { count: 10_000 }),
            (r) => r._tag === "Text" ? r.text : ""
          ),
          "sent 10000"
        )
        const events = yield* eventuallyEffect(
          repo.list(),
          (all) => all.length >= 10_000,
          "10 000 events stored",
          "60 seconds"
        )
        assert.strictEqual(events.length, 10_000)
        events.forEach((e, i) => {
          assert.strictEqual(e.server, "pusher")
          assert.strictEqual(e.method, "event/burst")
          assert.deepStrictEqual(e.params, { seq: i })
          assert.strictEqual(e.status, "pending")
        })
        // progress, list_changed and message records went to their handlers, not the table.
        assert.isFalse(events.some((e) => e.method.startsWith("notifications/")))

        // The TIC agent's side: take pending ones, mark them processed.
        const pending = yield* repo.list({ pending: true, limit: 100 })
        assert.strictEqual(pending.length, 100)
        assert.strictEqual(yield* repo.markProcessed(pending.map((e) => e.id)), 100)
        assert.strictEqual(yield* repo.markProcessed(pending.map((e) => e.id)), 0, "already processed")
        const next = yield* repo.list({ pending: true, limit: 1 })
        assert.strictEqual(next[0]?.id, pending[99]!.id + 1)
        const processed = (yield* repo.list({ limit: 1 }))[0]!
        assert.strictEqual(processed.status, "processed")
        assert.isString(processed.processedAt)
      }),
    { timeout: 120_000 }
  )

  it.scopedLive("events sent right after initialize are not lost (the sink is in place before the first message)", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const { context, manager } = yield* startManager(home)
      const repo = Context.get(context, EventRepo.EventRepo)
      // The raw fixture pushes events as soon as it is initialized, before anyone could subscribe.
      yield* manager.register(
        commandEntry("eager", process.execPath, [Path.join(import.meta.dirname, "fixtures/eager-events.mjs")])
      )
      yield* waitForState(manager, "eager", "connected")
      const events = yield* eventuallyEffect(repo.list(), (all) => all.length >= 50, "50 events stored", "30 seconds")
      assert.deepStrictEqual(events.map((e) => (e.params as { n: number }).n), Array.from({ length: 50 }, (_, i) => i))
    }))
})
