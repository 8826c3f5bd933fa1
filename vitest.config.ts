import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const root = path.dirname(fileURLToPath(import.meta.url))
const pkg = (name: string) => path.join(root, "packages", name, "src")

export default defineConfig({
  resolve: {
    // Tests run the workspace packages from source; the built output is for the `skald` binary.
    // Except the Promise face, which ships as a bundle (packages/mcp/scripts/bundle.js, made by
    // test/globalSetup.ts): its tests run what `@skald/mcp/promise` resolves to in an app.
    alias: [
      { find: /^@skald\/mcp\/promise$/, replacement: path.join(root, "packages/mcp/dist/bundle/promise.js") },
      { find: /^@skald\/(domain|mcp|server)$/, replacement: `${pkg("$1")}/index.ts` },
      { find: /^@skald\/(domain|mcp|server)\/(.*)$/, replacement: `${pkg("$1")}/$2.ts` }
    ]
  },
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["test/globalSetup.ts"],
    // Workers below the main process's priority (test/support/priority.ts says why).
    setupFiles: ["test/support/priority.ts"],
    // Loaded by node itself, as an app loads it, not transformed by vite.
    server: { deps: { external: [/packages\/mcp\/dist\/bundle\//] } },
    // Quiet on success: what a test logs to the console (Effect's default logger writes there, and
    // so do the host's and engine's warnings) is kept with the test and printed only if it fails.
    silent: "passed-only",
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } }
  }
})
