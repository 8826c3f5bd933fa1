/**
 * The web UI's entry: mounts the app on `#root`.
 */
import { StrictMode } from "react"
import { createRoot } from "react-dom/client"
import { App } from "./App.js"
import "./app.css"

const root = document.getElementById("root")
if (root === null) throw new Error("index.html has no #root element")
createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>
)
