/**
 * OpenSSH `known_hosts`: reading (plain host patterns with `*`/`?`/`!`, `[host]:port` for ports
 * other than 22, hashed `|1|salt|hash` entries, `@revoked`; `@cert-authority` lines are skipped),
 * checking a presented host key, and appending an accepted one.
 *
 * The verdict follows OpenSSH with `StrictHostKeyChecking=yes` / `accept-new`:
 * - the key is listed for the host → known (unless it is also `@revoked`);
 * - the host is listed with other keys → changed, always rejected (also when only keys of another
 *   type are listed: we then prefer the listed types in the handshake, so a host offering a new
 *   type is suspicious — `ssh-keygen -R` the old entries when the change is expected);
 * - the host is not listed → unknown, accepted only for an alias with `accept_new_host_key`.
 */
import { createHash, createHmac, randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"

export interface HostKey {
  /** The key type from the blob, e.g. `ssh-ed25519`. */
  readonly type: string
  /** The SSH wire encoding of the public key (what a known_hosts line holds in base64). */
  readonly blob: Buffer
}

interface Entry {
  readonly marker: "revoked" | "cert-authority" | undefined
  readonly hosts: string
  readonly type: string
  readonly blob: Buffer
}

export type Verdict =
  | { readonly status: "known" }
  | { readonly status: "unknown" }
  | { readonly status: "changed"; readonly knownTypes: ReadonlyArray<string> }
  | { readonly status: "revoked" }

/** Reads the key type (the first SSH string) of a public key blob. */
export const hostKeyOf = (blob: Buffer): HostKey => {
  if (blob.length < 4) return { type: "unknown", blob }
  const length = blob.readUInt32BE(0)
  const type = blob.length >= 4 + length ? blob.subarray(4, 4 + length).toString("latin1") : "unknown"
  return { type, blob }
}

/** `SHA256:…` as OpenSSH prints it. */
export const fingerprint = (blob: Buffer): string =>
  `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`

/** The name a host is listed under: `host`, or `[host]:port` for ports other than 22. */
export const hostName = (host: string, port: number): string => (port === 22 ? host : `[${host}]:${port}`).toLowerCase()

export const parse = (text: string): ReadonlyArray<Entry> => {
  const entries: Array<Entry> = []
  for (const rawLine of text.split("\n")) {
    const line = rawLine.trim()
    if (line === "" || line.startsWith("#")) continue
    const fields = line.split(/\s+/)
    let marker: Entry["marker"]
    if (fields[0]?.startsWith("@")) {
      const m = fields.shift()
      if (m === "@revoked") marker = "revoked"
      else if (m === "@cert-authority") marker = "cert-authority"
      else continue
    }
    const [hosts, type, key] = fields
    if (hosts === undefined || type === undefined || key === undefined) continue
    const blob = Buffer.from(key, "base64")
    if (blob.length === 0) continue
    entries.push({ marker, hosts, type, blob })
  }
  return entries
}

const globToRegExp = (pattern: string): RegExp =>
  new RegExp(
    "^" + pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".") + "$",
    "i"
  )

/** Whether an entry's host field names `name` (a `hostName`). */
export const matches = (hosts: string, name: string): boolean => {
  if (hosts.startsWith("|1|")) {
    const [, , salt, hash] = hosts.split("|")
    if (salt === undefined || hash === undefined) return false
    const expected = Buffer.from(hash, "base64")
    const actual = createHmac("sha1", Buffer.from(salt, "base64")).update(name).digest()
    return expected.length === actual.length && expected.equals(actual)
  }
  let positive = false
  for (const raw of hosts.split(",")) {
    if (raw === "") continue
    const negated = raw.startsWith("!")
    const pattern = negated ? raw.slice(1) : raw
    if (globToRegExp(pattern).test(name)) {
      if (negated) return false
      positive = true
    }
  }
  return positive
}

/** The entries that apply to a host (certificate authorities aside). */
const forHost = (entries: ReadonlyArray<Entry>, host: string, port: number) => {
  const name = hostName(host, port)
  return entries.filter((e) => e.marker !== "cert-authority" && matches(e.hosts, name))
}

export const check = (entries: ReadonlyArray<Entry>, host: string, port: number, key: HostKey): Verdict => {
  const listed = forHost(entries, host, port)
  if (listed.some((e) => e.marker === "revoked" && e.blob.equals(key.blob))) return { status: "revoked" }
  const plain = listed.filter((e) => e.marker === undefined)
  if (plain.some((e) => e.blob.equals(key.blob))) return { status: "known" }
  if (plain.length > 0) return { status: "changed", knownTypes: [...new Set(plain.map((e) => e.type))] }
  return { status: "unknown" }
}

/** The key types listed for a host, to prefer them in the handshake. */
export const knownTypes = (
  entries: ReadonlyArray<Entry>,
  host: string,
  port: number
): ReadonlyArray<string> => [
  ...new Set(forHost(entries, host, port).filter((e) => e.marker === undefined).map((e) => e.type))
]

/** Host key algorithms that produce a key of each type (RSA keys sign with the SHA-2 variants). */
export const algorithmsFor = (types: ReadonlyArray<string>): Array<string> =>
  types.flatMap((t) => (t === "ssh-rsa" ? ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"] : [t]))

export const load = async (file: string): Promise<ReadonlyArray<Entry>> => {
  try {
    return parse(await fs.readFile(file, "utf8"))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return []
    throw error
  }
}

/** One known_hosts line for a host key; hashed when asked (OpenSSH's `HashKnownHosts`). */
export const line = (host: string, port: number, key: HostKey, hashed: boolean): string => {
  const name = hostName(host, port)
  let hosts = name
  if (hashed) {
    const salt = randomBytes(20)
    hosts = `|1|${salt.toString("base64")}|${createHmac("sha1", salt).update(name).digest("base64")}`
  }
  return `${hosts} ${key.type} ${key.blob.toString("base64")}`
}

/** Appends an accepted host key (creating `~/.ssh` at 0700 and the file at 0600 when missing). */
export const append = async (
  file: string,
  host: string,
  port: number,
  key: HostKey,
  hashed: boolean
): Promise<void> => {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 })
  let prefix = ""
  try {
    const handle = await fs.open(file, "r")
    try {
      const { size } = await handle.stat()
      if (size > 0) {
        const last = Buffer.alloc(1)
        await handle.read(last, 0, 1, size - 1)
        if (last[0] !== 0x0a) prefix = "\n"
      }
    } finally {
      await handle.close()
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
  }
  await fs.appendFile(file, `${prefix}${line(host, port, key, hashed)}\n`, { mode: 0o600 })
}
