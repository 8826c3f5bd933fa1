/**
 * The host's HTTP endpoint under attack (issue 17): links planted in the media folder (and the
 * database they would cut the host off from), active content, HEAD, the Host/Origin rule, idle
 * and half-sent connections, the connection cap, a taken port, and absolute media links.
 */
import { assert, describe, it } from "@effect/vitest"
import { HttpEndpoints, McpManager, Paths } from "@skald/server"
import { Context, Deferred, Effect, Layer, Logger } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Path from "node:path"
import { runSkald, startServe, stopProcess } from "./cli-support.js"
import { HTML, SVG } from "./fixtures/active-media.js"
import { fixture, repoRoot } from "./fixtures/fixtures.js"
import {
  commandEntry,
  fastOptions,
  fixtureEntry,
  makeHome,
  servicesLayer,
  startManager,
  tempHome,
  until,
  waitForState
} from "./host-support.js"

interface Answer {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
}

/** One request on its own connection, the path sent exactly as given, with extra headers. */
const send = (
  base: string,
  path: string,
  options: { readonly method?: string; readonly headers?: Record<string, string> } = {}
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const url = new URL(base)
    const req = Http.request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: options.method ?? "GET",
        headers: options.headers ?? {},
        agent: false
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
      }
    )
    req.on("error", reject)
    req.end()
  })

/** Writes `text` on a fresh connection and gives everything the server sent until it closed. */
const rawExchange = (base: string, text: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const url = new URL(base)
    const socket = Net.connect({ host: url.hostname, port: Number(url.port) }, () => socket.write(text))
    let got = ""
    socket.on("data", (d: Buffer) => (got += d.toString()))
    socket.on("close", () => resolve(got))
    socket.on("error", reject)
  })

const run = (home: string, args: ReadonlyArray<string>) => runSkald(args, { env: { SKALD_HOME: home } })

interface Summary {
  readonly name: string
  readonly state: string
}

const list = async (home: string) => {
  const out = await run(home, ["mcp", "list", "--json"])
  return out.status === 0 ? (JSON.parse(out.stdout) as Array<Summary>) : out.stderr
}
const connected = (name: string) => (l: Array<Summary> | string) =>
  typeof l !== "string" && l.some((s) => s.name === name && s.state === "connected")

/** The endpoint over the paths of `home`, with `limits`; gives its URL. */
const endpoint = (paths: Paths.Paths, limits: Partial<HttpEndpoints.ListenOptions> = {}, logs?: Array<string>) =>
  Effect.gen(function*() {
    const listening = yield* Deferred.make<string>()
    const logger = logs === undefined
      ? Layer.empty
      : Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logs.push(String(message))))
    yield* Layer.launch(
      HttpEndpoints.layer({ host: "127.0.0.1", port: 0, ...limits }, (url) => Deferred.succeed(listening, url))
    ).pipe(Effect.provideService(Paths.Paths, paths), Effect.provide(logger), Effect.forkScoped)
    return yield* Deferred.await(listening)
  })

const mediaName = (text: string, ext: string) => {
  const match = new RegExp(`\\((?:http://[^/]+)?/api/mcp-media/([0-9a-f-]+\\.${ext})\\)`).exec(text)
  assert.isNotNull(match, text)
  return match![1]!
}

const textOf = (result: { readonly _tag: string; readonly text?: string }) =>
  result._tag === "Text" ? result.text ?? "" : ""

describe("links planted in the media folder", () => {
  it(
    "are refused (404), and the host keeps its database: its WAL, its heartbeat, what other processes write",
    async () => {
      const home = makeHome()
      const host = await startServe(home)
      try {
        await until("the demo connected", () => list(home), connected("demo"))
        const data = Path.join(home, "data")
        const media = Path.join(data, "mcp_media")
        Fs.mkdirSync(media, { recursive: true })
        const db = Path.join(data, "skald.db")
        assert.isTrue(Fs.existsSync(`${db}-wal`), "the host runs in WAL mode")
        Fs.writeFileSync(Path.join(home, "outside.txt"), "outside secret")
        Fs.symlinkSync("../skald.db", Path.join(media, "db-link.bin"))
        Fs.symlinkSync(db, Path.join(media, "db-absolute.png"))
        Fs.symlinkSync("/etc/passwd", Path.join(media, "passwd.txt"))
        Fs.symlinkSync(Path.join(home, "outside.txt"), Path.join(media, "outside-link.txt"))
        Fs.linkSync(db, Path.join(media, "db-hard.bin"))
        Fs.linkSync(`${db}-shm`, Path.join(media, "shm-hard.bin"))
        Fs.linkSync(Path.join(home, "outside.txt"), Path.join(media, "outside-hard.txt"))
        execFileSync("mkfifo", [Path.join(media, "fifo.txt")])
        const planted = [
          "db-link.bin",
          "db-absolute.png",
          "passwd.txt",
          "outside-link.txt",
          "db-hard.bin",
          "shm-hard.bin",
          "outside-hard.txt",
          "fifo.txt"
        ]
        for (const name of planted) {
          for (const method of ["GET", "HEAD"]) {
            const answer = await send(host.url, `/api/mcp-media/${name}`, { method })
            assert.strictEqual(answer.status, 404, `${method} ${name}`)
            for (const leak of ["SQLite format", "root:", "outside secret"]) {
              assert.notInclude(
                answer.body.toString(),
                leak,
                name
              )
            }
          }
        }
        assert.include(host.stderr(), "refused to serve media file db-hard.bin: a hard link (2 links)")

        // Another process writes through the database and closes it: the host must notice, its
        // heartbeat must go on (else `mcp list` says "host not running"), and the WAL must survive.
        const echo = fixture("echo")
        const added = await run(home, ["mcp", "add", "echo", "--", echo.command, ...echo.args])
        assert.strictEqual(added.status, 0, added.stderr)
        await until("the host to connect the added server", () => list(home), connected("echo"))
        assert.isTrue(Fs.existsSync(`${db}-wal`), "the WAL is still there")
        const disabled = await run(home, ["mcp", "disable", "echo"])
        assert.strictEqual(disabled.status, 0, disabled.stderr)
        await until(
          "the host to stop the disabled server",
          () => list(home),
          (l) => typeof l !== "string" && l.some((s) => s.name === "echo" && s.state === "disabled")
        )
      } finally {
        await stopProcess(host.child)
      }
    },
    120_000
  )

  it("in the log folder and the secret store are not followed either: the host keeps its database", async () => {
    const home = makeHome()
    const host = await startServe(home)
    try {
      await until("the demo connected", () => list(home), connected("demo"))
      const db = Path.join(home, "data", "skald.db")
      Fs.mkdirSync(Path.join(home, "logs", "mcp"), { recursive: true })
      Fs.symlinkSync("../../data/skald.db", Path.join(home, "logs", "mcp", "echo.log"))
      Fs.mkdirSync(Path.join(home, "secrets", "vars"), { recursive: true })
      Fs.symlinkSync("../../data/skald.db", Path.join(home, "secrets", "vars", "DB_LINK"))
      Fs.linkSync(db, Path.join(home, "secrets", "vars", "DB_HARD"))
      Fs.linkSync(db, Path.join(home, "logs", "mcp", "hard.log"))
      const echo = fixture("echo")
      // Servers whose env names a planted secret: the host reads it when it starts the server (and
      // writes a lifecycle line to the log of the second, a hard link).
      for (const [name, secret] of [["leaky", "DB_LINK"], ["hard", "DB_HARD"]] as const) {
        const leaky = await run(home, [
          "mcp",
          "add",
          name,
          "--env",
          `TOKEN=\${${secret}}`,
          "--",
          echo.command,
          ...echo.args
        ])
        assert.strictEqual(leaky.status, 0, leaky.stderr)
        await until(
          `the host to try ${name}`,
          () => list(home),
          (l) => typeof l !== "string" && l.some((s) => s.name === name && s.state === "failed")
        )
      }
      // A server whose log file is the planted link: the host writes its lifecycle lines there.
      const added = await run(home, ["mcp", "add", "echo", "--", echo.command, ...echo.args])
      assert.strictEqual(added.status, 0, added.stderr)
      await until("the host to connect the added server", () => list(home), connected("echo"))
      const removed = await run(home, ["mcp", "rm", "leaky"])
      assert.strictEqual(removed.status, 0, removed.stderr)
      await until(
        "the host to drop the removed server",
        () => list(home),
        (l) => typeof l !== "string" && !l.some((s) => s.name === "leaky") && l.some((s) => s.name === "echo")
      )
      const failed = await list(home)
      assert.match(
        typeof failed === "string" ? failed : JSON.stringify(failed.find((s) => s.name === "hard")),
        /DB_HARD/
      )
      assert.isTrue(Fs.existsSync(`${db}-wal`), "the WAL is still there")
      assert.notInclude(Fs.readFileSync(db).toString("latin1"), "[lifecycle]", "no log line went into the database")
    } finally {
      await stopProcess(host.child)
    }
  }, 120_000)

  it.scopedLive("a media folder that is itself a link is not served from", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const paths = Paths.make({ home })
      Fs.mkdirSync(paths.dataDir, { recursive: true })
      Fs.writeFileSync(Path.join(paths.dataDir, "private.png"), "not yours")
      Fs.symlinkSync(".", paths.mediaDir)
      const base = yield* endpoint(paths)
      const answer = yield* Effect.promise(() => send(base, "/api/mcp-media/private.png"))
      assert.strictEqual(answer.status, 404)
      assert.notInclude(answer.body.toString(), "not yours")
    }))
})

describe("what the media endpoint sends", () => {
  it.scopedLive("HTML and SVG results are inert downloads; images inline; HEAD has the same headers and no body", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const { context, manager } = yield* startManager(home)
      const paths = Context.get(context, Paths.Paths)
      yield* manager.register(fixtureEntry("active", "active-media"))
      yield* manager.register(fixtureEntry("media", "media"))
      yield* waitForState(manager, "active", "connected")
      yield* waitForState(manager, "media", "connected")
      const html = mediaName(textOf(yield* manager.call("mcp__active__html")), "html")
      const svg = mediaName(textOf(yield* manager.call("mcp__active__svg")), "svg")
      const png = mediaName(textOf(yield* manager.call("mcp__media__image")), "png")
      const base = yield* endpoint(paths)

      for (const [name, type, body] of [[html, "text/html", HTML], [svg, "image/svg+xml", SVG]] as const) {
        const got = yield* Effect.promise(() => send(base, `/api/mcp-media/${name}`))
        assert.strictEqual(got.status, 200)
        assert.strictEqual(got.headers["content-type"], type)
        assert.strictEqual(got.headers["x-content-type-options"], "nosniff")
        assert.strictEqual(got.headers["content-security-policy"], "default-src 'none'; sandbox")
        assert.strictEqual(got.headers["content-disposition"], `attachment; filename="${name}"`)
        assert.strictEqual(got.body.toString(), body)
        assert.isUndefined(Object.keys(got.headers).find((h) => h.startsWith("access-control-")))

        const head = yield* Effect.promise(() => send(base, `/api/mcp-media/${name}`, { method: "HEAD" }))
        assert.strictEqual(head.status, 200)
        assert.strictEqual(head.body.length, 0)
        for (
          const h of [
            "content-type",
            "content-length",
            "content-security-policy",
            "content-disposition",
            "x-content-type-options"
          ]
        ) {
          assert.strictEqual(head.headers[h], got.headers[h], h)
        }
        assert.strictEqual(head.headers["content-length"], String(Buffer.byteLength(body)))
      }

      const image = yield* Effect.promise(() => send(base, `/api/mcp-media/${png}`))
      assert.strictEqual(image.status, 200)
      assert.strictEqual(image.headers["content-type"], "image/png")
      assert.strictEqual(image.headers["x-content-type-options"], "nosniff")
      assert.strictEqual(image.headers["content-security-policy"], "sandbox")
      assert.isUndefined(image.headers["content-disposition"])
      assert.deepStrictEqual([...image.body], [...Fs.readFileSync(Path.join(paths.mediaDir, png))])
      assert.strictEqual((Fs.statSync(Path.join(paths.mediaDir, png)).mode & 0o777).toString(8), "600")

      const missing = yield* Effect.promise(() => send(base, "/api/mcp-media/nope.png", { method: "HEAD" }))
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(missing.headers["x-content-type-options"], "nosniff")
      const other = yield* Effect.promise(() => send(base, "/api/nope"))
      assert.strictEqual(other.status, 404)
      assert.strictEqual(other.headers["x-content-type-options"], "nosniff")
    }))

  it("which types are shown inline", () => {
    for (const t of ["image/png", "image/jpeg", "image/gif", "image/webp", "audio/wav", "video/mp4", "text/plain"]) {
      assert.isTrue(HttpEndpoints.isInlineSafe(t), t)
    }
    for (
      const t of [
        "image/svg+xml",
        "text/html",
        "application/pdf",
        "application/json",
        "text/markdown",
        "application/octet-stream"
      ]
    ) {
      assert.isFalse(HttpEndpoints.isInlineSafe(t), t)
    }
  })

  it.scopedLive("a large file is streamed whole", () =>
    Effect.gen(function*() {
      const paths = Paths.make({ home: yield* tempHome })
      Fs.mkdirSync(paths.mediaDir, { recursive: true })
      const bytes = Buffer.alloc(5 * 1024 * 1024 + 17)
      for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31) & 0xff
      Fs.writeFileSync(Path.join(paths.mediaDir, "big.bin"), bytes)
      const base = yield* endpoint(paths)
      const got = yield* Effect.promise(() => send(base, "/api/mcp-media/big.bin"))
      assert.strictEqual(got.status, 200)
      assert.strictEqual(got.headers["content-length"], String(bytes.length))
      assert.isTrue(got.body.equals(bytes))
    }))
})

describe("the Host and Origin rule", () => {
  it.scopedLive("refuses a Host that does not name the server and a foreign Origin, on every route", () =>
    Effect.gen(function*() {
      const paths = Paths.make({ home: yield* tempHome })
      Fs.mkdirSync(paths.mediaDir, { recursive: true })
      Fs.writeFileSync(Path.join(paths.mediaDir, "a.txt"), "hello")
      const base = yield* endpoint(paths)
      const port = new URL(base).port
      const get = (path: string, headers: Record<string, string>) => Effect.promise(() => send(base, path, { headers }))

      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`]) {
        const ok = yield* get("/api/mcp-media/a.txt", { host })
        assert.strictEqual(ok.status, 200, host)
        assert.strictEqual(ok.body.toString(), "hello")
      }
      for (
        const host of [
          `evil.example:${port}`,
          `127.0.0.1`,
          `localhost:1`,
          `127.0.0.1.nip.io:${port}`,
          `[::1]:${port}`,
          `10.0.0.1:${port}`
        ]
      ) {
        for (const path of ["/api/mcp-media/a.txt", "/", "/rpc"]) {
          const refused = yield* get(path, { host })
          assert.strictEqual(refused.status, 421, `${host} ${path}`)
          assert.include(refused.body.toString(), "Host header")
          assert.notInclude(refused.body.toString(), "hello")
          assert.strictEqual(refused.headers["x-content-type-options"], "nosniff")
        }
      }
      // No Host at all (HTTP/1.0; Node itself answers 400 to an HTTP/1.1 request without one).
      const bare = yield* Effect.promise(() => rawExchange(base, "GET /api/mcp-media/a.txt HTTP/1.0\r\n\r\n"))
      assert.match(bare, /^HTTP\/1\.1 421 /)
      assert.notInclude(bare, "hello")

      for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
        assert.strictEqual((yield* get("/api/mcp-media/a.txt", { origin })).status, 200, origin)
      }
      for (
        const origin of [
          "http://evil.example",
          `http://evil.example:${port}`,
          "null",
          `https://127.0.0.1:${port}`,
          `http://127.0.0.1:1`
        ]
      ) {
        const refused = yield* get("/api/mcp-media/a.txt", { origin })
        assert.strictEqual(refused.status, 403, origin)
        assert.notInclude(refused.body.toString(), "hello")
        assert.isUndefined(Object.keys(refused.headers).find((h) => h.startsWith("access-control-")))
      }
    }))

  it("accepts [::1] only when bound there, and a port-less Host only on port 80", () => {
    const v4 = HttpEndpoints.allowedFor("127.0.0.1", 8787)
    assert.sameMembers([...v4.hosts], ["127.0.0.1:8787", "localhost:8787"])
    assert.sameMembers([...v4.origins], ["http://127.0.0.1:8787", "http://localhost:8787"])
    const v6 = HttpEndpoints.allowedFor("::1", 8787)
    assert.sameMembers([...v6.hosts], ["127.0.0.1:8787", "localhost:8787", "[::1]:8787"])
    assert.include([...v6.origins], "http://[::1]:8787")
    const other = HttpEndpoints.allowedFor("127.0.0.2", 80)
    assert.sameMembers([...other.hosts], [
      "127.0.0.1:80",
      "localhost:80",
      "127.0.0.2:80",
      "127.0.0.1",
      "localhost",
      "127.0.0.2"
    ])
  })
})

/** Opens `count` connections; `first` is written on each once connected (nothing when empty). */
const openSockets = (base: string, count: number, first: string) => {
  const url = new URL(base)
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<{ readonly socket: Net.Socket; readonly closed: Promise<void> }>((resolve, reject) => {
          const socket = Net.connect({ host: url.hostname, port: Number(url.port) })
          const closed = new Promise<void>((r) => socket.once("close", () => r()))
          socket.on("error", () => {})
          socket.resume() // read what the server sends (its 408), so its close is seen
          socket.once("connect", () => {
            if (first.length > 0) socket.write(first)
            resolve({ socket, closed })
          })
          socket.once("error", reject)
        })
    )
  )
}

describe("the server's limits", () => {
  it.scopedLive("closes idle, half-sent and kept-alive connections after their timeouts, and still answers", () =>
    Effect.gen(function*() {
      const paths = Paths.make({ home: yield* tempHome })
      Fs.mkdirSync(paths.mediaDir, { recursive: true })
      Fs.writeFileSync(Path.join(paths.mediaDir, "a.txt"), "hello")
      const base = yield* endpoint(paths, {
        headersTimeout: "300 millis",
        requestTimeout: "600 millis",
        keepAliveTimeout: "300 millis"
      })
      const host = new URL(base).host
      const sockets = yield* Effect.promise(() =>
        Promise.all([
          openSockets(base, 100, ""),
          openSockets(base, 90, `GET /api/mcp-media/a.txt HTTP/1.1\r\nHost: ${host}\r\nX-Slow: `),
          openSockets(base, 10, `GET /api/mcp-media/a.txt HTTP/1.1\r\nHost: ${host}\r\nConnection: keep-alive\r\n\r\n`)
        ]).then((groups) => groups.flat())
      )
      assert.strictEqual(sockets.length, 200)
      // The server closes every one of them (the client never does); the bound only guards a hang.
      const closedAll = yield* Effect.promise(() => Promise.all(sockets.map((s) => s.closed)).then(() => true)).pipe(
        Effect.timeoutTo({ duration: "30 seconds", onSuccess: (x) => x, onTimeout: () => false })
      )
      assert.isTrue(closedAll, `still open: ${sockets.filter((s) => !s.socket.destroyed).length}`)
      const ok = yield* Effect.promise(() => send(base, "/api/mcp-media/a.txt"))
      assert.strictEqual(ok.status, 200)
      assert.strictEqual(ok.body.toString(), "hello")
    }))

  it.scopedLive("refuses connections over the cap and recovers when they close", () =>
    Effect.gen(function*() {
      const paths = Paths.make({ home: yield* tempHome })
      Fs.mkdirSync(paths.mediaDir, { recursive: true })
      Fs.writeFileSync(Path.join(paths.mediaDir, "a.txt"), "hello")
      const logs: Array<string> = []
      const base = yield* endpoint(paths, { maxConnections: 20, headersTimeout: "60 seconds" }, logs)
      const held = yield* Effect.promise(() => openSockets(base, 20, ""))
      const over = yield* Effect.promise(() =>
        send(base, "/api/mcp-media/a.txt").then((a) => `answered ${a.status}`, (e: Error) => e.message)
      )
      assert.match(over, /ECONNRESET|socket hang up/)
      yield* Effect.promise(() => until("the refusal to be logged", async () => logs, (l) => l.length > 0, 10_000))
      assert.match(logs.join("\n"), /the HTTP endpoint refused \d+ connection\(s\): 20 were open at once \(the cap\)/)
      for (const s of held) s.socket.destroy()
      const ok = yield* Effect.promise(() =>
        until("the endpoint to answer again", () =>
          send(base, "/api/mcp-media/a.txt").then((a) => a.status, () => 0), (s) =>
          s === 200)
      )
      assert.strictEqual(ok, 200)
    }))
})

describe("skald serve", () => {
  it(
    "on a taken port exits 2 with a line naming the address and a hint naming the settings, before any server starts",
    async () => {
      const blocker = Net.createServer()
      await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", () => r()))
      const port = (blocker.address() as Net.AddressInfo).port
      try {
        const home = makeHome()
        const out = await runSkald(["serve"], { env: { SKALD_HOME: home, SKALD_PORT: String(port) } })
        assert.strictEqual(out.status, 2)
        const [first, hint, ...rest] = out.stderr.trimEnd().split("\n")
        assert.deepStrictEqual(rest, [], out.stderr)
        assert.include(first, `skald: cannot listen on 127.0.0.1:${port}: the address is already in use`)
        assert.include(hint, "SKALD_PORT")
        assert.include(hint, "SKALD_HOST")
        // The first run did not happen: no demo server was registered.
        assert.deepStrictEqual(await list(home), [])
      } finally {
        blocker.close()
      }
    },
    60_000
  )

  it.scopedLive("media links are absolute when the host's address is known (as in skald serve)", () =>
    Effect.gen(function*() {
      const home = yield* tempHome
      const paths = Paths.make({ home })
      // The composition of `skald serve`: the endpoint listens, then the manager gets its URL.
      const base = yield* endpoint(paths)
      const context = yield* Layer.build(
        Layer.provideMerge(McpManager.McpManager.Default({ ...fastOptions, mediaBaseUrl: base }), servicesLayer(home))
      )
      const manager = Context.get(context, McpManager.McpManager)
      const demo = Path.join(repoRoot, "scripts", "demo-server.ts")
      yield* manager.register(commandEntry("demo", process.execPath, ["--import", "tsx", demo]))
      yield* waitForState(manager, "demo", "connected")
      const text = textOf(yield* manager.call("mcp__demo__gradient_png"))
      const url = /!\[image\]\((http:\/\/127\.0\.0\.1:\d+\/api\/mcp-media\/[0-9a-f-]+\.png)\)/.exec(text)?.[1]
      assert.isDefined(url, text)
      assert.isTrue(url!.startsWith(`${base}/api/mcp-media/`))
      const got = yield* Effect.promise(() => send(url!, new URL(url!).pathname))
      assert.strictEqual(got.status, 200)
      assert.deepStrictEqual([...got.body.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47])

      // Without an address (`skald mcp call` with no host), they stay relative.
      const cli = yield* Effect.promise(() => run(home, ["mcp", "call", "demo", "gradient_png"]))
      assert.strictEqual(cli.status, 0, cli.stderr)
      assert.match(cli.stdout, /!\[image\]\(\/api\/mcp-media\/[0-9a-f-]+\.png\)/)
    }))
})
