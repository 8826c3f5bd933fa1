/**
 * Media the demo server generates offline: a PNG gradient (a minimal encoder: 8-bit RGB,
 * filter 0 on every row, one zlib IDAT chunk, CRC-32 per chunk) and a WAV sine tone (16-bit PCM
 * mono). No dependencies beyond node:zlib.
 */
import { deflateSync } from "node:zlib"

// --- CRC-32 (the PNG/zlib polynomial 0xEDB88320) -------------------------------------------------

const CRC_TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

export const crc32 = (bytes: Uint8Array): number => {
  let c = 0xffffffff
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

// --- colours -------------------------------------------------------------------------------------

export type Rgb = readonly [number, number, number]

/** `#rrggbb` (or `rrggbb`) to its three bytes; undefined when it is not one. */
export const parseColor = (text: string): Rgb | undefined => {
  const match = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(text.trim())
  if (match === null) return undefined
  return [parseInt(match[1]!, 16), parseInt(match[2]!, 16), parseInt(match[3]!, 16)]
}

// --- PNG -----------------------------------------------------------------------------------------

export const PNG_SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)

const chunk = (type: string, data: Uint8Array): Buffer => {
  const out = Buffer.alloc(12 + data.length)
  out.writeUInt32BE(data.length, 0)
  out.write(type, 4, "latin1")
  Buffer.from(data.buffer, data.byteOffset, data.byteLength).copy(out, 8)
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length)
  return out
}

/** Encodes 8-bit RGB pixels (`width * height * 3` bytes, row by row) as a PNG file. */
export const encodePng = (width: number, height: number, rgb: Uint8Array): Buffer => {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new Error(`bad PNG size ${width}x${height}`)
  }
  if (rgb.length !== width * height * 3) {
    throw new Error(`expected ${width * height * 3} bytes of RGB, got ${rgb.length}`)
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 2 // colour type: truecolour (RGB)
  ihdr[10] = 0 // compression: deflate
  ihdr[11] = 0 // filter method 0
  ihdr[12] = 0 // no interlace
  const stride = width * 3
  const raw = Buffer.alloc(height * (stride + 1))
  for (let y = 0; y < height; y++) {
    raw[y * (stride + 1)] = 0 // filter type None
    Buffer.from(rgb.buffer, rgb.byteOffset + y * stride, stride).copy(raw, y * (stride + 1) + 1)
  }
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", new Uint8Array(0))
  ])
}

/**
 * A gradient: left to right from `from` to `to`, darkening by up to a quarter towards the bottom.
 * The top-left pixel is exactly `from` and the top-right pixel exactly `to`.
 */
export const gradientPixels = (width: number, height: number, from: Rgb, to: Rgb): Uint8Array => {
  const out = new Uint8Array(width * height * 3)
  for (let y = 0; y < height; y++) {
    const shade = height === 1 ? 1 : 1 - 0.25 * (y / (height - 1))
    for (let x = 0; x < width; x++) {
      const t = width === 1 ? 0 : x / (width - 1)
      for (let c = 0; c < 3; c++) {
        out[(y * width + x) * 3 + c] = Math.round((from[c]! + (to[c]! - from[c]!) * t) * shade)
      }
    }
  }
  return out
}

// --- WAV -----------------------------------------------------------------------------------------

export interface Tone {
  readonly frequency: number
  readonly durationMs: number
  readonly sampleRate: number
  /** 0..1 of full scale (default 0.5). */
  readonly volume?: number
}

/** A sine tone as a 16-bit PCM mono WAV file, with 5 ms fades so it does not click. */
export const encodeSineWav = (tone: Tone): Buffer => {
  const samples = Math.max(1, Math.round((tone.sampleRate * tone.durationMs) / 1000))
  const amplitude = Math.round(32767 * (tone.volume ?? 0.5))
  const fade = Math.max(1, Math.round(tone.sampleRate * 0.005))
  const dataBytes = samples * 2
  const out = Buffer.alloc(44 + dataBytes)
  out.write("RIFF", 0, "latin1")
  out.writeUInt32LE(36 + dataBytes, 4)
  out.write("WAVE", 8, "latin1")
  out.write("fmt ", 12, "latin1")
  out.writeUInt32LE(16, 16) // fmt chunk size
  out.writeUInt16LE(1, 20) // PCM
  out.writeUInt16LE(1, 22) // mono
  out.writeUInt32LE(tone.sampleRate, 24)
  out.writeUInt32LE(tone.sampleRate * 2, 28) // byte rate
  out.writeUInt16LE(2, 32) // block align
  out.writeUInt16LE(16, 34) // bits per sample
  out.write("data", 36, "latin1")
  out.writeUInt32LE(dataBytes, 40)
  for (let i = 0; i < samples; i++) {
    const envelope = Math.min(1, i / fade, (samples - 1 - i) / fade)
    const value = Math.round(amplitude * envelope * Math.sin((2 * Math.PI * tone.frequency * i) / tone.sampleRate))
    out.writeInt16LE(value, 44 + i * 2)
  }
  return out
}
