/**
 * Line splitting for a server's stderr: like the stdout framer, but a line longer than the cap is
 * cut there with a marker (`… [truncated N bytes]`) instead of ending the stream, so what the
 * server writes afterwards is still read. At most `maxLineBytes` of a line are ever buffered.
 * Not on the protocol's hot path (stderr is diagnostics), so plain and simple.
 */

export interface StderrLines {
  /** Feeds one chunk; calls `onLine` for every complete non-blank line. */
  readonly push: (chunk: Uint8Array) => void
}

export interface Options {
  readonly maxLineBytes: number
  readonly onLine: (line: string) => void
}

const NL = 10

/** The marker appended to a cut line. */
export const truncatedMarker = (dropped: number): string => ` … [truncated ${dropped} bytes]`

export const make = (options: Options): StderrLines => {
  const { maxLineBytes, onLine } = options
  let parts: Array<Buffer> = []
  let kept = 0
  let dropped = 0

  const add = (bytes: Buffer) => {
    const room = maxLineBytes - kept
    if (bytes.length <= room) {
      if (bytes.length > 0) parts.push(bytes)
      kept += bytes.length
    } else {
      if (room > 0) parts.push(bytes.subarray(0, room))
      kept += Math.max(room, 0)
      dropped += bytes.length - Math.max(room, 0)
    }
  }

  const flush = () => {
    let line = Buffer.concat(parts, kept).toString("utf8")
    if (dropped > 0) {
      // A character cut at the cap decodes to U+FFFD: drop it, and count its bytes as truncated.
      while (line.endsWith("\uFFFD")) line = line.slice(0, -1)
      dropped += kept - Buffer.byteLength(line, "utf8")
    } else if (line.endsWith("\r")) {
      line = line.slice(0, -1)
    }
    const truncated = dropped
    parts = []
    kept = 0
    dropped = 0
    if (truncated > 0) onLine(`${line}${truncatedMarker(truncated)}`)
    else if (line.trim().length > 0) onLine(line)
  }

  const push = (input: Uint8Array) => {
    const chunk = Buffer.isBuffer(input) ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength)
    let start = 0
    let nl = chunk.indexOf(NL, start)
    while (nl !== -1) {
      add(chunk.subarray(start, nl))
      flush()
      start = nl + 1
      nl = chunk.indexOf(NL, start)
    }
    if (start < chunk.length) add(chunk.subarray(start))
  }

  return { push }
}
