/**
 * `skald mcp login|logout` with the real binary against the loopback authorization server
 * (fixtures/oauth-http.ts): login prints the URL and takes the redirect on 127.0.0.1; the tokens
 * end up in the secret store and nowhere else under the home (the marker every token and secret
 * carries is searched in every file, the database included); `mcp call` uses them; logout
 * forgets them.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { runSkald, skald, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import { makeHome, until } from "./host-support.js"

const MARKER = "SKALD-OAUTH-MARKER"

/** The files under `dir` whose bytes contain `needle`. */
const filesContaining = (dir: string, needle: string): Array<string> =>
  (Fs.readdirSync(dir, { recursive: true }) as Array<string>)
    .map((entry) => Path.join(dir, entry))
    .filter((file) => Fs.lstatSync(file).isFile() && Fs.readFileSync(file).includes(needle))

/** Starts the fixture; resolves with its URL and a stop function. */
const startFixture = (env: Record<string, string> = {}): Promise<{ url: string; stop: () => void }> =>
  new Promise((resolve, reject) => {
    const command = fixture("oauth-http", env)
    const child = spawn(command.command, [...command.args], {
      cwd: command.cwd,
      env: { ...process.env, ...command.env },
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString()
      const m = /^(http:\/\/127\.0\.0\.1:\d+\/mcp)\n/.exec(out)
      if (m !== null) resolve({ url: m[1]!, stop: () => child.kill("SIGTERM") })
    })
    child.on("exit", (code) => reject(new Error(`the fixture exited with ${code}`)))
  })

/**
 * Runs `skald ARGS`, following the authorization URL it prints (on `stream`) as a browser would;
 * resolves with its exit and output.
 */
const runFollowing = (
  home: string,
  args: ReadonlyArray<string>,
  stream: "stdout" | "stderr"
): Promise<{ status: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [skald, ...args], {
      env: { ...process.env, SKALD_HOME: home },
      stdio: ["ignore", "pipe", "pipe"]
    })
    const text = { stdout: "", stderr: "" }
    let followed = false
    for (const name of ["stdout", "stderr"] as const) {
      child[name]!.on("data", (d: Buffer) => {
        text[name] += d.toString()
        const line = text[stream].split("\n").find((l) => l.startsWith("http://"))
        if (name === stream && line !== undefined && !followed) {
          followed = true
          // The authorization server approves at once and redirects to the loopback callback.
          void fetch(line.trim()).then((r) => r.text())
        }
      })
    }
    child.on("exit", (status) => resolve({ status, ...text }))
  })

const login = (home: string, name: string) => runFollowing(home, ["mcp", "login", name, "--no-browser"], "stdout")

/**
 * A stand-in browser for `$BROWSER`: an executable script that appends the URL it is given to
 * `record` and requests it, as a browser would (the fixture approves at once and redirects to the
 * loopback callback), so that login completes with no one at the keyboard.
 */
const fakeBrowser = (dir: string, record: string): string => {
  const script = Path.join(dir, "fake-browser.mjs")
  Fs.writeFileSync(
    script,
    `#!${process.execPath}\n` +
      `import * as fs from "node:fs"\n` +
      `const url = process.argv[2]\n` +
      `fs.appendFileSync(${JSON.stringify(record)}, JSON.stringify(process.argv.slice(2)) + "\\n")\n` +
      `await fetch(url).then((r) => r.text())\n`,
    { mode: 0o755 }
  )
  return script
}

describe("skald mcp login and logout", () => {
  it("login stores the tokens in the secret store only; call uses them; logout forgets them", async () => {
    const home = makeHome()
    const server = await startFixture()
    try {
      const env = { SKALD_HOME: home }
      const added = await runSkald(["mcp", "add", "guarded", "--http", server.url], { env })
      assert.strictEqual(added.status, 0, added.stderr)

      const done = await login(home, "guarded")
      assert.strictEqual(done.status, 0, done.stderr)
      assert.include(done.stderr, "authorized 'guarded'")
      assert.notInclude(done.stderr, MARKER)

      const called = await runSkald(["mcp", "call", "guarded", "echo", "--args", "{\"message\":\"hi\"}"], { env })
      assert.strictEqual(called.status, 0, called.stderr)
      assert.include(called.stdout, "hi")
      assert.notInclude(called.stdout + called.stderr, MARKER)

      // The tokens and the registered client's secret: in the secret store's one file, nowhere else.
      const secretsDir = Path.join(home, "secrets")
      const holding = filesContaining(home, MARKER)
      assert.isAbove(holding.length, 0)
      for (const file of holding) assert.isTrue(file.startsWith(secretsDir + Path.sep), `${file} holds a token`)
      for (const file of holding) assert.strictEqual(Fs.statSync(file).mode & 0o777, 0o600)

      const out = await runSkald(["mcp", "logout", "guarded"], { env })
      assert.strictEqual(out.status, 0, out.stderr)
      assert.include(out.stderr, "forgot the OAuth tokens of 'guarded'")
      assert.deepStrictEqual(filesContaining(home, MARKER), [])
    } finally {
      server.stop()
      Fs.rmSync(home, { recursive: true, force: true })
    }
  }, 120_000)

  it("login while a host runs: the host reconnects the server at once, not at its next retry", async () => {
    const home = makeHome()
    const server = await startFixture()
    try {
      const env = { SKALD_HOME: home }
      assert.strictEqual((await runSkald(["mcp", "add", "guarded", "--http", server.url], { env })).status, 0)
      const serve = await startServe(home)
      type Summary = { name: string; state: string; error?: string; since?: string; nextRetryAt?: string }
      const guarded = async () => {
        const out = await runSkald(["mcp", "list", "--json"], { env })
        return (JSON.parse(out.stdout) as Array<Summary>).find((s) => s.name === "guarded")
      }
      try {
        // Failing with no login, its retries spaced ever wider: wait until the next is 16 s away (a
        // margin for a loaded machine: the login and the reconnection take a few seconds there).
        const failing = await until("a retry 16 s away", guarded, (s) => /restarting in 16s/.test(s?.error ?? ""))
        const retryAt = Date.parse(failing!.nextRetryAt!)
        const done = await login(home, "guarded")
        assert.strictEqual(done.status, 0, done.stderr)
        assert.match(done.stderr, /asked the running host \(pid \d+\) to reconnect 'guarded'/)
        const connected = await until("connected", guarded, (s) => s?.state === "connected")
        // Connected before that retry was due: the host was asked, it did not wait.
        assert.isBelow(Date.parse(connected!.since!), retryAt)
      } finally {
        await stopProcess(serve.child)
      }
    } finally {
      server.stop()
      Fs.rmSync(home, { recursive: true, force: true })
    }
  }, 120_000)

  it("mcp rm deletes the server's OAuth tokens with it", async () => {
    const home = makeHome()
    const server = await startFixture()
    try {
      const env = { SKALD_HOME: home }
      assert.strictEqual((await runSkald(["mcp", "add", "guarded", "--http", server.url], { env })).status, 0)
      const done = await login(home, "guarded")
      assert.strictEqual(done.status, 0, done.stderr)
      assert.isAbove(filesContaining(home, MARKER).length, 0)
      const removed = await runSkald(["mcp", "rm", "guarded"], { env })
      assert.strictEqual(removed.status, 0, removed.stderr)
      assert.include(removed.stderr, "MCP_GUARDED__OAUTH")
      assert.deepStrictEqual(filesContaining(home, MARKER), [])
    } finally {
      server.stop()
      Fs.rmSync(home, { recursive: true, force: true })
    }
  }, 120_000)

  it("the ad-hoc `skald call --http URL` runs the flow too, keeping nothing", async () => {
    const home = makeHome()
    const server = await startFixture()
    try {
      const r = await runFollowing(
        home,
        ["call", "echo", "--http", server.url, "--args", "{\"message\":\"hi\"}"],
        "stderr"
      )
      assert.strictEqual(r.status, 0, r.stderr)
      assert.include(r.stderr, "asks for authorization")
      assert.include(r.stdout, "hi")
      assert.notInclude(r.stdout + r.stderr, MARKER)
      assert.deepStrictEqual(Fs.existsSync(home) ? filesContaining(home, MARKER) : [], [])
    } finally {
      server.stop()
      Fs.rmSync(home, { recursive: true, force: true })
    }
  }, 120_000)

  it(
    "a refresh the authorization server refuses: call, list and show say to log in again, no token shown",
    async () => {
      const home = makeHome()
      const server = await startFixture({ OAUTH_REFUSE_REFRESH: "1" })
      try {
        const env = { SKALD_HOME: home }
        assert.strictEqual((await runSkald(["mcp", "add", "guarded", "--http", server.url], { env })).status, 0)
        const done = await login(home, "guarded")
        assert.strictEqual(done.status, 0, done.stderr)
        // The access token is forgotten by the server: the next request gets 401, and the refresh is refused.
        await fetch(new URL("/revoke-access", server.url), { method: "POST" }).then((r) => r.text())

        const called = await runSkald(["mcp", "call", "guarded", "echo", "--args", "{\"message\":\"hi\"}"], { env })
        assert.strictEqual(called.status, 2, called.stderr)
        assert.include(called.stderr, "login expired")
        assert.include(called.stderr, "`skald mcp login guarded`")
        assert.notInclude(called.stderr, "api key")
        assert.notInclude(called.stdout + called.stderr, MARKER)

        const serve = await startServe(home)
        try {
          const listed = await until(
            "guarded to fail",
            () => runSkald(["mcp", "list"], { env }),
            (r) => r.stdout.includes("failed")
          )
          assert.include(listed.stdout, "login expired")
          assert.include(listed.stderr, "'guarded': authorize it again with `skald mcp login guarded`")
          assert.notInclude(listed.stdout + listed.stderr, "api key")
          // The host retries the server (its status goes "starting" in between): wait for "failed".
          const shown = await until(
            "show to say failed",
            () => runSkald(["mcp", "show", "guarded"], { env }),
            (r) => r.stdout.includes("failed")
          )
          assert.include(shown.stdout, "login expired")
          assert.include(shown.stderr, "`skald mcp login guarded`")
          const json = await until(
            "show --json to say failed",
            () => runSkald(["mcp", "show", "guarded", "--json"], { env }).then((r) => JSON.parse(r.stdout)),
            (j) => j.state === "failed"
          )
          assert.strictEqual(json.errorCause._tag, "McpHttpError")
          assert.strictEqual(json.errorCause.oauth, "expired")
          for (const text of [listed.stdout, listed.stderr, shown.stdout, shown.stderr, serve.stderr()]) {
            assert.notInclude(text, MARKER)
          }
        } finally {
          await stopProcess(serve.child)
        }
        // The tokens are still only in the secret store (nothing in the database, logs or status).
        const secretsDir = Path.join(home, "secrets")
        for (const file of filesContaining(home, MARKER)) {
          assert.isTrue(file.startsWith(secretsDir + Path.sep), `${file} holds a token`)
        }
      } finally {
        server.stop()
        Fs.rmSync(home, { recursive: true, force: true })
      }
    },
    120_000
  )

  it("a server never logged in: call says to log in, not to pass an api key", async () => {
    const home = makeHome()
    const server = await startFixture()
    try {
      const env = { SKALD_HOME: home }
      assert.strictEqual((await runSkald(["mcp", "add", "guarded", "--http", server.url], { env })).status, 0)
      const called = await runSkald(["mcp", "call", "guarded", "echo", "--args", "{\"message\":\"hi\"}"], { env })
      assert.strictEqual(called.status, 2, called.stderr)
      assert.include(called.stderr, "needs authorization")
      assert.include(called.stderr, "`skald mcp login guarded`")
      assert.notInclude(called.stderr, "api key")
    } finally {
      server.stop()
      Fs.rmSync(home, { recursive: true, force: true })
    }
  }, 120_000)

  it("login opens $BROWSER with the URL (no shell) and still prints it; the redirect completes the flow", async () => {
    const home = makeHome()
    const server = await startFixture()
    try {
      const record = Path.join(home, "browser.jsonl")
      const browser = fakeBrowser(home, record)
      const env = { SKALD_HOME: home }
      assert.strictEqual((await runSkald(["mcp", "add", "guarded", "--http", server.url], { env })).status, 0)
      // Not followed by the test: only the stand-in browser requests the URL. A missing command
      // before it in the list is skipped.
      const done = await runSkald(["mcp", "login", "guarded"], {
        env: { ...env, BROWSER: `/nonexistent/browser:${browser}` }
      })
      assert.strictEqual(done.status, 0, done.stderr)
      assert.include(done.stderr, `opened a browser (${browser})`)
      assert.include(done.stderr, "authorized 'guarded'")
      const url = done.stdout.split("\n").find((l) => l.startsWith("http://"))
      assert.isDefined(url)
      const opened = Fs.readFileSync(record, "utf8").trim().split("\n").map((l) => JSON.parse(l))
      // One argument, the URL exactly as printed (no shell split or expanded it).
      assert.deepStrictEqual(opened, [[url]])
      const called = await runSkald(["mcp", "call", "guarded", "echo", "--args", "{\"message\":\"hi\"}"], { env })
      assert.strictEqual(called.status, 0, called.stderr)
    } finally {
      server.stop()
      Fs.rmSync(home, { recursive: true, force: true })
    }
  }, 120_000)

  it("login --no-browser does not start $BROWSER; it prints the URL only", async () => {
    const home = makeHome()
    const server = await startFixture()
    try {
      const record = Path.join(home, "browser.jsonl")
      const browser = fakeBrowser(home, record)
      assert.strictEqual(
        (await runSkald(["mcp", "add", "guarded", "--http", server.url], { env: { SKALD_HOME: home } })).status,
        0
      )
      const done = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [skald, "mcp", "login", "guarded", "--no-browser"], {
          env: { ...process.env, SKALD_HOME: home, BROWSER: browser },
          stdio: ["ignore", "pipe", "pipe"]
        })
        const text = { stdout: "", stderr: "" }
        child.stdout!.on("data", (d: Buffer) => {
          text.stdout += d.toString()
          // The URL printed: the test stops here (no one follows it).
          if (text.stdout.includes("\n")) child.kill("SIGINT")
        })
        child.stderr!.on("data", (d: Buffer) => (text.stderr += d.toString()))
        child.on("exit", (status) => resolve({ status, ...text }))
      })
      assert.match(done.stdout, /^http:\/\/127\.0\.0\.1:\d+\/authorize\?/)
      assert.include(done.stderr, "open this URL in a browser to authorize 'guarded'")
      assert.notInclude(done.stderr, "opened a browser")
      assert.isFalse(Fs.existsSync(record))
    } finally {
      server.stop()
      Fs.rmSync(home, { recursive: true, force: true })
    }
  }, 120_000)

  it(
    "mcp add --oauth-client-id/--oauth-client-secret @-/--oauth-scope: a pre-registered client, its secret in the store only",
    async () => {
      const home = makeHome()
      const secret = `${MARKER}-preregistered-secret`
      const record = Path.join(home, "fixture.jsonl")
      const server = await startFixture({
        OAUTH_CLIENT_ID: "skald-pre",
        OAUTH_CLIENT_SECRET: secret,
        FIXTURE_RECORD: record
      })
      try {
        const env = { SKALD_HOME: home }
        const added = await runSkald([
          "mcp",
          "add",
          "guarded",
          "--http",
          server.url,
          "--oauth-client-id",
          "skald-pre",
          "--oauth-client-secret",
          "@-",
          "--oauth-scope",
          "echo extra"
        ], { env, input: `${secret}\n` })
        assert.strictEqual(added.status, 0, added.stderr)
        assert.include(added.stderr, "MCP_GUARDED__OAUTH_CLIENT_SECRET")
        const shown = await runSkald(["mcp", "show", "guarded"], { env })
        assert.match(shown.stdout, /oauth client\s+skald-pre/)
        assert.match(shown.stdout, /oauth secret\s+\$\{MCP_GUARDED__OAUTH_CLIENT_SECRET\}/)
        assert.match(shown.stdout, /oauth scope\s+echo extra/)
        const json = JSON.parse((await runSkald(["mcp", "show", "guarded", "--json"], { env })).stdout)
        assert.deepStrictEqual(json.oauth, {
          clientId: "skald-pre",
          clientSecret: "${MCP_GUARDED__OAUTH_CLIENT_SECRET}",
          scope: "echo extra"
        })
        assert.notInclude(shown.stdout + JSON.stringify(json), MARKER)

        const done = await login(home, "guarded")
        assert.strictEqual(done.status, 0, done.stderr)
        const called = await runSkald(["mcp", "call", "guarded", "echo", "--args", "{\"message\":\"hi\"}"], { env })
        assert.strictEqual(called.status, 0, called.stderr)
        assert.include(called.stdout, "hi")
        const events = Fs.readFileSync(record, "utf8").trim().split("\n").map((l) => JSON.parse(l))
        // No registration (the fixture offers none): the configured client, its scope, its secret accepted.
        assert.deepStrictEqual(
          events.filter((e) => e.event === "authorize"),
          [{ event: "authorize", clientId: "skald-pre", scope: "echo extra" }]
        )
        assert.deepStrictEqual(
          events.filter((e) => e.event === "token"),
          [{ event: "token", grant: "authorization_code", clientId: "skald-pre" }]
        )
        const secretsDir = Path.join(home, "secrets")
        const holding = filesContaining(home, MARKER)
        assert.include(holding.map((f) => Path.basename(f)), "MCP_GUARDED__OAUTH_CLIENT_SECRET")
        for (const file of holding) assert.isTrue(file.startsWith(secretsDir + Path.sep), `${file} holds a secret`)

        // rm takes the moved client secret with it.
        const removed = await runSkald(["mcp", "rm", "guarded"], { env })
        assert.include(removed.stderr, "MCP_GUARDED__OAUTH_CLIENT_SECRET")
        assert.deepStrictEqual(filesContaining(home, MARKER), [])
      } finally {
        server.stop()
        Fs.rmSync(home, { recursive: true, force: true })
      }
    },
    120_000
  )

  it(
    "mcp add --oauth-grant client_credentials: a call and the host get tokens with the client secret, no login",
    async () => {
      const home = makeHome()
      const secret = `${MARKER}-machine-secret`
      const record = Path.join(home, "fixture.jsonl")
      const server = await startFixture({ OAUTH_CLIENT_ID: "bot", OAUTH_CLIENT_SECRET: secret, FIXTURE_RECORD: record })
      try {
        const env = { SKALD_HOME: home }
        assert.strictEqual((await runSkald(["secret", "set", "BOT_SECRET"], { env, input: secret })).status, 0)
        const added = await runSkald([
          "mcp",
          "add",
          "bot",
          "--http",
          server.url,
          "--oauth-grant",
          "client_credentials",
          "--oauth-client-id",
          "bot",
          "--oauth-client-secret",
          "${BOT_SECRET}"
        ], { env })
        assert.strictEqual(added.status, 0, added.stderr)
        const shown = await runSkald(["mcp", "show", "bot"], { env })
        assert.match(shown.stdout, /oauth grant\s+client_credentials/)
        assert.match(shown.stdout, /oauth secret\s+\$\{BOT_SECRET\}/)

        const called = await runSkald(["mcp", "call", "bot", "echo", "--args", "{\"message\":\"hi\"}"], { env })
        assert.strictEqual(called.status, 0, called.stderr)
        assert.include(called.stdout, "hi")
        const tokens = Fs.readFileSync(record, "utf8").trim().split("\n").map((l) => JSON.parse(l))
          .filter((e) => e.event === "token")
        assert.deepStrictEqual(tokens.map((e) => [e.grant, e.clientId]), [["client_credentials", "bot"]])

        // The running host connects it the same way, with no one logged in.
        assert.strictEqual((await runSkald(["mcp", "logout", "bot"], { env })).status, 0)
        const serve = await startServe(home)
        try {
          const listed = await until(
            "bot to connect",
            () => runSkald(["mcp", "list"], { env }),
            (r) => /^bot\s+http\s+connected/m.test(r.stdout)
          )
          assert.match(listed.stdout, /^bot\s+http\s+connected \(\d+ tools\)/m)
          assert.notInclude(listed.stdout + listed.stderr + serve.stderr(), MARKER)
        } finally {
          await stopProcess(serve.child)
        }

        // A wrong secret: the authorization failed, said so (not "api key"), the secret not shown.
        assert.strictEqual(
          (await runSkald(["secret", "set", "BOT_SECRET"], { env, input: `${MARKER}-wrong` })).status,
          0
        )
        assert.strictEqual((await runSkald(["mcp", "logout", "bot"], { env })).status, 0)
        const refused = await runSkald(["mcp", "call", "bot", "echo", "--args", "{\"message\":\"hi\"}"], { env })
        assert.strictEqual(refused.status, 2, refused.stderr)
        assert.include(refused.stderr, "authorization failed")
        assert.include(refused.stderr, "invalid_client")
        assert.notInclude(refused.stderr, "api key")
        assert.notInclude(refused.stdout + refused.stderr, MARKER)
        // A login cannot fix a refused client: the secret must be corrected, and the hint says how.
        assert.include(refused.stderr, "refused the configured OAuth client id or secret")
        assert.notInclude(refused.stderr, "mcp login")
        assert.include(refused.stderr, "skald secret set VAR")
        assert.include(refused.stderr, "skald mcp show bot")

        // The host's status says the same, with the same hint.
        const serve2 = await startServe(home)
        try {
          const listed = await until(
            "bot to fail",
            () => runSkald(["mcp", "list"], { env }),
            (r) => /^bot\s+http\s+failed/m.test(r.stdout)
          )
          assert.include(listed.stdout + listed.stderr, "refused the configured OAuth client id or secret")
          assert.include(listed.stderr, "skald secret set VAR")
          assert.notInclude(listed.stdout + listed.stderr, "mcp login")
          assert.notInclude(listed.stdout + listed.stderr + serve2.stderr(), MARKER)
        } finally {
          await stopProcess(serve2.child)
        }
      } finally {
        server.stop()
        Fs.rmSync(home, { recursive: true, force: true })
      }
    },
    120_000
  )

  it(
    "mcp add --oauth-private-key @-: a private_key_jwt machine client; the key checked, stored as PKCS#8, in the store only",
    async () => {
      const home = makeHome()
      const record = Path.join(home, "fixture.jsonl")
      const { privateKey, publicKey } = Crypto.generateKeyPairSync("ec", { namedCurve: "P-256" })
      // A SEC1 PEM ("EC PRIVATE KEY"), as openssl ecparam writes it: converted to PKCS#8 on the way in.
      const sec1 = privateKey.export({ type: "sec1", format: "pem" }).toString()
      const keyBody = sec1.split("\n")[1]!
      const server = await startFixture({
        OAUTH_CLIENT_ID: "ledger-bot",
        OAUTH_CLIENT_PUBLIC_KEY: publicKey.export({ type: "spki", format: "pem" }).toString(),
        FIXTURE_RECORD: record
      })
      try {
        const env = { SKALD_HOME: home }
        const base = ["mcp", "add", "ledger", "--http", server.url, "--oauth-grant", "client_credentials"]
        // A key of the wrong kind for the algorithm is refused, saying why, not quoting the key.
        const wrong = await runSkald([
          ...base,
          "--oauth-client-id",
          "ledger-bot",
          "--oauth-private-key",
          "@-",
          "--oauth-signing-alg",
          "RS256"
        ], { env, input: sec1 })
        assert.strictEqual(wrong.status, 2, wrong.stderr)
        assert.include(
          wrong.stderr,
          "the OAuth private key is an EC key on prime256v1, but RS256 signs with an RSA key"
        )
        assert.notInclude(wrong.stdout + wrong.stderr, keyBody)
        const notAKey = await runSkald([...base, "--oauth-client-id", "ledger-bot", "--oauth-private-key", "@-"], {
          env,
          input: "not a key"
        })
        assert.strictEqual(notAKey.status, 2, notAKey.stderr)
        assert.include(notAKey.stderr, "the OAuth private key is not a PEM private key")
        const noClient = await runSkald(["mcp", "add", "ledger", "--http", server.url, "--oauth-private-key", "@-"], {
          env,
          input: sec1
        })
        assert.strictEqual(noClient.status, 2, noClient.stderr)
        assert.include(noClient.stderr, "an OAuth private key needs the client id it belongs to")

        const added = await runSkald([...base, "--oauth-client-id", "ledger-bot", "--oauth-private-key", "@-"], {
          env,
          input: sec1
        })
        assert.strictEqual(added.status, 0, added.stderr)
        assert.include(added.stderr, "MCP_LEDGER__OAUTH_PRIVATE_KEY")
        const shown = await runSkald(["mcp", "show", "ledger"], { env })
        assert.match(shown.stdout, /oauth key\s+\$\{MCP_LEDGER__OAUTH_PRIVATE_KEY\}/)
        const stored = Fs.readFileSync(Path.join(home, "secrets", "vars", "MCP_LEDGER__OAUTH_PRIVATE_KEY"), "utf8")
        assert.match(stored, /^-----BEGIN PRIVATE KEY-----/)

        const called = await runSkald(["mcp", "call", "ledger", "echo", "--args", "{\"message\":\"signed\"}"], { env })
        assert.strictEqual(called.status, 0, called.stderr)
        assert.include(called.stdout, "signed")
        const tokens = Fs.readFileSync(record, "utf8").trim().split("\n").map((l) => JSON.parse(l))
          .filter((e) => e.event === "token")
        // The fixture verified the assertion with the public key: signature, iss/sub, aud, exp, jti.
        assert.deepStrictEqual(tokens.map((e) => [e.grant, e.clientId, e.auth, e.refused]), [
          ["client_credentials", "ledger-bot", "private_key_jwt", undefined]
        ])
        // The key: in the secret store's file, nowhere else under the home.
        const holding = filesContaining(home, keyBody)
        assert.deepStrictEqual(holding, [])
        const pkcs8Body = stored.split("\n")[1]!
        for (const file of filesContaining(home, pkcs8Body)) {
          assert.isTrue(file.startsWith(Path.join(home, "secrets") + Path.sep), `${file} holds the key`)
        }
      } finally {
        server.stop()
        Fs.rmSync(home, { recursive: true, force: true })
      }
    },
    120_000
  )

  it(
    "mcp add --oauth-client-metadata-url: the document's URL is the client id; login and call with no registration",
    async () => {
      const home = makeHome()
      const record = Path.join(home, "fixture.jsonl")
      const server = await startFixture({ OAUTH_CIMD: "1", FIXTURE_RECORD: record })
      // The client's metadata document, served on loopback as a web host would serve it.
      let documentUrl = ""
      const docs = Http.createServer((req, res) => {
        res.writeHead(req.url === "/skald/client.json" ? 200 : 404, { "content-type": "application/json" })
        res.end(JSON.stringify({
          client_id: documentUrl,
          client_name: "Skald (test)",
          redirect_uris: ["http://127.0.0.1/callback"],
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
          token_endpoint_auth_method: "none"
        }))
      })
      await new Promise<void>((resolve) => docs.listen(0, "127.0.0.1", resolve))
      documentUrl = `http://127.0.0.1:${(docs.address() as { port: number }).port}/skald/client.json`
      try {
        const env = { SKALD_HOME: home }
        const refused = await runSkald(
          ["mcp", "add", "wiki", "--http", server.url, "--oauth-client-metadata-url", "http://example.com/client.json"],
          { env }
        )
        assert.strictEqual(refused.status, 2, refused.stderr)
        assert.include(refused.stderr, "must be https (http only on a loopback host)")
        const both = await runSkald([
          "mcp",
          "add",
          "wiki",
          "--http",
          server.url,
          "--oauth-client-metadata-url",
          documentUrl,
          "--oauth-client-id",
          "x"
        ], { env })
        assert.strictEqual(both.status, 2, both.stderr)
        assert.include(both.stderr, "either a pre-registered client id or a Client ID Metadata Document URL")

        const added = await runSkald([
          "mcp",
          "add",
          "wiki",
          "--http",
          server.url,
          "--oauth-client-metadata-url",
          documentUrl
        ], {
          env
        })
        assert.strictEqual(added.status, 0, added.stderr)
        assert.match(
          (await runSkald(["mcp", "show", "wiki"], { env })).stdout,
          /oauth metadata\s+http:\/\/127\.0\.0\.1:\d+\/skald\/client\.json/
        )
        const done = await login(home, "wiki")
        assert.strictEqual(done.status, 0, done.stderr)
        const called = await runSkald(["mcp", "call", "wiki", "echo", "--args", "{\"message\":\"documented\"}"], {
          env
        })
        assert.strictEqual(called.status, 0, called.stderr)
        assert.include(called.stdout, "documented")
        const events = Fs.readFileSync(record, "utf8").trim().split("\n").map((l) => JSON.parse(l))
        // The authorization server fetched the document and found the loopback redirect in it.
        assert.deepStrictEqual(events.filter((e) => e.event === "cimd"), [{
          event: "cimd",
          url: documentUrl,
          ok: true
        }])
        assert.deepStrictEqual(
          events.filter((e) => e.event === "authorize").map((e) => e.clientId),
          [documentUrl]
        )
        assert.deepStrictEqual(
          events.filter((e) => e.event === "token").map((e) => [e.grant, e.clientId]),
          [["authorization_code", documentUrl]]
        )
      } finally {
        docs.close()
        server.stop()
        Fs.rmSync(home, { recursive: true, force: true })
      }
    },
    120_000
  )

  it("mcp add refuses a client secret given on the command line, and OAuth settings that do not fit", async () => {
    const home = makeHome()
    try {
      const env = { SKALD_HOME: home }
      const url = "http://127.0.0.1:1/mcp"
      const literal = await runSkald(
        ["mcp", "add", "x", "--http", url, "--oauth-client-id", "c", "--oauth-client-secret", `${MARKER}-argv`],
        { env }
      )
      assert.strictEqual(literal.status, 2)
      assert.include(literal.stderr, "--oauth-client-secret takes @-")
      assert.notInclude(literal.stderr, MARKER)
      const noId = await runSkald(["mcp", "add", "x", "--http", url, "--oauth-client-secret", "${S}"], { env })
      assert.strictEqual(noId.status, 2)
      assert.include(noId.stderr, "needs the client id")
      const withKey = await runSkald(
        ["mcp", "add", "x", "--http", url, "--api-key-env", "K", "--oauth-client-id", "c"],
        { env }
      )
      assert.strictEqual(withKey.status, 2)
      assert.include(withKey.stderr, "an api key turns OAuth off")
      const machine = await runSkald(["mcp", "add", "x", "--http", url, "--oauth-grant", "client_credentials"], { env })
      assert.strictEqual(machine.status, 2)
      assert.include(machine.stderr, "needs a pre-registered client id")
      const stdio = await runSkald(["mcp", "add", "x", "--oauth-client-id", "c", "--", "node", "x.js"], { env })
      assert.strictEqual(stdio.status, 2)
      assert.include(stdio.stderr, "go with --http")
      assert.strictEqual((await runSkald(["mcp", "list"], { env })).stderr.includes("no MCP servers registered"), true)
      assert.deepStrictEqual(Fs.existsSync(home) ? filesContaining(home, MARKER) : [], [])
    } finally {
      Fs.rmSync(home, { recursive: true, force: true })
    }
  }, 120_000)
})
