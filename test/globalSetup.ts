import { execFileSync } from "node:child_process"
import * as Path from "node:path"

// The CLI tests run the real `skald` binary, which loads the built output: bring it up to date,
// then bundle it as `npm run build` does (the shim runs the bundle only while it is current).
export default function setup() {
  const root = Path.resolve(import.meta.dirname, "..")
  execFileSync(process.execPath, [Path.join(root, "node_modules/typescript/bin/tsc"), "-b", "tsconfig.build.json"], {
    cwd: root,
    stdio: "inherit"
  })
  execFileSync(process.execPath, [Path.join(root, "packages/server/scripts/bundle.js")], {
    cwd: root,
    stdio: "inherit"
  })
}
