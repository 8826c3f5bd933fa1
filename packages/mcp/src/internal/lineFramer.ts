/**
 * Newline-delimited framing of a byte stream: lines split across chunks, CRLF, blank lines, and a
 * size limit that stops the framer instead of buffering without bound. Plain code: it runs in the
 * stream's data callback, on the hot path.
 */

export interface LineFramer {
  /** Feeds one chunk; calls `onLine` for every complete non-blank line. */
  readonly push: (chunk: Uint8Array) => void
  /** Bytes buffered of an unfinished line. */
  readonly buffered: () => number
}

export interface Options {
  readonly maxLineBytes: number
  readonly onLine: (line: string) => void
  /** Called once when a line exceeds `maxLineBytes`; the framer then ignores all further input. */
  readonly onTooLarge: () => void
}

const NL = 10
const CR = 13

const isBlank = (line: string): boolean => {
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i)
    if (c !== 32 && c !== 9 && c !== 13) return false
  }
  return true
}

export const make = (options: Options): LineFramer => {
  const { maxLineBytes, onLine, onTooLarge } = options
  let parts: Array<Buffer> = []
  let partsBytes = 0
  let dead = false

  const tooLarge = () => {
    dead = true
    parts = []
    partsBytes = 0
    onTooLarge()
  }

  const emit = (bytes: Buffer, start: number, end: number) => {
    if (end > start && bytes[end - 1] === CR) end--
    if (end <= start) return
    const line = bytes.toString("utf8", start, end)
    if (!isBlank(line)) onLine(line)
  }

  const push = (input: Uint8Array) => {
    if (dead) return
    const chunk = Buffer.isBuffer(input) ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength)
    let start = 0
    let nl = chunk.indexOf(NL, start)
    while (nl !== -1) {
      const size = partsBytes + (nl - start)
      if (size > maxLineBytes) return tooLarge()
      if (partsBytes > 0) {
        parts.push(chunk.subarray(start, nl))
        const whole = Buffer.concat(parts, size)
        parts = []
        partsBytes = 0
        emit(whole, 0, whole.length)
      } else {
        emit(chunk, start, nl)
      }
      if (dead) return
      start = nl + 1
      nl = chunk.indexOf(NL, start)
    }
    if (start < chunk.length) {
      partsBytes += chunk.length - start
      if (partsBytes > maxLineBytes) return tooLarge()
      parts.push(start === 0 ? chunk : chunk.subarray(start))
    }
  }

  return { push, buffered: () => partsBytes }
}
