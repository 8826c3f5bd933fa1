/**
 * The connection state, always visible in the header; announced to screen readers when it changes.
 */
import type { ConnectionState } from "./Connection.js"

const label = (state: ConnectionState): string => {
  switch (state._tag) {
    case "Connecting":
      return "Connecting to the host…"
    case "Connected":
      return "Connected"
    case "Reconnecting":
      return `Disconnected from the host since ${new Date(state.since).toLocaleTimeString()}: reconnecting…`
    case "NeedsToken":
      return state.refused ? "The host refused the access token" : "The host needs its access token"
  }
}

export const ConnectionBadge = ({ state }: { readonly state: ConnectionState }) => (
  <p
    className={`connection connection-${state._tag === "NeedsToken" ? "reconnecting" : state._tag.toLowerCase()}`}
    role="status"
    aria-live="polite"
    title={state._tag === "Reconnecting" ? state.reason : undefined}
  >
    <span className="dot" aria-hidden="true" />
    {label(state)}
  </p>
)
