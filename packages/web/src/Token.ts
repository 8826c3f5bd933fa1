/**
 * The host's access token in the page (docs/web.md, *The access token*): taken from the address's
 * fragment (`#token=…`, which browsers never send to the host), removed from the address at once
 * (`history.replaceState`, so it is in no bookmark, no history entry, no reload), and kept in
 * `sessionStorage` only (this tab, gone when it closes). A token pasted into the page goes there too.
 * It is presented as the `skald-token.<t>` WebSocket subprotocol (`RpcProtocol.protocolsFor`).
 */
import { RpcProtocol } from "@skald/domain"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

const KEY = "skald-token"

/** The fragment's `token=` parameter, if any; the fragment is removed from the address. */
export const takeFromAddress = (): void => {
  const hash = globalThis.location.hash
  if (!hash.startsWith("#")) return
  const token = new URLSearchParams(hash.slice(1)).get("token")
  if (token === null) return
  globalThis.history.replaceState(
    globalThis.history.state,
    "",
    globalThis.location.pathname + globalThis.location.search
  )
  if (token !== "") store(token)
}

/** The token of this tab, if any. */
export const stored = (): string | undefined => globalThis.sessionStorage.getItem(KEY) ?? undefined

/** Keeps `token` for this tab. */
export const store = (token: string): void => globalThis.sessionStorage.setItem(KEY, token)

/** What the host says of a token (`GET /rpc/auth`). */
export type AuthStatus = typeof RpcProtocol.AuthStatus.Type

const decodeStatus = Schema.decodeUnknown(RpcProtocol.AuthStatus)

/**
 * Asks the host whether it needs a token and whether `token` is it; fails when the host cannot
 * be asked (it is down: the WebSocket's own attempt then says so).
 */
export const check = (token: string | undefined): Effect.Effect<AuthStatus, unknown> =>
  Effect.tryPromise((signal) =>
    globalThis.fetch(RpcProtocol.AUTH_PATH, {
      signal,
      cache: "no-store",
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` }
    }).then((response) => response.ok ? response.json() : Promise.reject(new Error(`status ${response.status}`)))
  ).pipe(Effect.flatMap(decodeStatus))
