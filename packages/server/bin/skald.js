#!/usr/bin/env node
// The `skald` command: loads the built CLI (npm ci builds it through the root `prepare` script).
import("../dist/cli/main.js").catch((error) => {
  if (error && error.code === "ERR_MODULE_NOT_FOUND") {
    process.stderr.write("skald: the build output is missing; run `npm run build` in the repository root\n")
  } else {
    process.stderr.write(`skald: ${error && error.stack ? error.stack : error}\n`)
  }
  process.exit(2)
})
