/**
 * Opening a URL in the user's browser, if one is there (`skald mcp login`). No shell is involved:
 * the command is spawned with the URL as one argument.
 *
 * Which command: `$BROWSER` first (the convention of `xdg-open` and Python's `webbrowser`: a
 * `:`-separated list of commands, each split on spaces, `%s` standing for the URL, else the URL
 * appended; the first that starts wins); else `open` on macOS, `xdg-open` on other Unixes when a
 * display is there (`DISPLAY` or `WAYLAND_DISPLAY`: without one it would start a text browser in
 * this terminal, or nothing). Nothing on Windows without `$BROWSER` (its `start` is a shell
 * built-in). The browser is left running on its own; whether it showed the page is not known, so
 * the caller always prints the URL too.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"

/** The command lines to try for `url`, in order (argv arrays), for an environment and platform. */
export const candidates = (
  url: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
  platform: NodeJS.Platform = process.platform
): ReadonlyArray<ReadonlyArray<string>> => {
  const browser = env.BROWSER?.trim()
  if (browser !== undefined && browser.length > 0) {
    return browser.split(":").map((entry) => entry.trim().split(/\s+/).filter((word) => word.length > 0))
      .filter((words) => words.length > 0)
      .map((words) =>
        words.some((word) => word.includes("%s"))
          ? words.map((word) => word.replaceAll("%s", url))
          : [...words, url]
      )
  }
  if (platform === "darwin") return [["open", url]]
  if (platform === "win32") return []
  const display = (env.DISPLAY ?? "").length > 0 || (env.WAYLAND_DISPLAY ?? "").length > 0
  return display ? [["xdg-open", url]] : []
}

/** Starts one command, detached; true once it started, false when it could not be (e.g. not installed). */
const start = (argv: ReadonlyArray<string>): Effect.Effect<boolean> =>
  Effect.async<boolean>((resume) => {
    const [command, ...args] = argv
    const child = spawn(command!, args, { stdio: "ignore", detached: true, shell: false })
    child.once("error", () => resume(Effect.succeed(false)))
    child.once("spawn", () => {
      child.unref()
      resume(Effect.succeed(true))
    })
  })

/**
 * Opens `url` in a browser if there is one: the command that started, or undefined when none
 * did (or none is configured).
 */
export const open = Effect.fn("Browser.open")(function*(
  url: string,
  env: Readonly<Record<string, string | undefined>> = process.env
) {
  for (const argv of candidates(url, env)) {
    if (yield* start(argv)) return argv[0]
  }
  return undefined
})
