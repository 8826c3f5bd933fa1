/**
 * The remote text-file tools over SFTP, as the login user. One output format, shared by all:
 *
 * - `read_file`: numbered lines, `cat -n` style — the line number right-aligned in 6 columns, a
 *   tab, the line (a CR before the newline is not shown). `offset` is the first line (1-based),
 *   `limit` the number of lines. When lines remain, a last line says how to read on. Lines over
 *   2000 characters are cut. Binary files are refused (use `download`).
 * - `list_files`: the directory's real path ending in `/`, then one entry a line, relative to it:
 *   `name/` for a directory, `name  (N bytes)` for a file, `name -> target` for a symlink
 *   (never followed), `name  (special)` for anything else. Sorted by name, directories
 *   descended depth-first when `recursive`.
 * - `grep_files`: `path:line: text` per matching line (path relative to the searched directory),
 *   like `grep -rn`. The pattern is a JavaScript regular expression.
 * - `edit_file` / `replace_lines`: a sentence saying what changed, and for `replace_lines` the
 *   new lines with context in the `read_file` format.
 *
 * Edits are written to a temporary file beside the target and renamed over it
 * (`posix-rename@openssh.com`), keeping the file's mode; when that is impossible (no write
 * access to the directory, no extension) the file is rewritten in place.
 */
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import type { Stats } from "ssh2"
import { ToolError } from "./errors.js"
import { remotePath, type Sftp } from "./sftp.js"

const P = path.posix
export const MAX_LINE_CHARS = 2000
const BINARY_PROBE = 8000

export const numbered = (lines: ReadonlyArray<string>, first: number): string =>
  lines.map((line, i) => {
    const shown = line.length > MAX_LINE_CHARS
      ? `${line.slice(0, MAX_LINE_CHARS)} … [line cut: ${line.length} characters]`
      : line
    return `${String(first + i).padStart(6)}\t${shown}`
  }).join("\n")

const isBinary = (data: Buffer): boolean => data.subarray(0, BINARY_PROBE).includes(0)

/** Splits text into lines without their line ends; `trailingNewline` tells whether it ended with one. */
export const splitLines = (text: string): { lines: Array<string>; trailingNewline: boolean; eol: string } => {
  const eol = (text.match(/\r\n/g)?.length ?? 0) > (text.match(/(?<!\r)\n/g)?.length ?? 0) ? "\r\n" : "\n"
  if (text === "") return { lines: [], trailingNewline: false, eol }
  const trailingNewline = text.endsWith("\n")
  const body = trailingNewline ? text.slice(0, text.endsWith("\r\n") ? -2 : -1) : text
  return { lines: body.split(/\r?\n/), trailingNewline, eol }
}

/** Reads a remote text file (bounded), refusing directories and binaries. */
const readText = async (sftp: Sftp, p: string, maxBytes: number): Promise<{ text: string; stats: Stats }> => {
  const stats = await sftp.stat(p)
  if (stats === undefined) throw new ToolError(`${p}: no such file or directory`)
  if (stats.isDirectory()) throw new ToolError(`${p} is a directory (use list_files)`)
  if (!stats.isFile()) throw new ToolError(`${p} is not a regular file`)
  if (stats.size > maxBytes) {
    throw new ToolError(
      `${p} has ${stats.size} bytes, more than the ${maxBytes} the text tools handle (SSH_MCP_MAX_FILE_BYTES); use download or exec`
    )
  }
  const data = await sftp.readFile(p)
  if (isBinary(data)) throw new ToolError(`${p} looks binary (it contains NUL bytes); use download`)
  return { text: data.toString("utf8"), stats }
}

/** Writes a file via a temporary sibling and an atomic rename, else in place. */
const writeText = async (sftp: Sftp, p: string, text: string, mode: number | undefined): Promise<void> => {
  const data = Buffer.from(text, "utf8")
  const tmp = P.join(P.dirname(p), `.${P.basename(p)}.skald-${randomBytes(6).toString("hex")}`)
  let tmpWritten = false
  try {
    await sftp.writeFile(tmp, data, mode ?? 0o644)
    tmpWritten = true
    if (mode !== undefined) await sftp.chmod(tmp, mode)
    if (await sftp.posixRename(tmp, p)) return
  } catch {
    // fall back to writing in place below
  }
  if (tmpWritten) await sftp.unlink(tmp).catch(() => {})
  await sftp.writeFile(p, data, mode ?? 0o644)
}

export const readFile = async (
  sftp: Sftp,
  rawPath: string,
  offset: number,
  limit: number,
  maxBytes: number
): Promise<string> => {
  const p = remotePath(rawPath)
  const { text } = await readText(sftp, p, maxBytes)
  const { lines } = splitLines(text)
  if (lines.length === 0) return "(empty file)"
  if (offset > lines.length) return `(offset ${offset} is past the end: ${rawPath} has ${lines.length} lines)`
  const last = Math.min(lines.length, offset + limit - 1)
  const out = numbered(lines.slice(offset - 1, last), offset)
  return last < lines.length
    ? `${out}\n… (${lines.length - last} more lines: ${
      last + 1
    }–${lines.length} of ${lines.length}; read on with offset=${last + 1})`
    : out
}

const byName = (a: { filename: string }, b: { filename: string }) =>
  a.filename < b.filename ? -1 : a.filename > b.filename ? 1 : 0

export const listFiles = async (
  sftp: Sftp,
  rawPath: string,
  recursive: boolean,
  maxEntries: number
): Promise<string> => {
  const p = remotePath(rawPath)
  const stats = await sftp.lstat(p)
  if (stats === undefined) throw new ToolError(`${rawPath}: no such file or directory`)
  const root = await sftp.realpath(p)
  if (!stats.isDirectory()) {
    const target = stats.isSymbolicLink() ? await sftp.stat(p) : stats
    if (target === undefined || !target.isDirectory()) {
      return entryLine(P.basename(root), stats, await linkTarget(sftp, p, stats))
    }
  }
  const out: Array<string> = []
  let truncated = false
  const walk = async (dir: string, prefix: string): Promise<void> => {
    const entries = (await sftp.readdir(dir)).filter((e) => e.filename !== "." && e.filename !== "..").sort(byName)
    for (const entry of entries) {
      if (out.length >= maxEntries) {
        truncated = true
        return
      }
      const rel = prefix + entry.filename
      const full = P.join(dir, entry.filename)
      const attrs = entry.attrs as unknown as Stats
      out.push(entryLine(rel, attrs, await linkTarget(sftp, full, attrs)))
      if (recursive && attrs.isDirectory()) {
        try {
          await walk(full, `${rel}/`)
        } catch (error) {
          out.push(`${rel}/  (not listed: ${error instanceof Error ? error.message : String(error)})`)
        }
      }
    }
  }
  await walk(p, "")
  const header = root.endsWith("/") ? root : `${root}/`
  if (out.length === 0) return `${header}\n(empty directory)`
  return `${header}\n${out.join("\n")}${
    truncated ? `\n… (stopped after ${maxEntries} entries; list a subdirectory or raise max_entries)` : ""
  }`
}

const linkTarget = async (sftp: Sftp, p: string, stats: Stats): Promise<string | undefined> =>
  stats.isSymbolicLink() ? sftp.readlink(p).catch(() => "?") : undefined

const entryLine = (rel: string, stats: Stats, target: string | undefined): string => {
  if (target !== undefined) return `${rel} -> ${target}`
  if (stats.isDirectory()) return `${rel}/`
  if (stats.isFile()) return `${rel}  (${stats.size} bytes)`
  return `${rel}  (special)`
}

/** A glob (`*`, `**`, `?`) as a RegExp; without a `/` it matches the base name. */
export const globRegExp = (glob: string): { re: RegExp; basename: boolean } => {
  let re = ""
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!
    if (c === "*") {
      if (glob[i + 1] === "*") {
        re += ".*"
        i++
        if (glob[i + 1] === "/") i++
      } else re += "[^/]*"
    } else if (c === "?") re += "[^/]"
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&")
  }
  return { re: new RegExp(`^${re}$`), basename: !glob.includes("/") }
}

export interface GrepOptions {
  readonly pattern: string
  readonly path: string
  readonly glob: string | undefined
  readonly ignoreCase: boolean
  readonly maxResults: number
  readonly maxFileBytes: number
  /** The most files read (a bound on a search of a huge tree). */
  readonly maxFiles: number
}

export const grepFiles = async (sftp: Sftp, options: GrepOptions): Promise<string> => {
  let re: RegExp
  try {
    re = new RegExp(options.pattern, options.ignoreCase ? "i" : "")
  } catch (error) {
    throw new ToolError(`invalid pattern: ${error instanceof Error ? error.message : String(error)}`)
  }
  const glob = options.glob === undefined || options.glob === "" ? undefined : globRegExp(options.glob)
  const root = remotePath(options.path)
  const rootStats = await sftp.stat(root)
  if (rootStats === undefined) throw new ToolError(`${options.path}: no such file or directory`)

  const matches: Array<string> = []
  let skipped = 0
  let filesRead = 0
  let stopped: string | undefined

  const searchFile = async (full: string, shown: string, size: number) => {
    if (size > options.maxFileBytes) {
      skipped++
      return
    }
    if (filesRead >= options.maxFiles) {
      stopped = `stopped after reading ${options.maxFiles} files`
      return
    }
    filesRead++
    let data: Buffer
    try {
      data = await sftp.readFile(full)
    } catch {
      skipped++
      return
    }
    if (isBinary(data)) {
      skipped++
      return
    }
    const { lines } = splitLines(data.toString("utf8"))
    for (let i = 0; i < lines.length; i++) {
      if (re.test(lines[i]!)) {
        if (matches.length >= options.maxResults) {
          stopped = `stopped after ${options.maxResults} matches`
          return
        }
        const line = lines[i]!.length > 500 ? `${lines[i]!.slice(0, 500)} …` : lines[i]!
        matches.push(`${shown}:${i + 1}: ${line}`)
      }
    }
  }

  const walk = async (dir: string, prefix: string): Promise<void> => {
    let entries
    try {
      entries = (await sftp.readdir(dir)).filter((e) => e.filename !== "." && e.filename !== "..").sort(byName)
    } catch {
      skipped++
      return
    }
    for (const entry of entries) {
      if (stopped !== undefined) return
      const rel = prefix + entry.filename
      const attrs = entry.attrs as unknown as Stats
      if (attrs.isDirectory()) await walk(P.join(dir, entry.filename), `${rel}/`)
      else if (attrs.isFile()) {
        if (glob !== undefined && !glob.re.test(glob.basename ? entry.filename : rel)) continue
        await searchFile(P.join(dir, entry.filename), rel, attrs.size)
      }
    }
  }

  if (rootStats.isDirectory()) await walk(root, "")
  else await searchFile(root, options.path, rootStats.size)

  const notes = [
    ...(stopped !== undefined ? [`… (${stopped}; narrow the path, glob or pattern)`] : []),
    ...(skipped > 0 ? [`(skipped ${skipped} binary, unreadable or oversized files)`] : [])
  ]
  if (matches.length === 0) return [`No matches for /${options.pattern}/ in ${options.path}`, ...notes].join("\n")
  return [...matches, ...notes].join("\n")
}

const lineOf = (text: string, index: number): number => {
  let line = 1
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++
  return line
}

export const editFile = async (
  sftp: Sftp,
  rawPath: string,
  oldString: string,
  newString: string,
  replaceAll: boolean,
  maxBytes: number
): Promise<string> => {
  const p = remotePath(rawPath)
  if (oldString === newString) throw new ToolError("old_string and new_string are the same: nothing to change")
  if (oldString === "") {
    const stats = await sftp.stat(p)
    if (stats !== undefined && (!stats.isFile() || stats.size > 0)) {
      throw new ToolError(
        `old_string is empty but ${rawPath} already exists and is not empty; give the text to replace`
      )
    }
    const parent = P.dirname(p)
    if (parent !== "." && parent !== "/") await sftp.mkdirp(parent)
    await writeText(sftp, p, newString, stats === undefined ? undefined : stats.mode & 0o7777)
    return `${stats === undefined ? "Created" : "Wrote"} ${rawPath} (${splitLines(newString).lines.length} lines)`
  }
  const { stats, text } = await readText(sftp, p, maxBytes)
  const positions: Array<number> = []
  for (let at = text.indexOf(oldString); at !== -1; at = text.indexOf(oldString, at + oldString.length)) {
    positions.push(at)
  }
  if (positions.length === 0) {
    throw new ToolError(
      `old_string was not found in ${rawPath} (it must match exactly, whitespace included; read_file shows the text)`
    )
  }
  if (positions.length > 1 && !replaceAll) {
    throw new ToolError(
      `old_string occurs ${positions.length} times in ${rawPath} (lines ${
        positions.map((at) => lineOf(text, at)).join(", ")
      }); ` +
        `include more context to make it unique, or set replace_all=true`
    )
  }
  const lines = positions.map((at) => lineOf(text, at))
  const updated = replaceAll ? text.split(oldString).join(newString) : text.replace(oldString, () => newString)
  await writeText(sftp, p, updated, stats.mode & 0o7777)
  return `Edited ${rawPath}: replaced ${positions.length} occurrence${positions.length === 1 ? "" : "s"} ` +
    `(line${lines.length === 1 ? "" : "s"} ${lines.join(", ")})`
}

export const replaceLines = async (
  sftp: Sftp,
  rawPath: string,
  start: number,
  end: number,
  newContent: string,
  maxBytes: number
): Promise<string> => {
  const p = remotePath(rawPath)
  const { stats, text } = await readText(sftp, p, maxBytes)
  const { lines, trailingNewline, eol } = splitLines(text)
  const total = lines.length
  if (start < 1 || start > total + 1) {
    throw new ToolError(`start_line ${start} is out of range: ${rawPath} has ${total} lines`)
  }
  if (end < start - 1 || end > total) {
    throw new ToolError(
      `end_line ${end} is out of range: it must be between start_line - 1 (${start - 1}, to insert) and ${total}`
    )
  }
  const body = newContent.endsWith("\n") ? newContent.slice(0, newContent.endsWith("\r\n") ? -2 : -1) : newContent
  const inserted = newContent === "" ? [] : body.split(/\r?\n/)
  const result = [...lines.slice(0, start - 1), ...inserted, ...lines.slice(end)]
  const updated = result.join(eol) + (result.length > 0 && (trailingNewline || total === 0) ? eol : "")
  await writeText(sftp, p, updated, stats.mode & 0o7777)
  const replaced = end - start + 1
  const what = replaced === 0
    ? `Inserted ${inserted.length} line${inserted.length === 1 ? "" : "s"} before line ${start}`
    : `Replaced lines ${start}–${end} (${replaced} line${replaced === 1 ? "" : "s"}) with ${inserted.length} line${
      inserted.length === 1 ? "" : "s"
    }`
  const from = Math.max(1, start - 2)
  const to = Math.min(result.length, start + inserted.length + 1)
  const excerpt = result.length === 0 ? "(the file is now empty)" : numbered(result.slice(from - 1, to), from)
  return `${what} in ${rawPath}; it now has ${result.length} lines.\n${excerpt}`
}
