/**
 * The shell: the header with the connection state, the navigation, and the current page (only
 * Servers in this slice; Chat and Inbox come next).
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { ConnectionState } from "./Connection.js"
import { ConnectionBadge } from "./ConnectionBadge.js"
import { useStreamFold } from "./hooks.js"
import { HostClient, type PageRuntime } from "./HostClient.js"
import { serversApi } from "./serversApi.js"
import { ServersPage } from "./ServersPage.js"

const connectionStates = Stream.unwrap(Effect.map(HostClient, ({ state }) => state.changes))

export const App = ({ runtime }: { readonly runtime: PageRuntime }) => {
  const { state } = useStreamFold(
    runtime,
    () => connectionStates,
    { _tag: "Connecting" } as ConnectionState,
    (_, next) => next,
    []
  )
  return (
    <div className="shell">
      <header className="top">
        <h1 className="brand">Skald</h1>
        <nav aria-label="Pages">
          <a href="/servers" aria-current="page">Servers</a>
        </nav>
        <ConnectionBadge state={state} />
      </header>
      <main id="main">
        <ServersPage runtime={runtime} api={serversApi} live={state._tag === "Connected"} />
      </main>
    </div>
  )
}
