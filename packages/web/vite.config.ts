/**
 * Builds the web UI into packages/web/dist (served by `skald serve` at `/`). Vite's own esbuild
 * compiles the JSX (automatic runtime); the one plugin is the import rule (importRule.ts).
 */
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vite"
import { importRule } from "./importRule.js"

export default defineConfig({
  root: Path.dirname(fileURLToPath(import.meta.url)),
  base: "/",
  clearScreen: false,
  plugins: [importRule()],
  esbuild: { jsx: "automatic", jsxImportSource: "react" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // The gzip sizes are printed after each build (test/web-build.test.ts holds the JS to 200 kB).
    reportCompressedSize: true,
    chunkSizeWarningLimit: 800
  }
})
