/**
 * Helpers for the demo server's tests: how to start it (stdio and HTTP), a scripted elicitation
 * handler, a tiny "browser" for its one-time URL-elicitation page, and independent PNG and WAV
 * readers (node:zlib's own crc32 and inflate, not the server's encoder).
 */
import { assert } from "@effect/vitest"
import { Elicitation } from "@skald/mcp"
import { Effect } from "effect"
import type { Scope } from "effect"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import { scripted } from "../elicitation-support.js"
import type { FixtureCommand } from "../fixtures/fixtures.js"
import { repoRoot } from "../fixtures/fixtures.js"
import { spawnServer } from "../http-support.js"

/** The demo server's entry point. */
export const demoScript = Path.join(repoRoot, "scripts", "demo-server.ts")

/** `node --import tsx scripts/demo-server.ts ARGS…` from the repository root. */
export const demoCommand = (
  env?: Readonly<Record<string, string>>,
  args: ReadonlyArray<string> = []
): FixtureCommand => ({
  command: process.execPath,
  args: ["--import", "tsx", demoScript, ...args],
  cwd: repoRoot,
  ...(env !== undefined ? { env } : {})
})

// --- elicitation -------------------------------------------------------------------------------

/** The only request the handler saw, as a form. */
export const onlyForm = (requests: ReadonlyArray<Elicitation.Request>): Elicitation.FormRequest => {
  assert.strictEqual(requests.length, 1, `expected one elicitation, got ${requests.length}`)
  const request = requests[0]!
  if (request._tag !== "Form") return assert.fail(`expected a Form request, got ${request._tag}`)
  return request
}

/** The only request the handler saw, as a URL request. */
export const onlyUrl = (requests: ReadonlyArray<Elicitation.Request>): Elicitation.UrlRequest => {
  assert.strictEqual(requests.length, 1, `expected one elicitation, got ${requests.length}`)
  const request = requests[0]!
  if (request._tag !== "Url") return assert.fail(`expected a Url request, got ${request._tag}`)
  return request
}

/** Plain data (undefined-valued keys dropped), for deepStrictEqual. */
export const plain = (u: unknown): unknown => JSON.parse(JSON.stringify(u))

/** What a person does with the one-time page: GET it, then POST the form. */
export interface PageVisit {
  /** The HTML the GET returned. */
  readonly form: string
  /** The status and HTML of the POST. */
  readonly submitStatus: number
  readonly submitted: string
}

/** Opens a 127.0.0.1 page like a browser would and submits `values` as its form. */
export const fillInPage = (url: string, values: Record<string, string>): Promise<PageVisit> =>
  (async () => {
    const parsed = new URL(url)
    if (parsed.hostname !== "127.0.0.1") throw new Error(`not a loopback page: ${parsed.host}`)
    const got = await fetch(url)
    const form = await got.text()
    if (got.status !== 200) throw new Error(`GET answered ${got.status}`)
    const posted = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(values).toString()
    })
    return { form, submitStatus: posted.status, submitted: await posted.text() }
  })()

// --- HTTP mode ---------------------------------------------------------------------------------

export interface RunningDemo {
  readonly url: string
  readonly pid: number
  /** Everything it wrote on stderr so far. */
  readonly stderr: () => string
}

/**
 * Starts the demo with `--http --port 0 ARGS…` and reads its URL from its output; SIGTERM (then
 * SIGKILL after 3 s) when the scope closes.
 */
export const startDemoHttp = (
  args: ReadonlyArray<string> = [],
  env: Readonly<Record<string, string>> = {}
): Effect.Effect<RunningDemo, Error, Scope.Scope> =>
  spawnServer(demoCommand(env, ["--http", "--port", "0", ...args]), {
    ready: /listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)\n/,
    url: (match) => match[1]!,
    stdoutOnly: false
  }).pipe(Effect.map((server) => ({ url: server.url, pid: server.pid, stderr: server.output })))

// --- PNG and WAV readers -------------------------------------------------------------------------

export interface DecodedPng {
  readonly width: number
  readonly height: number
  readonly bitDepth: number
  readonly colorType: number
  readonly chunkTypes: ReadonlyArray<string>
  /** RGB of pixel (x, y) (colour type 2, bit depth 8 and filter type 0 rows only). */
  readonly pixel: (x: number, y: number) => [number, number, number]
}

/** Reads a PNG: checks the signature, every chunk's CRC-32, and inflates the image data. */
export const decodePng = (bytes: Uint8Array): DecodedPng => {
  const buf = Buffer.from(bytes)
  assert.deepStrictEqual([...buf.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "PNG signature")
  const types: Array<string> = []
  const idat: Array<Buffer> = []
  let ihdr: Buffer | undefined
  let at = 8
  while (at < buf.length) {
    const length = buf.readUInt32BE(at)
    const type = buf.toString("latin1", at + 4, at + 8)
    const data = buf.subarray(at + 8, at + 8 + length)
    const crc = buf.readUInt32BE(at + 8 + length)
    assert.strictEqual(crc, Zlib.crc32(buf.subarray(at + 4, at + 8 + length)), `CRC of the ${type} chunk`)
    types.push(type)
    if (type === "IHDR") ihdr = data
    if (type === "IDAT") idat.push(data)
    at += 12 + length
  }
  assert.strictEqual(at, buf.length, "the chunks end exactly at the end of the file")
  if (ihdr === undefined) return assert.fail("no IHDR chunk")
  const width = ihdr.readUInt32BE(0)
  const height = ihdr.readUInt32BE(4)
  const bitDepth = ihdr[8]!
  const colorType = ihdr[9]!
  const raw = Zlib.inflateSync(Buffer.concat(idat))
  const stride = width * 3 + 1
  return {
    width,
    height,
    bitDepth,
    colorType,
    chunkTypes: types,
    pixel: (x, y) => {
      assert.strictEqual(raw.length, height * stride, "inflated image data size")
      assert.strictEqual(raw[y * stride], 0, `filter type of row ${y}`)
      const o = y * stride + 1 + x * 3
      return [raw[o]!, raw[o + 1]!, raw[o + 2]!]
    }
  }
}

export interface DecodedWav {
  readonly format: number
  readonly channels: number
  readonly sampleRate: number
  readonly byteRate: number
  readonly blockAlign: number
  readonly bitsPerSample: number
  readonly samples: Int16Array
}

/** Reads a canonical RIFF/WAVE file: the header fields and its 16-bit samples. */
export const decodeWav = (bytes: Uint8Array): DecodedWav => {
  const buf = Buffer.from(bytes)
  assert.strictEqual(buf.toString("latin1", 0, 4), "RIFF")
  assert.strictEqual(buf.readUInt32LE(4), buf.length - 8, "RIFF size")
  assert.strictEqual(buf.toString("latin1", 8, 12), "WAVE")
  assert.strictEqual(buf.toString("latin1", 12, 16), "fmt ")
  assert.strictEqual(buf.readUInt32LE(16), 16, "fmt chunk size (PCM)")
  assert.strictEqual(buf.toString("latin1", 36, 40), "data")
  const dataBytes = buf.readUInt32LE(40)
  assert.strictEqual(dataBytes, buf.length - 44, "data size")
  const samples = new Int16Array(dataBytes / 2)
  for (let i = 0; i < samples.length; i++) samples[i] = buf.readInt16LE(44 + i * 2)
  return {
    format: buf.readUInt16LE(20),
    channels: buf.readUInt16LE(22),
    sampleRate: buf.readUInt32LE(24),
    byteRate: buf.readUInt32LE(28),
    blockAlign: buf.readUInt16LE(32),
    bitsPerSample: buf.readUInt16LE(34),
    samples
  }
}

/** Upward zero crossings: about `frequency × seconds` for a sine. */
export const upwardCrossings = (samples: Int16Array): number => {
  let count = 0
  for (let i = 1; i < samples.length; i++) if (samples[i - 1]! < 0 && samples[i]! >= 0) count++
  return count
}

/** A scripted elicitation handler (shared with the other elicitation tests). */
export { scripted }
