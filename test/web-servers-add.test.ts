/**
 * Adding servers from the Servers page, in real headless Chromium against a real `skald serve`
 * (issue 23): the form's problems shown from the Mcp group's `Add` schema (nothing registered);
 * a secret typed as a value refused and emptied (never sent, in no DOM node); a real stdio fixture
 * added with its arguments, environment and a secret as a `${NAME}` reference — connected on the
 * page and in `skald mcp list`, the reference stored as given; an HTTP fixture whose api key is a
 * reference resolved by the host (it refuses requests without it) — connected; a name taken says so.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ChildProcess } from "node:child_process"
import { runSkald, startServe, stopProcess } from "./cli-support.js"
import { fixture } from "./fixtures/fixtures.js"
import { tempHome, until } from "./host-support.js"
import { httpFixture, startHttpFixture } from "./http-support.js"
import { tempFile } from "./support.js"
import { assertNoProblems, launchBrowser, openPage, screenshot } from "./support/browser.js"

interface Summary {
  readonly name: string
  readonly state: string
}

const list = async (home: string): Promise<Array<Summary>> => {
  const out = await runSkald(["mcp", "list", "--json", "--home", home])
  assert.strictEqual(out.status, 0, out.stderr)
  return JSON.parse(out.stdout) as Array<Summary>
}

const LITERAL = "literal-secret-9d41-never-sent"
const HTTP_TOKEN = "web-add-http-token-3f6a"

describe("adding a server from the Servers page", () => {
  it.scopedLive(
    "validation from the schema, a literal secret refused, stdio and HTTP servers added",
    () =>
      Effect.gen(function*() {
        const home = yield* tempHome
        const remote = yield* startHttpFixture(httpFixture("echo", "stateful", { FIXTURE_TOKEN: HTTP_TOKEN }))
        let child: ChildProcess | undefined
        yield* Effect.addFinalizer(() => child === undefined ? Effect.void : Effect.promise(() => stopProcess(child!)))
        // The references resolve from serve's environment (a stored secret would do the same).
        const served = yield* Effect.promise(() =>
          startServe(home, { WEB_ADD_SECRET: "resolved-by-the-host", WEB_ADD_KEY: HTTP_TOKEN })
        )
        child = served.child
        const browser = yield* launchBrowser
        const tab = yield* openPage(browser)
        const page = tab.page
        const wait = <A>(what: Promise<A>) => Effect.promise(() => what)
        yield* wait(page.goto(served.url))
        yield* wait(page.getByRole("status").filter({ hasText: "Connected" }).waitFor())
        const before = (yield* wait(list(home))).map((s) => s.name)

        // Problems from the Add schema: a bad name, no command, an environment key that is no name.
        yield* wait(page.getByRole("button", { name: "Add a server…" }).click())
        const form = page.getByRole("form", { name: "Add a server" })
        yield* wait(form.getByLabel("Name (required)").fill("bad__name"))
        yield* wait(form.getByLabel("Environment", { exact: true }).fill("1X=2"))
        yield* wait(form.getByRole("button", { name: "Add", exact: true }).click())
        const alert = form.getByRole("alert")
        yield* wait(alert.filter({ hasText: "The server was not added" }).waitFor())
        const said = String(yield* wait(alert.textContent()))
        assert.include(said, "Name: the server name \"bad__name\" is not valid")
        assert.include(said, "Command: the command is empty")
        assert.include(said, "Environment: \"1X\" is not a variable name")
        assert.strictEqual(yield* wait(form.getByLabel("Name (required)").getAttribute("aria-invalid")), "true")

        // A secret typed as its value: refused, the field emptied, nothing sent.
        const echo = fixture("echo")
        yield* wait(form.getByLabel("Name (required)").fill("literal"))
        yield* wait(form.getByLabel("Command (required)").fill(echo.command))
        yield* wait(form.getByLabel("Arguments").fill(echo.args.join("\n")))
        yield* wait(form.getByLabel("Environment", { exact: true }).fill(""))
        yield* wait(form.getByLabel("Secret environment").fill(`TOKEN=${LITERAL}`))
        yield* wait(form.getByRole("button", { name: "Add", exact: true }).click())
        yield* wait(alert.filter({ hasText: "a secret is given as a reference to the secret store" }).waitFor())
        assert.strictEqual(yield* wait(form.getByLabel("Secret environment").inputValue()), "")
        const html = yield* wait(page.evaluate<string>("document.documentElement.outerHTML"))
        assert.notInclude(html, LITERAL)
        assert.deepStrictEqual((yield* wait(list(home))).map((s) => s.name), before)

        // A real stdio fixture with its arguments, a plain variable and a secret by reference.
        const record = tempFile("web-add")
        const vault = fixture("elicit")
        yield* wait(form.getByLabel("Name (required)").fill("vault"))
        yield* wait(form.getByLabel("Friendly name").fill("The vault"))
        yield* wait(form.getByLabel("Command (required)").fill(vault.command))
        yield* wait(form.getByLabel("Arguments").fill(vault.args.join("\n")))
        yield* wait(form.getByLabel("Environment", { exact: true }).fill(`FIXTURE_RECORD=${record}`))
        yield* wait(form.getByLabel("Secret environment").fill("EXPECTED_SECRET=${WEB_ADD_SECRET}"))
        yield* wait(form.getByRole("button", { name: "Add", exact: true }).click())
        yield* wait(page.getByRole("status").filter({ hasText: "Added vault." }).waitFor())
        yield* wait(page.getByTestId("state-vault").filter({ hasText: /^connected \(\d+ tools\)$/ }).waitFor())
        yield* Effect.promise(() =>
          until("vault connected", () => list(home), (l) => l.find((s) => s.name === "vault")?.state === "connected")
        )
        const shown = yield* wait(runSkald(["mcp", "show", "vault", "--json", "--home", home]))
        assert.strictEqual(shown.status, 0, shown.stderr)
        const entry = JSON.parse(shown.stdout) as {
          readonly friendlyName?: string
          readonly command: string
          readonly args: ReadonlyArray<string>
          readonly env: Record<string, string>
        }
        assert.strictEqual(entry.friendlyName, "The vault")
        assert.strictEqual(entry.command, vault.command)
        assert.deepStrictEqual(entry.args, vault.args)
        assert.deepStrictEqual(entry.env, { FIXTURE_RECORD: record, EXPECTED_SECRET: "${WEB_ADD_SECRET}" })
        yield* screenshot(page, "servers-added")

        // The same name again: the host's refusal, shown under the form.
        yield* wait(page.getByRole("button", { name: "Add a server…" }).click())
        yield* wait(form.getByLabel("Name (required)").fill("vault"))
        yield* wait(form.getByLabel("Command (required)").fill(vault.command))
        yield* wait(form.getByRole("button", { name: "Add", exact: true }).click())
        yield* wait(
          form.getByRole("alert").filter({ hasText: "an MCP server named 'vault' is registered already" })
            .waitFor()
        )

        // An HTTP server whose api key is a reference: a literal refused, then the reference, connected.
        yield* wait(form.getByLabel("HTTP (a URL)").check())
        yield* wait(form.getByLabel("Name (required)").fill("remote"))
        yield* wait(form.getByLabel("URL (required)").fill("ftp://nowhere"))
        yield* wait(form.getByLabel("API key").fill(HTTP_TOKEN))
        yield* wait(form.getByRole("button", { name: "Add", exact: true }).click())
        const httpAlert = form.getByRole("alert").filter({ hasText: "The server was not added" })
        yield* wait(httpAlert.filter({ hasText: "is not an http:// or https:// address" }).waitFor())
        assert.include(String(yield* wait(httpAlert.textContent())), "API key: a secret is given as a reference")
        assert.strictEqual(yield* wait(form.getByLabel("API key").inputValue()), "")
        yield* wait(form.getByLabel("URL (required)").fill(remote.url))
        yield* wait(form.getByLabel("API key").fill("${WEB_ADD_KEY}"))
        yield* wait(form.getByRole("button", { name: "Add", exact: true }).click())
        yield* wait(page.getByTestId("state-remote").filter({ hasText: /^connected/ }).waitFor())
        yield* Effect.promise(() =>
          until("remote connected", () => list(home), (l) => l.find((s) => s.name === "remote")?.state === "connected")
        )
        const remoteShown = yield* wait(runSkald(["mcp", "show", "remote", "--json", "--home", home]))
        assert.strictEqual((JSON.parse(remoteShown.stdout) as { readonly apiKey?: string }).apiKey, "${WEB_ADD_KEY}")
        assert.notInclude(String(yield* wait(page.evaluate<string>("document.documentElement.outerHTML"))), HTTP_TOKEN)
        assertNoProblems(tab)
      }),
    { timeout: 120_000 }
  )
})
