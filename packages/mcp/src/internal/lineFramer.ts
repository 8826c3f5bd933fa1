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

  /**
   * A line read in several chunks. Each part is decoded on its own and the strings joined, rather
   * than the bytes copied into one buffer first: that buffer (the whole line, outside the JS heap)
   * is what made a stream of 100 KB answers grow the process by ~10 MB until the next collection.
   * Decoding part by part gives the same text as decoding the whole whenever no part starts with
   * a UTF-8 continuation byte (no character is split between parts); otherwise the bytes are joined.
   */
  const emitParts = (lineParts: ReadonlyArray<Buffer>, size: number) => {
    for (let i = 1; i < lineParts.length; i++) {
      const part = lineParts[i]!
      if (part.length > 0 && (part[0]! & 0xc0) === 0x80) {
        const whole = Buffer.concat(lineParts, size)
        return emit(whole, 0, whole.length)
      }
    }
    let line = ""
    for (const part of lineParts) if (part.length > 0) line += part.toString("utf8")
    if (line.endsWith("\r")) line = line.slice(0, -1)
    if (line.length > 0 && !isBlank(line)) onLine(line)
  }

  /**
   * The complete lines of `chunk` between `start` and its last newline `last`: decoded with one
   * call rather than one per line (a chunk of answers holds hundreds of lines; ~70 ns a line).
   * When every byte became one character — ASCII, as JSON-RPC traffic nearly always is — the
   * string's offsets are the bytes' offsets, so the lines, their sizes and CRs read the same as
   * decoding each line alone; otherwise each line is decoded alone.
   */
  const emitLines = (chunk: Buffer, start: number, last: number) => {
    const text = chunk.toString("utf8", start, last)
    if (text.length !== last - start) {
      let from = start
      let nl = chunk.indexOf(NL, from)
      while (nl !== -1 && nl <= last) {
        if (nl - from > maxLineBytes) return tooLarge()
        emit(chunk, from, nl)
        if (dead) return
        from = nl + 1
        nl = chunk.indexOf(NL, from)
      }
      return
    }
    let from = 0
    while (true) {
      let nl = text.indexOf("\n", from)
      if (nl === -1) nl = text.length
      if (nl - from > maxLineBytes) return tooLarge()
      let end = nl
      if (end > from && text.charCodeAt(end - 1) === CR) end--
      if (end > from) {
        const line = text.slice(from, end)
        if (!isBlank(line)) onLine(line)
      }
      if (dead || nl === text.length) return
      from = nl + 1
    }
  }

  const push = (input: Uint8Array) => {
    if (dead) return
    const chunk = Buffer.isBuffer(input) ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength)
    let start = 0
    const nl = chunk.indexOf(NL, 0)
    if (nl !== -1) {
      if (partsBytes > 0) {
        // The end of a line begun in earlier chunks.
        const size = partsBytes + nl
        if (size > maxLineBytes) return tooLarge()
        parts.push(chunk.subarray(0, nl))
        const lineParts = parts
        parts = []
        partsBytes = 0
        emitParts(lineParts, size)
        if (dead) return
        start = nl + 1
      }
      const last = chunk.lastIndexOf(NL)
      if (last >= start) {
        emitLines(chunk, start, last)
        if (dead) return
        start = last + 1
      }
    }
    if (start < chunk.length) {
      partsBytes += chunk.length - start
      if (partsBytes > maxLineBytes) return tooLarge()
      parts.push(start === 0 ? chunk : chunk.subarray(start))
    }
  }

  return { push, buffered: () => partsBytes }
}
