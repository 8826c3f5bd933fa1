/**
 * `GET /rpc/auth` on a real `skald serve` (what the web page asks before its WebSocket, since a
 * browser cannot read a refused upgrade's 401): whether the host needs a token and whether the
 * request's Bearer token is it; behind the same Host/Origin guard as every route.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { startServe, stopProcess } from "./cli-support.js"
import { tempHome } from "./host-support.js"

const TOKEN = "rpc-auth-token-5e1f0c9a2b"

const serveWith = (env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.flatMap(tempHome, (home) => Effect.promise(() => startServe(home, env))),
    (s) => Effect.promise(() => stopProcess(s.child))
  )

const ask = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/rpc/auth`, { headers })
    return { status: response.status, cache: response.headers.get("cache-control"), body: await response.text() }
  })

describe("GET /rpc/auth", () => {
  it.scopedLive("says whether a token is needed and whether the one presented is it", () =>
    Effect.gen(function*() {
      const guarded = yield* serveWith({ SKALD_TOKEN: TOKEN })
      const none = yield* ask(guarded.url)
      assert.strictEqual(none.status, 200)
      assert.strictEqual(none.cache, "no-store")
      assert.deepStrictEqual(JSON.parse(none.body), { tokenRequired: true, tokenAccepted: false })
      const wrong = yield* ask(guarded.url, { authorization: "Bearer not-the-token-at-all" })
      assert.deepStrictEqual(JSON.parse(wrong.body), { tokenRequired: true, tokenAccepted: false })
      const right = yield* ask(guarded.url, { authorization: `Bearer ${TOKEN}` })
      assert.deepStrictEqual(JSON.parse(right.body), { tokenRequired: true, tokenAccepted: true })
      // The guard: another site's page cannot ask.
      const foreign = yield* ask(guarded.url, { origin: "http://evil.example", authorization: `Bearer ${TOKEN}` })
      assert.strictEqual(foreign.status, 403)

      const open = yield* serveWith({})
      assert.deepStrictEqual(JSON.parse((yield* ask(open.url)).body), { tokenRequired: false, tokenAccepted: true })
    }), { timeout: 60_000 })
})
