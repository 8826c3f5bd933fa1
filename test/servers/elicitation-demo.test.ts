/**
 * The elicitation demo server (scripts/elicitation-demo.ts) and the URL-elicitation library under
 * it (scripts/lib/url-elicitation.ts), over stdio with our client engine:
 *
 * - URL mode (the client declares `elicitation.url`): the handler plays the user's browser — GET
 *   the one-time page, POST its form on 127.0.0.1 — before or after answering `accept`; the page
 *   is one-time; decline, cancel, the deadline and a cancelled call close it at once;
 *   `notifications/elicitation/complete` follows a submission.
 * - Form mode (the client declares only form): one masked field named `secret`.
 * - Confirmations (form mode): yes, no, cancel.
 * - The secret appears in no result and no stderr line of the server.
 * - The one-time page itself: paths, Host, methods, content types, escaping, close.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Elicitation, McpClient, McpLog, StdioTransport } from "@skald/mcp"
import { Context, Effect, Fiber, Layer, Option } from "effect"
import { execFile } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Path from "node:path"
import { serveOneTimePage } from "../../scripts/lib/url-elicitation.js"
import { accept, cancel, decline, scripted } from "../elicitation-support.js"
import { repoRoot } from "../fixtures/fixtures.js"
import { eventually, expectText, makeLogCapture } from "../support.js"

const DEMO = Path.join(repoRoot, "scripts", "elicitation-demo.ts")

// --- helpers -------------------------------------------------------------------------------

const asUrl = (request: Elicitation.Request | undefined): Elicitation.UrlRequest => {
  if (request?._tag !== "Url") return assert.fail(`expected a Url request, got ${request?._tag}`)
  return request
}
const asForm = (request: Elicitation.Request | undefined): Elicitation.FormRequest => {
  if (request?._tag !== "Form") return assert.fail(`expected a Form request, got ${request?._tag}`)
  return request
}

/** Plain data (undefined-valued keys dropped), for deepStrictEqual. */
const plain = (u: unknown): unknown => JSON.parse(JSON.stringify(u))

type HttpOutcome = { readonly status: number; readonly body: string } | { readonly refused: string }

/** One HTTP exchange with a page; a connection that fails is `{refused}`. */
const http = (url: string, init: RequestInit = {}): Promise<HttpOutcome> =>
  fetch(url, { ...init, signal: AbortSignal.timeout(10_000) }).then(
    async (r) => ({ status: r.status, body: await r.text() }),
    (error: unknown) => ({ refused: String((error as { cause?: { code?: string } }).cause?.code ?? error) })
  )

const get = (url: string) => http(url)
const post = (url: string, fields: Record<string, string>, contentType = "application/x-www-form-urlencoded") =>
  http(url, { method: "POST", headers: { "content-type": contentType }, body: new URLSearchParams(fields).toString() })

const statusOf = (outcome: HttpOutcome): number => {
  if ("refused" in outcome) return assert.fail(`the request was refused (${outcome.refused})`)
  return outcome.status
}

/** The page no longer takes anything: a 4xx or no connection at all. */
const assertGone = (outcome: HttpOutcome, what: string) => {
  if ("refused" in outcome) return
  assert.isTrue(
    outcome.status === 404 || outcome.status === 410,
    `${what}: expected the page gone, got HTTP ${outcome.status}`
  )
}

/** What a user does in the browser: look at the form, then submit the secret. */
const fillIn = (url: string, secret: string) =>
  Effect.promise(async () => {
    const page = await get(url)
    const sent = await post(url, { secret })
    return { page, sent }
  })

const textOf = (outcome: McpClient.CallOutcome) => expectText(outcome.result)

/** "… a secret of N characters, fingerprint F …" → {length, fingerprint} */
const secretReport = (text: string) => {
  const m = /a secret of (\d+) characters, fingerprint ([0-9a-f]{12})/.exec(text)
  if (m === null) return assert.fail(`no secret report in ${JSON.stringify(text)}`)
  return { length: Number(m[1]), fingerprint: m[2]! }
}

const marker = () => `s3cr3t-${Crypto.randomBytes(9).toString("base64url")}`

/** The demo server with an optional handler; its log lines (stderr included) are kept. */
const connectDemo = (handler: Elicitation.Handler | undefined, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const logs = makeLogCapture()
    let connecting = StdioTransport.client({
      server: "elicitation-demo",
      command: process.execPath,
      args: ["--import", "tsx", DEMO],
      cwd: repoRoot,
      env,
      stdinGrace: "1 second",
      termGrace: "1 second"
    })
    if (handler !== undefined) connecting = Effect.provideService(connecting, Elicitation.ElicitationHandler, handler)
    const client = yield* Effect.provideService(connecting, McpLog.McpLogSink, logs.sink)
    return { client, logs }
  })

interface Demo {
  readonly client: McpClient.Service
  readonly logs: ReturnType<typeof makeLogCapture>
  readonly script: ReturnType<typeof scripted>
}

const demoLayer = <I>(tag: Context.Tag<I, Demo>, url: boolean) =>
  Layer.scoped(
    tag,
    Effect.gen(function*() {
      const script = scripted(url)
      const { client, logs } = yield* connectDemo(script.handler)
      return { client, logs, script }
    })
  )

class UrlDemo extends Context.Tag("test/UrlDemo")<UrlDemo, Demo>() {}
class FormDemo extends Context.Tag("test/FormDemo")<FormDemo, Demo>() {}

const TOKEN_URL = /^http:\/\/127\.0\.0\.1:\d+\/elicit\/[A-Za-z0-9_-]{43}$/

// --- URL mode --------------------------------------------------------------------------------

layer(demoLayer(UrlDemo, true), { excludeTestServices: true, timeout: 60_000 })(
  "URL mode (the client declares elicitation.url)",
  (it) => {
    it.effect("ask_secret: a one-time page on 127.0.0.1 with a password form; the POST delivers the value once; completion follows", () =>
      Effect.gen(function*() {
        const { client, script } = yield* UrlDemo
        const secret = marker()
        let seen: { page: HttpOutcome; sent: HttpOutcome; again: HttpOutcome; getAgain: HttpOutcome } | undefined
        script.state.reset((request) =>
          Effect.gen(function*() {
            const url = asUrl(request).url
            const { page, sent } = yield* fillIn(url, secret)
            const again = yield* Effect.promise(() => post(url, { secret: "second try" }))
            const getAgain = yield* Effect.promise(() => get(url))
            seen = { page, sent, again, getAgain }
            return { action: "accept" } as const
          })
        )
        const outcome = yield* client.callTool("ask_secret", { label: "the test vault" })
        const { isError, text } = textOf(outcome)
        assert.isFalse(isError, text)

        assert.strictEqual(script.state.requests.length, 1)
        const request = asUrl(script.state.requests[0])
        assert.match(request.url, TOKEN_URL)
        assert.match(request.elicitationId, /^[0-9a-f-]{36}$/)
        assert.strictEqual(
          request.message,
          "The elicitation demo asks for a secret for the test vault. It will only tell its length and a fingerprint."
        )

        assert.isDefined(seen)
        const { again, getAgain, page, sent } = seen!
        assert.strictEqual(statusOf(page), 200)
        const html = (page as { body: string }).body
        assert.include(html, `<form method="post"`)
        assert.include(html, `name="secret" type="password"`)
        assert.include(html, "Secret for the test vault")
        assert.strictEqual(statusOf(sent), 200)
        assert.include((sent as { body: string }).body, "you can close this page")
        // One-time: the token is burnt and the page stops listening.
        assertGone(again, "a second POST")
        assertGone(getAgain, "a GET after the POST")

        const report = secretReport(text)
        assert.strictEqual(report.length, secret.length)
        assert.include(text, "(asked on a one-time page)")
        assert.notInclude(JSON.stringify(outcome.wire), secret)
        // notifications/elicitation/complete was sent for this elicitation.
        const completed = yield* request.completed.pipe(Effect.timeout("10 seconds"), Effect.option)
        assert.isTrue(Option.isSome(completed), "completed did not resolve")
      }))

    it.effect("accept first, then the user opens the page out of band: the call waits for the POST", () =>
      Effect.gen(function*() {
        const { client, script } = yield* UrlDemo
        const secret = marker()
        script.state.reset(() => accept())
        const call = yield* Effect.fork(client.callTool("ask_secret", {}))
        yield* eventually(() => script.state.requests.length === 1, "the URL request")
        const request = asUrl(script.state.requests[0])
        const early = yield* request.completed.pipe(Effect.timeout("300 millis"), Effect.option)
        assert.isTrue(Option.isNone(early), "completed before the page was submitted")
        assert.isNull(call.unsafePoll(), "the call ended before the page was submitted")
        const { page, sent } = yield* fillIn(request.url, secret)
        assert.strictEqual(statusOf(page), 200)
        assert.strictEqual(statusOf(sent), 200)
        const outcome = yield* Fiber.join(call)
        assert.strictEqual(secretReport(textOf(outcome).text).length, secret.length)
        const completed = yield* request.completed.pipe(Effect.timeout("10 seconds"), Effect.option)
        assert.isTrue(Option.isSome(completed), "completed did not resolve")
        assertGone(yield* Effect.promise(() => post(request.url, { secret })), "a POST after completion")
      }))

    it.effect("decline and cancel: reported as such, and the page is closed at once", () =>
      Effect.gen(function*() {
        const { client, script } = yield* UrlDemo
        for (const [answer, words] of [[decline, "you declined"], [cancel, "you cancelled"]] as const) {
          script.state.reset(() => answer)
          const { isError, text } = textOf(yield* client.callTool("ask_secret", {}))
          assert.isFalse(isError)
          assert.strictEqual(text, `ask_secret: no secret (${words})`)
          const url = asUrl(script.state.requests[0]).url
          assertGone(yield* Effect.promise(() => get(url)), `a GET after ${words}`)
          assertGone(yield* Effect.promise(() => post(url, { secret: "late" })), `a POST after ${words}`)
        }
      }))

    it.effect("an empty submission shows the form again and keeps the page; the next one is taken", () =>
      Effect.gen(function*() {
        const { client, script } = yield* UrlDemo
        const secret = marker()
        const statuses: Array<number> = []
        script.state.reset((request) =>
          Effect.promise(async () => {
            const url = asUrl(request).url
            const empty = await post(url, { secret: "" })
            statuses.push(statusOf(empty))
            assert.include((empty as { body: string }).body, "a value is required")
            const missing = await post(url, { other: "x" })
            statuses.push(statusOf(missing))
            statuses.push(statusOf(await post(url, { secret })))
            return { action: "accept" } as const
          })
        )
        const outcome = yield* client.callTool("ask_secret", {})
        assert.deepStrictEqual(statuses, [400, 400, 200])
        assert.strictEqual(secretReport(textOf(outcome).text).length, secret.length)
      }))

    it.effect("the same secret gives the same fingerprint, another secret a different one", () =>
      Effect.gen(function*() {
        const { client, script } = yield* UrlDemo
        const answers = ["correct horse battery staple", "correct horse battery staple", "Tr0ub4dor&3"]
        let i = 0
        script.state.reset((request) =>
          Effect.as(fillIn(asUrl(request).url, answers[i++]!), { action: "accept" } as const)
        )
        const reports = []
        for (const _ of answers) reports.push(secretReport(textOf(yield* client.callTool("ask_secret", {})).text))
        assert.deepStrictEqual(reports.map((r) => r.length), answers.map((a) => a.length))
        assert.strictEqual(reports[0]!.fingerprint, reports[1]!.fingerprint)
        assert.notStrictEqual(reports[0]!.fingerprint, reports[2]!.fingerprint)
      }))

    it.effect("a cancelled call withdraws the question and closes the page", () =>
      Effect.gen(function*() {
        const { client, logs, script } = yield* UrlDemo
        script.state.reset(() => accept())
        const call = yield* Effect.fork(client.callTool("ask_secret", {}))
        yield* eventually(() => script.state.requests.length === 1, "the URL request")
        const url = asUrl(script.state.requests[0]).url
        assert.strictEqual(statusOf(yield* Effect.promise(() => get(url))), 200)
        yield* Fiber.interrupt(call)
        // The server hears notifications/cancelled, aborts the call's signal, and closes the page.
        yield* eventually(
          () => logs.withTag("stderr").some((l) => l.includes("ask_secret: cancel (aborted)")),
          "the server gave up"
        )
        assertGone(
          yield* Effect.promise(() => post(url, { secret: "too late" })),
          "a POST after the call was cancelled"
        )
      }))

    it.effect("confirm is a form-mode yes/no question even here: accept yes, decline no, cancel cancelled", () =>
      Effect.gen(function*() {
        const { client, script } = yield* UrlDemo
        for (const [answer, word] of [[accept(), "yes"], [decline, "no"], [cancel, "cancelled"]] as const) {
          script.state.reset(() => answer)
          const { isError, text } = textOf(yield* client.callTool("confirm", { question: "Deploy to production?" }))
          assert.isFalse(isError)
          assert.strictEqual(text, `confirm: ${word}`)
          const form = asForm(script.state.requests[0])
          assert.strictEqual(form.message, "Deploy to production?")
          assert.isTrue(form.confirmation)
          assert.deepStrictEqual(form.fields, [])
        }
      }))

    it.effect("unlock_vault: the secret on a page, then a confirmation naming its fingerprint (never the secret)", () =>
      Effect.gen(function*() {
        const { client, script } = yield* UrlDemo
        const secret = marker()
        script.state.reset((request) =>
          request._tag === "Url" ? Effect.as(fillIn(request.url, secret), { action: "accept" } as const) : accept()
        )
        const { text } = textOf(yield* client.callTool("unlock_vault", {}))
        const report = secretReport(text)
        assert.strictEqual(
          text,
          `unlock_vault: unlocked with a secret of ${secret.length} characters, fingerprint ${report.fingerprint}`
        )
        assert.deepStrictEqual(script.state.requests.map((r) => r._tag), ["Url", "Form"])
        const question = asForm(script.state.requests[1])
        assert.isTrue(question.confirmation)
        assert.include(question.message, report.fingerprint)
        assert.notInclude(question.message, secret)

        script.state.reset((request) =>
          request._tag === "Url" ? Effect.as(fillIn(request.url, secret), { action: "accept" } as const) : decline
        )
        assert.strictEqual(
          textOf(yield* client.callTool("unlock_vault", {})).text,
          "unlock_vault: left locked (you said no)"
        )
      }))
  }
)

// --- form mode -------------------------------------------------------------------------------

layer(demoLayer(FormDemo, false), { excludeTestServices: true, timeout: 60_000 })(
  "form mode (the client declares only form)",
  (it) => {
    it.effect("ask_secret falls back to the seed's convention: one required field named `secret`, masked by our client", () =>
      Effect.gen(function*() {
        const { client, script } = yield* FormDemo
        const secret = marker()
        script.state.reset(() => accept({ secret }))
        const outcome = yield* client.callTool("ask_secret", { label: "the test vault" })
        const { isError, text } = textOf(outcome)
        assert.isFalse(isError, text)
        const form = asForm(script.state.requests[0])
        assert.isFalse(form.confirmation)
        assert.strictEqual(
          form.message,
          "The elicitation demo asks for a secret for the test vault. It will only tell its length and a fingerprint."
        )
        assert.deepStrictEqual(plain(form.fields), [
          {
            name: "secret",
            title: "Secret for the test vault",
            required: true,
            masked: true,
            kind: "string",
            minLength: 1
          }
        ])
        assert.strictEqual(secretReport(text).length, secret.length)
        assert.include(text, "(asked in a form)")
        assert.notInclude(JSON.stringify(outcome.wire), secret)
      }))

    it.effect("decline and cancel are reported as such", () =>
      Effect.gen(function*() {
        const { client, script } = yield* FormDemo
        script.state.reset(() => decline)
        assert.strictEqual(
          textOf(yield* client.callTool("ask_secret", {})).text,
          "ask_secret: no secret (you declined)"
        )
        script.state.reset(() => cancel)
        assert.strictEqual(
          textOf(yield* client.callTool("ask_secret", {})).text,
          "ask_secret: no secret (you cancelled)"
        )
      }))

    it.effect("an empty secret breaks the form: our client declines it instead of sending it", () =>
      Effect.gen(function*() {
        const { client, script } = yield* FormDemo
        script.state.reset(() => accept({ secret: "" }))
        assert.strictEqual(
          textOf(yield* client.callTool("ask_secret", {})).text,
          "ask_secret: no secret (you declined)"
        )
      }))

    it.effect("confirm: yes, no, cancelled; the default question", () =>
      Effect.gen(function*() {
        const { client, script } = yield* FormDemo
        for (const [answer, word] of [[accept(), "yes"], [decline, "no"], [cancel, "cancelled"]] as const) {
          script.state.reset(() => answer)
          assert.strictEqual(textOf(yield* client.callTool("confirm", {})).text, `confirm: ${word}`)
          const form = asForm(script.state.requests[0])
          assert.strictEqual(form.message, "Proceed?")
          assert.isTrue(form.confirmation)
        }
      }))

    it.effect("unlock_vault: two forms in one call; cancelling the confirmation leaves it locked", () =>
      Effect.gen(function*() {
        const { client, script } = yield* FormDemo
        const secret = marker()
        script.state.reset((request) => (asForm(request).confirmation ? cancel : accept({ secret })))
        assert.strictEqual(
          textOf(yield* client.callTool("unlock_vault", {})).text,
          "unlock_vault: left locked (cancelled)"
        )
        assert.deepStrictEqual(script.state.requests.map((r) => asForm(r).confirmation), [false, true])
        script.state.reset((request) => (asForm(request).confirmation ? accept() : accept({ secret })))
        assert.include(
          textOf(yield* client.callTool("unlock_vault", {})).text,
          `unlock_vault: unlocked with a secret of ${secret.length} characters`
        )
      }))
  }
)

// --- other clients, deadlines, secrecy ----------------------------------------------------------

describe("elicitation demo", () => {
  it.scopedLive(
    "a client without elicitation: an Error result saying the client cannot ask",
    () =>
      Effect.gen(function*() {
        const { client } = yield* connectDemo(undefined)
        for (const tool of ["ask_secret", "confirm", "unlock_vault"]) {
          const { isError, text } = textOf(yield* client.callTool(tool, {}))
          assert.isTrue(isError, tool)
          assert.strictEqual(
            text,
            "Error: the client cannot ask the user for input (it declared no form elicitation); connect with a client that supports elicitation"
          )
        }
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "MCP_ELICITATION_TIMEOUT bounds the wait: an accepted page never submitted, a form never answered",
    () =>
      Effect.gen(function*() {
        const urlScript = scripted(true)
        urlScript.state.reset(() => accept())
        const viaUrl = yield* connectDemo(urlScript.handler, { MCP_ELICITATION_TIMEOUT: "1" })
        const expected = "ask_secret: no secret (no answer within the time limit (MCP_ELICITATION_TIMEOUT))"
        assert.strictEqual(textOf(yield* viaUrl.client.callTool("ask_secret", {})).text, expected)
        assertGone(
          yield* Effect.promise(() => post(asUrl(urlScript.state.requests[0]).url, { secret: "late" })),
          "a POST after the deadline"
        )

        let interrupted = false
        const formScript = scripted(false)
        formScript.state.reset(() =>
          Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true))))
        )
        const viaForm = yield* connectDemo(formScript.handler, { MCP_ELICITATION_TIMEOUT: "1" })
        assert.strictEqual(textOf(yield* viaForm.client.callTool("ask_secret", {})).text, expected)
        assert.strictEqual(textOf(yield* viaForm.client.callTool("confirm", {})).text, "confirm: cancelled")
        // The server withdrew its request (notifications/cancelled): our handler was interrupted.
        yield* eventually(() => interrupted, "the handler was interrupted")
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "the secret appears in no tool result and no stderr line, in either mode",
    () =>
      Effect.gen(function*() {
        const secret = marker()
        const urlScript = scripted(true)
        urlScript.state.reset((request) =>
          request._tag === "Url" ? Effect.as(fillIn(request.url, secret), { action: "accept" } as const) : accept()
        )
        const formScript = scripted(false)
        formScript.state.reset((request) => (asForm(request).confirmation ? accept() : accept({ secret })))
        const places: Array<[string, string]> = []
        for (const [mode, script] of [["url", urlScript], ["form", formScript]] as const) {
          const { client, logs } = yield* connectDemo(script.handler)
          for (const tool of ["ask_secret", "unlock_vault"]) {
            const outcome = yield* client.callTool(tool, {})
            assert.strictEqual(secretReport(textOf(outcome).text).length, secret.length, `${mode} ${tool}`)
            places.push([`${mode} ${tool} result`, JSON.stringify(outcome.wire)])
          }
          const stderr = logs.withTag("stderr")
          // The server did write about the secret (so looking there means something)…
          assert.isTrue(
            stderr.some((l) => l.includes(`ask_secret: accept (${secret.length} characters)`)),
            stderr.join("\n")
          )
          for (const line of logs.lines) places.push([`${mode} log ${line.tag}`, line.text])
        }
        // …but never the secret itself.
        assert.isAbove(places.length, 6)
        assert.deepStrictEqual(places.filter(([, text]) => text.includes(secret)).map(([where]) => where), [])
      }),
    { timeout: 60_000 }
  )
})

// --- the command line ----------------------------------------------------------------------------

const runCli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.async<{ code: number | null; stdout: string; stderr: string }>((resume) => {
    const child = execFile(process.execPath, ["--import", "tsx", DEMO, ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      timeout: 30_000
    }, (error, stdout, stderr) => {
      resume(
        Effect.succeed({
          code: error === null ? 0 : typeof error.code === "number" ? error.code : null,
          stdout,
          stderr
        })
      )
    })
    child.stdin?.end()
  })

describe("elicitation demo command line", () => {
  it.effect(
    "--help names the tools, the secret-handling model and MCP_ELICITATION_TIMEOUT, and exits 0",
    () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* runCli(["--help"])
        assert.strictEqual(code, 0, stderr)
        for (const word of ["ask_secret", "confirm", "unlock_vault", "URL mode", "MCP_ELICITATION_TIMEOUT"]) {
          assert.include(stdout, word)
        }
      }),
    { timeout: 30_000 }
  )

  it.effect("a bad MCP_ELICITATION_TIMEOUT or an unknown argument exits 2", () =>
    Effect.gen(function*() {
      const bad = yield* runCli([], { MCP_ELICITATION_TIMEOUT: "-5" })
      assert.strictEqual(bad.code, 2)
      assert.include(bad.stderr, `MCP_ELICITATION_TIMEOUT must be a positive number of seconds, got "-5"`)
      const arg = yield* runCli(["--url"])
      assert.strictEqual(arg.code, 2)
      assert.include(arg.stderr, `unknown argument "--url"`)
    }), { timeout: 60_000 })
})

// --- the one-time page itself --------------------------------------------------------------------

describe("one-time page (scripts/lib/url-elicitation.ts)", () => {
  const open = (title = "Token for <b>CI</b>", message = `Paste the "deploy" token & press Submit`) =>
    Effect.acquireRelease(
      Effect.promise(() =>
        serveOneTimePage({ title, message, fields: [{ name: "token", label: "Token", secret: true }] })
      ),
      (page) => Effect.sync(page.close)
    )

  it.scopedLive("serves only its own path on 127.0.0.1 under an unguessable token, with escaped text and no caching", () =>
    Effect.gen(function*() {
      const page = yield* open()
      assert.match(page.url, TOKEN_URL)
      const other = yield* open()
      assert.notStrictEqual(page.url.slice(page.url.lastIndexOf("/")), other.url.slice(other.url.lastIndexOf("/")))

      const response = yield* Effect.promise(() => fetch(page.url))
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers.get("cache-control"), "no-store")
      assert.strictEqual(response.headers.get("referrer-policy"), "no-referrer")
      assert.include(response.headers.get("content-security-policy") ?? "", "frame-ancestors 'none'")
      const html = yield* Effect.promise(() => response.text())
      assert.include(html, "Token for &lt;b&gt;CI&lt;/b&gt;")
      assert.include(html, "Paste the &quot;deploy&quot; token &amp; press Submit")
      assert.notInclude(html, "<b>CI</b>")
      assert.include(html, `name="token" type="password" autocomplete="new-password" required`)

      const origin = page.url.slice(0, page.url.indexOf("/elicit/"))
      assert.strictEqual(statusOf(yield* Effect.promise(() => get(`${origin}/elicit/${"A".repeat(43)}`))), 404)
      assert.strictEqual(statusOf(yield* Effect.promise(() => get(`${origin}/`))), 404)
      assert.strictEqual(statusOf(yield* Effect.promise(() => http(page.url, { method: "PUT", body: "token=x" }))), 405)
      assert.strictEqual(statusOf(yield* Effect.promise(() => post(page.url, { token: "x" }, "application/json"))), 415)
      assert.strictEqual(
        statusOf(yield* Effect.promise(() => post(page.url, { token: "x".repeat(70 * 1024) }))),
        413
      )
      // A request naming another host (DNS rebinding) is refused.
      const rebound = yield* Effect.promise(() =>
        new Promise<number>((resolve, reject) => {
          const { port } = new URL(page.url)
          import("node:http").then(({ request }) => {
            const req = request({
              host: "127.0.0.1",
              port,
              path: new URL(page.url).pathname,
              headers: { host: `evil.example:${port}` }
            }, (res) => {
              res.resume()
              resolve(res.statusCode ?? 0)
            })
            req.on("error", reject)
            req.end()
          }, reject)
        })
      )
      assert.strictEqual(rebound, 400)
      // None of that used the page up.
      assert.strictEqual(statusOf(yield* Effect.promise(() => post(page.url, { token: "tkn-1" }))), 200)
      assert.deepStrictEqual(yield* Effect.promise(() => page.submitted), { token: "tkn-1" })
      assertGone(yield* Effect.promise(() => post(page.url, { token: "tkn-2" })), "a second POST")
    }))

  it.scopedLive("close() before a submission: `submitted` is undefined and the port is closed", () =>
    Effect.gen(function*() {
      const page = yield* open()
      assert.strictEqual(statusOf(yield* Effect.promise(() => get(page.url))), 200)
      page.close()
      assert.isUndefined(yield* Effect.promise(() => page.submitted))
      const after = yield* Effect.promise(() => get(page.url))
      assert.property(after, "refused")
    }))
})
