/**
 * Redacting a server's secret values from text, in every form the value can take in output: a
 * server prints a secret raw, line by line (a PEM key written to stderr arrives one line at a
 * time), JSON-escaped (inside an object-valued log record: `"` → `\"`, `\` → `\\`, a newline →
 * `\n`, and `\uXXXX` for non-ASCII as Python's `json` writes it) or percent-encoded (in a URL or a
 * form body). One `Redactor` is built from a server's values and applied once, where text leaves
 * the host: its log lines, its status error, the host's warnings, and the command line's error text.
 *
 * The forms matched, for the value and for each of its lines of 4 characters or more (without the
 * line break and the white space around it): the raw text; `JSON.stringify(x).slice(1, -1)`, also with every non-ASCII
 * character as `\uXXXX`; `encodeURIComponent(x)`; the form encoding (`URLSearchParams`: a space is
 * `+`). Hex digits of `\uXXXX` and `%XX` match in either case. Values shorter than 4 characters
 * are left alone: redacting them would shred ordinary text.
 *
 * @since 0.1.0
 */
import * as Redacted from "effect/Redacted"

/** What a secret is replaced with. */
export const MARKER = "[redacted]"

/** Values (and lines of values) shorter than this are not redacted. */
export const MIN_LENGTH = 4

/** Replaces a server's secrets in text. */
export interface Redactor {
  /** `text` with every form of every secret replaced by `[redacted]`; unchanged when it holds none. */
  readonly redact: (text: string) => string
}

/**
 * The value and each of its lines that are long enough to redact: a line is taken without its
 * line break (`\n`, `\r\n` or `\r`) and the white space around it (a re-indented key is still
 * redacted; a line of blanks is not a secret).
 */
export const pieces = (value: string): ReadonlyArray<string> => {
  const out = new Set<string>()
  if (value.length >= MIN_LENGTH) out.add(value)
  if (/[\r\n]/.test(value)) {
    for (const line of value.split(/\r?\n|\r/)) {
      const trimmed = line.trim()
      if (trimmed.length >= MIN_LENGTH) out.add(trimmed)
    }
  }
  return [...out]
}

const jsonEscaped = (x: string): string => JSON.stringify(x).slice(1, -1)

const asciiJsonEscaped = (x: string): string =>
  jsonEscaped(x).replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

const percentEncoded = (x: string): string | undefined => {
  // encodeURIComponent throws on a lone surrogate: such a value has no percent-encoded form.
  try {
    return encodeURIComponent(x)
  } catch {
    return undefined
  }
}

const formEncoded = (x: string): string => new URLSearchParams([["", x]]).toString().slice(1)

/** The literal forms of one value that are matched (hex digits as the encoders write them). */
export const forms = (value: string): ReadonlyArray<string> => {
  const out = new Set<string>()
  for (const piece of pieces(value)) {
    out.add(piece)
    out.add(jsonEscaped(piece))
    out.add(asciiJsonEscaped(piece))
    const percent = percentEncoded(piece)
    if (percent !== undefined) out.add(percent)
    out.add(formEncoded(piece))
  }
  return [...out]
}

const escapeRegExp = (text: string): string => text.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&")

const hexClass = (digit: string): string =>
  /[a-f]/i.test(digit) ? `[${digit.toLowerCase()}${digit.toUpperCase()}]` : digit

/** A form as a pattern: literal, except that the hex digits of `%XX` and `\uXXXX` match in either case. */
const patternOf = (form: string): string => {
  let out = ""
  let at = 0
  const escapes = /%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}/g
  for (const m of form.matchAll(escapes)) {
    out += escapeRegExp(form.slice(at, m.index))
    const [lead, hex] = m[0].startsWith("%") ? ["%", m[0].slice(1)] : ["\\\\u", m[0].slice(2)]
    out += lead + Array.from(hex, hexClass).join("")
    at = m.index + m[0].length
  }
  return out + escapeRegExp(form.slice(at))
}

/** Passes over a text before falling back to replacing it whole (a secret that overlaps the marker). */
const MAX_PASSES = 4

/** Redacts nothing. */
export const empty: Redactor = { redact: (text) => text }

/** A redactor for these secret values. */
export const make = (secrets: Iterable<Redacted.Redacted<string> | string>): Redactor => {
  const all = new Set<string>()
  for (const secret of secrets) {
    for (const form of forms(typeof secret === "string" ? secret : Redacted.value(secret))) all.add(form)
  }
  if (all.size === 0) return empty
  // Longest first, so a value wins over its own lines at the same position.
  const source = [...all].sort((a, b) => b.length - a.length).map(patternOf).join("|")
  const pattern = new RegExp(source, "g")
  const test = new RegExp(source)
  return {
    redact: (text) => {
      if (!test.test(text)) return text
      let out = text
      for (let pass = 0; pass < MAX_PASSES; pass++) {
        out = out.replace(pattern, MARKER)
        // The marker next to the text around it can form a secret again (one ending in "d]"): repeat.
        if (!test.test(out)) return out
      }
      return test.test(MARKER) ? "***" : MARKER
    }
  }
}

const redactValue = (redactor: Redactor, value: unknown): unknown =>
  typeof value === "string"
    ? redactor.redact(value)
    : Array.isArray(value) && value.every((v) => typeof v === "string")
    ? value.map(redactor.redact)
    : value

/**
 * A copy of an error (same class) whose string fields, string-array fields (a stderr tail) and
 * stack are redacted, so its message is too; anything else is returned as it is.
 */
export const redactFields = <E>(redactor: Redactor, error: E): E => {
  if (redactor === empty || typeof error !== "object" || error === null) return error
  const copy = Object.create(Object.getPrototypeOf(error)) as object
  for (const key of Reflect.ownKeys(error)) {
    const descriptor = Object.getOwnPropertyDescriptor(error, key)!
    if ("value" in descriptor) descriptor.value = redactValue(redactor, descriptor.value)
    Object.defineProperty(copy, key, descriptor)
  }
  return copy as E
}
