/**
 * Private files for the example servers (aliases, OAuth credentials, …): written atomically
 * — a temporary file in the same directory, fsync'd, then renamed over the target — with
 * mode 0600 in a directory of mode 0700, so a crash never leaves a half-written file and no
 * other user can read one.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"

export const ensurePrivateDir = async (dir: string): Promise<void> => {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 })
  await fs.chmod(dir, 0o700)
}

export const writeFileAtomic = async (file: string, contents: string | Uint8Array): Promise<void> => {
  const dir = path.dirname(file)
  await ensurePrivateDir(dir)
  const tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`)
  const handle = await fs.open(tmp, "wx", 0o600)
  try {
    await handle.writeFile(contents)
    await handle.sync()
  } finally {
    await handle.close()
  }
  try {
    await fs.rename(tmp, file)
  } catch (error) {
    await fs.rm(tmp, { force: true })
    throw error
  }
}

export const writeJsonAtomic = (file: string, value: unknown): Promise<void> =>
  writeFileAtomic(file, JSON.stringify(value, null, 2) + "\n")

/** Reads a JSON file, or `undefined` when it does not exist. */
export const readJsonIfExists = async (file: string): Promise<unknown> => {
  try {
    return JSON.parse(await fs.readFile(file, "utf8"))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw error
  }
}
