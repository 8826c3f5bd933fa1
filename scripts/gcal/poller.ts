/**
 * The new-event poller: every `GCAL_POLL_SECONDS` it asks each watched calendar for the events
 * changed since its last poll (`updatedMin`, minus an overlap against clock skew) and pushes
 * `event/new_calendar_event` for each one *created* since then that it has not announced yet.
 *
 * What it has seen lives in a state file beside the credentials (`gcal_poll_state.json`), so a
 * restart does not announce old events again. The first poll of a calendar only records a
 * baseline and announces nothing.
 */
import { readJsonIfExists, writeJsonAtomic } from "../lib/atomic-write.js"
import { ApiError, type CalendarApi, type CalendarEvent } from "./api.js"
import { log } from "./config.js"

/** The method of the pushed notification. */
export const NEW_EVENT_METHOD = "event/new_calendar_event"

/** The longest description carried by a notification. */
const DESCRIPTION_LIMIT = 2000

/** The most events one poll of one calendar reads. */
const POLL_LIMIT = 2500

interface CalendarState {
  /** When the last successful poll started (our clock), ISO 8601. */
  checkpoint: string
  /** Event id → its `created` time, for events created within the overlap window. */
  seen: Record<string, string>
}

interface PollState {
  version: 1
  calendars: Record<string, CalendarState>
}

/** The params of `event/new_calendar_event`. */
export interface NewEventParams {
  readonly id: string
  readonly calendar: string
  readonly calendar_name?: string | undefined
  readonly summary: string
  readonly start: string | undefined
  readonly end: string | undefined
  readonly all_day: boolean
  readonly time_zone?: string | undefined
  readonly location?: string | undefined
  readonly description?: string | undefined
  readonly organizer?: string | undefined
  readonly creator?: string | undefined
  readonly attendees?: ReadonlyArray<string> | undefined
  readonly recurrence?: ReadonlyArray<string> | undefined
  readonly status: string
  readonly created: string | undefined
  readonly htmlLink: string | undefined
}

export const notificationParams = (
  calendar: string,
  calendarName: string | undefined,
  event: CalendarEvent
): NewEventParams => {
  const allDay = event.start?.date !== undefined
  const emails = (event.attendees ?? []).map((a) => a.email).filter((e): e is string => e !== undefined)
  const description = event.description !== undefined && event.description.length > DESCRIPTION_LIMIT
    ? `${event.description.slice(0, DESCRIPTION_LIMIT)}…`
    : event.description
  return {
    id: event.id,
    calendar,
    calendar_name: calendarName,
    summary: event.summary ?? "(no title)",
    start: event.start?.dateTime ?? event.start?.date,
    end: event.end?.dateTime ?? event.end?.date,
    all_day: allDay,
    time_zone: event.start?.timeZone,
    location: event.location,
    description,
    organizer: event.organizer?.email,
    creator: event.creator?.email,
    attendees: emails.length > 0 ? emails : undefined,
    recurrence: event.recurrence !== undefined && event.recurrence.length > 0 ? event.recurrence : undefined,
    status: event.status ?? "confirmed",
    created: event.created,
    htmlLink: event.htmlLink
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The state file, or an empty state when it is missing or unreadable (then every calendar re-baselines). */
const loadState = async (file: string): Promise<PollState> => {
  const empty: PollState = { version: 1, calendars: {} }
  let raw: unknown
  try {
    raw = await readJsonIfExists(file)
  } catch (error) {
    log(`poller: cannot read ${file} (${(error as Error).message}); starting from a new baseline`)
    return empty
  }
  if (raw === undefined) return empty
  if (!isObject(raw) || raw.version !== 1 || !isObject(raw.calendars)) {
    log(`poller: ${file} is not a poll state file; starting from a new baseline`)
    return empty
  }
  const calendars: Record<string, CalendarState> = {}
  for (const [id, entry] of Object.entries(raw.calendars)) {
    if (!isObject(entry) || typeof entry.checkpoint !== "string" || !Number.isFinite(Date.parse(entry.checkpoint))) {
      continue
    }
    const seen: Record<string, string> = {}
    if (isObject(entry.seen)) {
      for (const [eventId, created] of Object.entries(entry.seen)) {
        if (typeof created === "string") seen[eventId] = created
      }
    }
    calendars[id] = { checkpoint: entry.checkpoint, seen }
  }
  return { version: 1, calendars }
}

export interface PollerOptions {
  readonly api: CalendarApi
  readonly calendars: ReadonlyArray<string>
  readonly stateFile: string
  readonly intervalSeconds: number
  readonly overlapSeconds: number
  readonly notify: (method: string, params: NewEventParams) => Promise<void>
  readonly now?: () => number
}

export class Poller {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private stopped = false
  private lastError: string | undefined

  constructor(private readonly options: PollerOptions) {}

  private now(): number {
    return this.options.now?.() ?? Date.now()
  }

  /** Polls now, then every interval (each wait starts when the previous poll ends). */
  start(): void {
    if (this.stopped || this.running !== undefined || this.timer !== undefined) return
    log(`poller: watching ${this.options.calendars.join(", ")} every ${this.options.intervalSeconds} s`)
    this.tick()
  }

  private tick(): void {
    this.timer = undefined
    if (this.stopped) return
    this.running = this.pollOnce().finally(() => {
      this.running = undefined
      if (this.stopped) return
      this.timer = setTimeout(() => this.tick(), this.options.intervalSeconds * 1000)
      this.timer.unref()
    })
  }

  /** Stops polling and waits for a poll under way. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    await this.running
  }

  /** One poll of every watched calendar; failures are logged (once while they repeat), never thrown. */
  async pollOnce(): Promise<void> {
    try {
      const state = await loadState(this.options.stateFile)
      for (const calendar of this.options.calendars) {
        if (this.stopped) break
        const entry = state.calendars[calendar]
        state.calendars[calendar] = entry === undefined
          ? await this.baseline(calendar)
          : await this.poll(calendar, entry)
        // Saved after each calendar: what was announced is never announced again.
        await writeJsonAtomic(this.options.stateFile, state)
      }
      if (this.lastError !== undefined) log("poller: polling works again")
      this.lastError = undefined
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      if (message !== this.lastError) log(`poller: poll failed: ${message}`)
      this.lastError = message
    }
  }

  private async changedSince(calendar: string, since: number) {
    return this.options.api.listEvents(
      calendar,
      { updatedMin: new Date(since).toISOString(), showDeleted: false, singleEvents: false },
      POLL_LIMIT
    )
  }

  /** Remembers what exists now, announcing nothing. */
  private async baseline(calendar: string): Promise<CalendarState> {
    const now = this.now()
    const overlap = this.options.overlapSeconds * 1000
    const { events } = await this.changedSince(calendar, now - overlap)
    const seen: Record<string, string> = {}
    for (const event of events) seen[event.id] = event.created ?? new Date(now).toISOString()
    log(`poller: ${calendar}: baseline taken; events created before now are not announced`)
    return { checkpoint: new Date(now).toISOString(), seen }
  }

  private async poll(calendar: string, entry: CalendarState): Promise<CalendarState> {
    const now = this.now()
    const overlap = this.options.overlapSeconds * 1000
    const since = Date.parse(entry.checkpoint) - overlap
    let listing: Awaited<ReturnType<Poller["changedSince"]>>
    try {
      listing = await this.changedSince(calendar, since)
    } catch (error) {
      // Google refuses an updatedMin too far in the past (after a long downtime): start afresh.
      if (error instanceof ApiError && error.status === 410) {
        log(
          `poller: ${calendar}: the last poll is too long ago for Google (${
            error.reason ?? "410"
          }); taking a new baseline`
        )
        return this.baseline(calendar)
      }
      throw error
    }
    const seen = { ...entry.seen }
    const created = (event: CalendarEvent): number => (event.created !== undefined ? Date.parse(event.created) : now)
    const fresh = listing.events
      .filter((e) => e.status !== "cancelled" && e.recurringEventId === undefined)
      .filter((e) => seen[e.id] === undefined && created(e) >= since)
      .sort((a, b) => created(a) - created(b))
    for (const event of fresh) {
      await this.options.notify(NEW_EVENT_METHOD, notificationParams(calendar, listing.calendar.summary, event))
      seen[event.id] = event.created ?? new Date(now).toISOString()
      log(`poller: ${calendar}: announced new event ${event.id}`)
    }
    // Forget events too old to pass the next poll's `created` filter.
    const nextSince = now - overlap
    for (const [id, when] of Object.entries(seen)) {
      const t = Date.parse(when)
      if (Number.isFinite(t) && t < nextSince - overlap) delete seen[id]
    }
    return { checkpoint: new Date(now).toISOString(), seen }
  }
}
