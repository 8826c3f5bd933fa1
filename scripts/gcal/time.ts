/**
 * Turning the tools' time arguments into what the Calendar API wants: `YYYY-MM-DD` is a day
 * (an all-day event, or midnight for a listing bound), an RFC 3339 date-time with an offset is
 * an instant, and a date-time without an offset is read in `time_zone` (an IANA name).
 */
import type { EventDateTime } from "./api.js"
import { GcalError } from "./credentials.js"

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$/i

interface Parsed {
  readonly kind: "date" | "dateTime"
  readonly year: number
  readonly month: number
  readonly day: number
  readonly hour: number
  readonly minute: number
  readonly second: number
  readonly fraction: string
  /** `Z`, `+hh:mm`, or undefined for a local time. */
  readonly offset: string | undefined
}

const pad = (n: number, width = 2): string => String(n).padStart(width, "0")

const parse = (input: string, field: string): Parsed => {
  const text = input.trim()
  const date = DATE.exec(text)
  const dateTime = date === null ? DATE_TIME.exec(text) : null
  const m = date ?? dateTime
  if (m === null) {
    throw new GcalError(
      `${field} must be a date (2025-01-31) or an RFC 3339 date-time (2025-01-31T09:30:00+01:00, or without the offset together with time_zone), got ${
        JSON.stringify(input)
      }`
    )
  }
  const parsed: Parsed = {
    kind: date !== null ? "date" : "dateTime",
    year: Number(m[1]),
    month: Number(m[2]),
    day: Number(m[3]),
    hour: Number(m[4] ?? 0),
    minute: Number(m[5] ?? 0),
    second: Number(m[6] ?? 0),
    fraction: dateTime?.[7] ?? "",
    offset: dateTime?.[8] === undefined ? undefined : dateTime[8].toUpperCase()
  }
  const check = new Date(Date.UTC(parsed.year, parsed.month - 1, parsed.day, parsed.hour, parsed.minute, parsed.second))
  if (
    check.getUTCFullYear() !== parsed.year || check.getUTCMonth() !== parsed.month - 1 ||
    check.getUTCDate() !== parsed.day ||
    check.getUTCHours() !== parsed.hour || check.getUTCMinutes() !== parsed.minute || parsed.second > 59
  ) {
    throw new GcalError(`${field} is not a real date or time: ${JSON.stringify(input)}`)
  }
  return parsed
}

const localText = (p: Parsed): string =>
  `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}T${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)}${p.fraction}`

/** Minutes east of UTC that `timeZone` is at `instant`. */
const zoneOffsetMinutes = (instant: number, timeZone: string): number => {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit"
  }).formatToParts(new Date(instant))
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0)
  const asUtc = Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute"), get("second"))
  return Math.round((asUtc - Math.floor(instant / 1000) * 1000) / 60_000)
}

/** Checks an IANA time zone name. */
export const checkTimeZone = (timeZone: string): string => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone })
  } catch {
    throw new GcalError(
      `time_zone must be an IANA time zone name such as Europe/Paris or UTC, got ${JSON.stringify(timeZone)}`
    )
  }
  return timeZone
}

const offsetText = (minutes: number): string => {
  if (minutes === 0) return "Z"
  const sign = minutes < 0 ? "-" : "+"
  const abs = Math.abs(minutes)
  return `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`
}

/** The offset a local wall-clock time has in `timeZone` (UTC when none is given). */
const offsetFor = (p: Parsed, timeZone: string | undefined): string => {
  if (timeZone === undefined) return "Z"
  const naive = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second)
  const first = zoneOffsetMinutes(naive, timeZone)
  const second = zoneOffsetMinutes(naive - first * 60_000, timeZone)
  return offsetText(second)
}

/**
 * A listing bound (`timeMin`/`timeMax`) as an RFC 3339 instant: a date is its midnight, a time
 * without an offset is read in `timeZone` — both in UTC when no time zone is given.
 */
export const instantFor = (input: string, field: string, timeZone?: string): string => {
  const p = parse(input, field)
  if (timeZone !== undefined) checkTimeZone(timeZone)
  return `${localText(p)}${p.offset ?? offsetFor(p, timeZone)}`
}

/** Milliseconds since the epoch of a `{date}` / `{dateTime}` with an offset, for comparisons. */
const epoch = (p: Parsed): number | undefined =>
  p.kind === "date"
    ? Date.UTC(p.year, p.month - 1, p.day)
    : p.offset === undefined
    ? undefined
    : Date.parse(`${localText(p)}${p.offset}`)

const nextDay = (p: Parsed): string => {
  const d = new Date(Date.UTC(p.year, p.month - 1, p.day + 1))
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
}

const eventTime = (p: Parsed, field: string, timeZone: string | undefined): EventDateTime => {
  if (p.kind === "date") return { date: `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}` }
  if (p.offset === undefined && timeZone === undefined) {
    throw new GcalError(`${field} has no UTC offset: add one (…T09:30:00+01:00, or Z) or give time_zone`)
  }
  return {
    dateTime: `${localText(p)}${p.offset ?? ""}`,
    ...(timeZone !== undefined ? { timeZone } : {})
  }
}

/**
 * The `start` and `end` of an event. Two dates make an all-day event (Google's end date is
 * exclusive; an end equal to the start is taken as that one day); two date-times a timed one.
 */
export const eventTimes = (
  startInput: string,
  endInput: string,
  timeZone: string | undefined
): { readonly start: EventDateTime; readonly end: EventDateTime } => {
  if (timeZone !== undefined) checkTimeZone(timeZone)
  const start = parse(startInput, "start")
  const end = parse(endInput, "end")
  if (start.kind !== end.kind) {
    throw new GcalError("start and end must both be dates (an all-day event) or both be date-times (a timed event)")
  }
  const a = epoch(start)
  const b = epoch(end)
  if (start.kind === "date" && a !== undefined && b !== undefined) {
    if (b < a) throw new GcalError("end is before start")
    if (b === a) return { start: eventTime(start, "start", undefined), end: { date: nextDay(end) } }
  }
  if (start.kind === "dateTime" && a !== undefined && b !== undefined && b <= a) {
    throw new GcalError("end must be after start")
  }
  return { start: eventTime(start, "start", timeZone), end: eventTime(end, "end", timeZone) }
}

/** One of `start`/`end` on its own (for a partial update). */
export const singleEventTime = (input: string, field: string, timeZone: string | undefined): EventDateTime => {
  if (timeZone !== undefined) checkTimeZone(timeZone)
  return eventTime(parse(input, field), field, timeZone)
}

/** The day before a `YYYY-MM-DD` (the last day of an all-day event whose end is exclusive). */
export const dayBefore = (date: string): string => {
  const m = DATE.exec(date)
  if (m === null) return date
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]) - 1))
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
}
