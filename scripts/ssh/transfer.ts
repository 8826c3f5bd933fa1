/**
 * `upload` and `download`: files and whole directories over SFTP, as the login user.
 *
 * Destination rule (scp/rsync-like, the same both ways): a destination ending in `/`, or one that
 * is an existing directory, receives the source *inside* it under the source's base name;
 * otherwise the destination is the exact path the file (or the directory's copy) gets. Missing
 * parent directories are created either way. Directories are copied recursively; symlinks and
 * special files inside them are skipped (and counted), like rsync without `-l`. File permission
 * bits are kept on new files.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { Stats } from "ssh2"
import { ToolError } from "./errors.js"
import { remotePath, type Sftp } from "./sftp.js"

const P = path.posix

export interface TransferReport {
  readonly destination: string
  files: number
  bytes: number
  directories: number
  readonly skipped: Array<string>
}

const summary = (verb: string, source: string, report: TransferReport): string => {
  const parts = [
    `${report.files} file${report.files === 1 ? "" : "s"} (${report.bytes} bytes)`,
    ...(report.directories > 0
      ? [`${report.directories} director${report.directories === 1 ? "y" : "ies"} created`]
      : [])
  ]
  const skipped = report.skipped.length > 0
    ? `\nSkipped ${report.skipped.length} symlink(s) or special file(s): ${report.skipped.slice(0, 10).join(", ")}${
      report.skipped.length > 10 ? ", …" : ""
    }`
    : ""
  return `${verb} ${source} → ${report.destination}: ${parts.join(", ")}${skipped}`
}

const endsWithSlash = (p: string) => p.endsWith("/") || p.endsWith(path.sep)

/** Local paths: `~/` expanded, relative to the server's working directory. */
export const localPath = (p: string): string =>
  p === "~"
    ? (process.env.HOME ?? "/")
    : p.startsWith("~/")
    ? path.join(process.env.HOME ?? "/", p.slice(2))
    : path.resolve(p)

const localStat = async (p: string) => {
  try {
    return await fs.stat(p)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw new ToolError(`${p}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
}

// --- upload -------------------------------------------------------------------------------------

export const upload = async (sftp: Sftp, rawLocal: string, rawRemote: string): Promise<string> => {
  if (rawRemote === "") throw new ToolError("remote_path is empty")
  const source = localPath(rawLocal)
  const sourceStats = await localStat(source)
  if (sourceStats === undefined) throw new ToolError(`${rawLocal}: no such local file or directory`)
  if (!sourceStats.isFile() && !sourceStats.isDirectory()) {
    throw new ToolError(`${rawLocal} is not a regular file or directory`)
  }

  const remote = remotePath(rawRemote)
  let destination: string
  if (endsWithSlash(rawRemote)) {
    await sftp.mkdirp(remote.replace(/\/+$/, "") || "/")
    destination = P.join(remote, path.basename(source))
  } else {
    const existing = await sftp.stat(remote)
    if (existing?.isDirectory()) destination = P.join(remote, path.basename(source))
    else {
      destination = remote
      const parent = P.dirname(remote)
      if (parent !== "." && parent !== "/") await sftp.mkdirp(parent)
    }
  }
  const report: TransferReport = { destination, files: 0, bytes: 0, directories: 0, skipped: [] }

  const putFile = async (from: string, to: string, mode: number, size: number) => {
    const existing = await sftp.stat(to)
    if (existing?.isDirectory()) throw new ToolError(`cannot upload ${from}: ${to} is a directory`)
    await sftp.fastPut(from, to, mode & 0o777)
    report.files++
    report.bytes += size
  }
  const putDir = async (from: string, to: string, mode: number): Promise<void> => {
    const existing = await sftp.stat(to)
    if (existing === undefined) {
      await sftp.mkdir(to, mode & 0o777)
      report.directories++
    } else if (!existing.isDirectory()) {
      throw new ToolError(`cannot upload the directory ${from}: ${to} exists and is not a directory`)
    }
    const entries = (await fs.readdir(from, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))
    for (const entry of entries) {
      const childFrom = path.join(from, entry.name)
      const childTo = P.join(to, entry.name)
      if (entry.isDirectory()) await putDir(childFrom, childTo, (await fs.stat(childFrom)).mode)
      else if (entry.isFile()) {
        const st = await fs.stat(childFrom)
        await putFile(childFrom, childTo, st.mode, st.size)
      } else report.skipped.push(path.relative(source, childFrom))
    }
  }

  if (sourceStats.isDirectory()) await putDir(source, destination, sourceStats.mode)
  else await putFile(source, destination, sourceStats.mode, sourceStats.size)
  return summary("Uploaded", source, report)
}

// --- download -----------------------------------------------------------------------------------

export const download = async (sftp: Sftp, rawRemote: string, rawLocal: string): Promise<string> => {
  if (rawLocal === "") throw new ToolError("local_path is empty")
  const remote = remotePath(rawRemote)
  const sourceStats = await sftp.stat(remote)
  if (sourceStats === undefined) throw new ToolError(`${rawRemote}: no such remote file or directory`)
  if (!sourceStats.isFile() && !sourceStats.isDirectory()) {
    throw new ToolError(`${rawRemote} is not a regular file or directory`)
  }
  const source = await sftp.realpath(remote)
  const base = P.basename(source) || "root"

  const target = localPath(rawLocal)
  let destination: string
  if (endsWithSlash(rawLocal)) {
    await fs.mkdir(target, { recursive: true })
    destination = path.join(target, base)
  } else {
    const existing = await localStat(target)
    if (existing?.isDirectory()) destination = path.join(target, base)
    else {
      destination = target
      await fs.mkdir(path.dirname(target), { recursive: true })
    }
  }
  const report: TransferReport = { destination, files: 0, bytes: 0, directories: 0, skipped: [] }

  const getFile = async (from: string, to: string, stats: Stats) => {
    const existing = await localStat(to)
    if (existing?.isDirectory()) throw new ToolError(`cannot download ${from}: ${to} is a directory`)
    await sftp.fastGet(from, to)
    await fs.chmod(to, stats.mode & 0o777).catch(() => {})
    report.files++
    report.bytes += stats.size
  }
  const getDir = async (from: string, to: string, stats: Stats): Promise<void> => {
    const existing = await localStat(to)
    if (existing === undefined) {
      await fs.mkdir(to, { mode: stats.mode & 0o777 })
      report.directories++
    } else if (!existing.isDirectory()) {
      throw new ToolError(`cannot download the directory ${from}: ${to} exists and is not a directory`)
    }
    const entries = (await sftp.readdir(from)).filter((e) => e.filename !== "." && e.filename !== "..")
      .sort((a, b) => (a.filename < b.filename ? -1 : 1))
    for (const entry of entries) {
      const childFrom = P.join(from, entry.filename)
      const childTo = path.join(to, entry.filename)
      const attrs = entry.attrs as unknown as Stats
      if (attrs.isDirectory()) await getDir(childFrom, childTo, attrs)
      else if (attrs.isFile()) await getFile(childFrom, childTo, attrs)
      else report.skipped.push(P.relative(source, childFrom))
    }
  }

  if (sourceStats.isDirectory()) await getDir(source, destination, sourceStats)
  else await getFile(source, destination, sourceStats)
  return summary("Downloaded", source, report)
}
