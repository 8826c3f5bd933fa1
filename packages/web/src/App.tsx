/**
 * The shell: the header with the connection state, the navigation (the Inbox's pending count on
 * every page), and the current page by the location's path — Servers (`/`, `/servers`), Chat
 * (`/chat`, `/chat/<session>`) and Inbox (`/inbox`), the last two in their own chunks, loaded on
 * first use. Links navigate with the History API; Back and Forward work.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { lazy, type MouseEvent, Suspense, useCallback, useEffect, useState } from "react"
import type { ConnectionState } from "./Connection.js"
import { ConnectionBadge } from "./ConnectionBadge.js"
import { useStreamFold } from "./hooks.js"
import { HostClient, type PageRuntime } from "./HostClient.js"
import * as InboxApi from "./inboxApi.js"
import { serversApi } from "./serversApi.js"
import { ServersPage } from "./ServersPage.js"
import { TokenPrompt } from "./TokenPrompt.js"

const ChatPage = lazy(() => import("./ChatPage.js"))
const InboxPage = lazy(() => import("./InboxPage.js"))

const connectionStates = Stream.unwrap(Effect.map(HostClient, ({ state }) => state.changes))

type Route =
  | { readonly page: "servers" }
  | { readonly page: "chat"; readonly sessionId: string | undefined }
  | { readonly page: "inbox" }

const routeOf = (path: string): Route => {
  const chat = /^\/chat(?:\/([^/]+))?\/?$/.exec(path)
  if (chat !== null) return { page: "chat", sessionId: chat[1] === undefined ? undefined : decodeURIComponent(chat[1]) }
  if (/^\/inbox\/?$/.test(path)) return { page: "inbox" }
  return { page: "servers" }
}

export const App = ({ runtime }: { readonly runtime: PageRuntime }) => {
  const { state } = useStreamFold(
    runtime,
    () => connectionStates,
    { _tag: "Connecting" } as ConnectionState,
    (_, next) => next,
    []
  )
  const inbox = useStreamFold(runtime, () => InboxApi.changes, [], InboxApi.fold, [])
  const [path, setPath] = useState(globalThis.location.pathname)
  useEffect(() => {
    const onPop = () => setPath(globalThis.location.pathname)
    globalThis.addEventListener("popstate", onPop)
    return () => globalThis.removeEventListener("popstate", onPop)
  }, [])
  const navigate = useCallback((to: string) => {
    if (globalThis.location.pathname !== to) globalThis.history.pushState(null, "", to)
    setPath(to)
  }, [])
  const route = routeOf(path)
  // The Chat link goes back to the session last open (its turn attached again if still running).
  const [lastChat, setLastChat] = useState("/chat")
  useEffect(() => {
    if (route.page === "chat") setLastChat(path)
  }, [route.page, path])
  const link = (to: string, page: Route["page"], label: string) => (
    <a
      href={to}
      aria-current={route.page === page ? "page" : undefined}
      onClick={(e: MouseEvent) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return
        e.preventDefault()
        navigate(to)
      }}
    >
      {label}
    </a>
  )
  const pending = inbox.state.length
  return (
    <div className="shell">
      <header className="top">
        <h1 className="brand">Skald</h1>
        <nav aria-label="Pages">
          {link("/servers", "servers", "Servers")}
          {link(route.page === "chat" ? "/chat" : lastChat, "chat", "Chat")}
          {link("/inbox", "inbox", pending === 0 ? "Inbox" : `Inbox (${pending})`)}
        </nav>
        <ConnectionBadge state={state} />
      </header>
      <main id="main">
        {state._tag === "NeedsToken"
          ? (
            <TokenPrompt
              refused={state.refused}
              onToken={(token) => void runtime.runFork(Effect.flatMap(HostClient, (host) => host.setToken(token)))}
            />
          )
          : null}
        <Suspense fallback={<p className="muted">Loading…</p>}>
          {route.page === "chat"
            ? <ChatPage runtime={runtime} sessionId={route.sessionId} navigate={navigate} />
            : route.page === "inbox"
            ? <InboxPage runtime={runtime} items={inbox.state} navigate={navigate} />
            : <ServersPage runtime={runtime} api={serversApi} live={state._tag === "Connected"} />}
        </Suspense>
      </main>
    </div>
  )
}
