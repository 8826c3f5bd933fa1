/**
 * The web UI's entry: one runtime (the host client) for the page, and the app on `#root`.
 */
import { StrictMode } from "react"
import { createRoot } from "react-dom/client"
import { App } from "./App.js"
import "./app.css"
import { makeRuntime } from "./HostClient.js"
import * as Token from "./Token.js"

const root = document.getElementById("root")
if (root === null) throw new Error("index.html has no #root element")
// Before anything else reads the address: a `#token=` fragment goes to this tab's storage.
Token.takeFromAddress()
const runtime = makeRuntime()
globalThis.addEventListener("pagehide", () => void runtime.dispose())
createRoot(root).render(
  <StrictMode>
    <App runtime={runtime} />
  </StrictMode>
)
