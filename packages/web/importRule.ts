/**
 * The web UI's import rule (DESIGN §1: packages/web imports only domain): a Vite plugin that fails
 * the build when a module under `src/` imports anything but `@skald/domain`, `effect`,
 * `@effect/rpc`, `@effect/platform`, `@effect/platform-browser`, `react`, `react-dom` (or their
 * subpaths) or a relative file inside `src/`. It checks every import Vite resolves, static and
 * dynamic, so nothing reaches the bundle around it.
 */
import * as Path from "node:path"
import type { Plugin } from "vite"

/** The packages `src/` may import (and their subpaths). */
export const allowedPackages: ReadonlyArray<string> = [
  "@skald/domain",
  "effect",
  "@effect/rpc",
  "@effect/platform",
  "@effect/platform-browser",
  "react",
  "react-dom"
]

/** Whether a bare specifier names an allowed package (or a subpath of one). */
export const isAllowedPackage = (specifier: string): boolean =>
  allowedPackages.some((name) => specifier === name || specifier.startsWith(`${name}/`))

/**
 * Why `specifier`, imported by `importer`, breaks the rule (undefined when it does not, or when
 * the importer is not a source file under `srcDir`).
 */
export const violation = (srcDir: string, specifier: string, importer: string | undefined): string | undefined => {
  if (importer === undefined || specifier.startsWith("\0")) return undefined
  const file = importer.split("?")[0]!
  if (!file.startsWith(srcDir + Path.sep)) return undefined
  if (specifier.startsWith("./") || specifier.startsWith("../")) {
    const target = Path.resolve(Path.dirname(file), specifier.split("?")[0]!)
    return target.startsWith(srcDir + Path.sep)
      ? undefined
      : `${Path.relative(srcDir, file)} imports ${specifier}, outside packages/web/src`
  }
  if (isAllowedPackage(specifier)) return undefined
  return `${Path.relative(srcDir, file)} imports ${specifier}: packages/web/src may import only ` +
    `${allowedPackages.join(", ")} and relative files (DESIGN §1)`
}

/** The plugin: checks each import of a file under `<root>/src` before anything resolves it. */
export const importRule = (): Plugin => {
  let srcDir = ""
  return {
    name: "skald-web-import-rule",
    enforce: "pre",
    configResolved(config) {
      srcDir = Path.join(config.root, "src")
    },
    resolveId(specifier, importer) {
      const why = violation(srcDir, specifier, importer)
      if (why !== undefined) this.error(why)
      return null
    }
  }
}
