/**
 * A small client of the Google Calendar API v3 REST interface over global `fetch`: bearer
 * tokens from the `TokenProvider` (one refresh and retry on 401), Google's error JSON turned
 * into a readable message, and `nextPageToken` pagination.
 */
import { SETUP_COMMAND } from "./config.js"
import { describeFetchError, GcalError, type TokenProvider } from "./credentials.js"

/** A JSON object as Google sends it. */
export type Json = Record<string, unknown>

/** `{start|end}` of an event: `{date}` for all-day, `{dateTime, timeZone?}` for timed. */
export interface EventDateTime {
  readonly date?: string
  readonly dateTime?: string
  readonly timeZone?: string
}

export interface Attendee {
  readonly email?: string
  readonly displayName?: string
  readonly responseStatus?: string
  readonly self?: boolean
  readonly organizer?: boolean
  readonly optional?: boolean
  readonly [key: string]: unknown
}

/** The fields of an event resource this server reads (Google sends more; they are kept). */
export interface CalendarEvent {
  readonly id: string
  readonly status?: string
  readonly htmlLink?: string
  readonly created?: string
  readonly updated?: string
  readonly summary?: string
  readonly description?: string
  readonly location?: string
  readonly creator?: { readonly email?: string; readonly displayName?: string; readonly self?: boolean }
  readonly organizer?: { readonly email?: string; readonly displayName?: string; readonly self?: boolean }
  readonly start?: EventDateTime
  readonly end?: EventDateTime
  readonly recurrence?: ReadonlyArray<string>
  readonly recurringEventId?: string
  readonly attendees?: ReadonlyArray<Attendee>
  readonly hangoutLink?: string
  readonly [key: string]: unknown
}

export interface CalendarListEntry {
  readonly id: string
  readonly summary?: string
  readonly summaryOverride?: string
  readonly description?: string
  readonly timeZone?: string
  readonly accessRole?: string
  readonly primary?: boolean
  readonly [key: string]: unknown
}

/** A page of `events.list`, with the calendar-level fields Google adds. */
export interface EventsPage {
  readonly summary?: string
  readonly timeZone?: string
  readonly nextPageToken?: string
  readonly items?: ReadonlyArray<CalendarEvent>
}

/** Google answered with an error status. */
export class ApiError extends GcalError {
  constructor(
    readonly status: number,
    readonly reason: string | undefined,
    message: string
  ) {
    super(message)
  }
}

type Query = Readonly<Record<string, string | number | boolean | undefined>>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** The most pages followed for one listing (a bound against a server that never stops paging). */
const MAX_PAGES = 50

/** Google's largest page for `events.list` is 2500; asking for 250 at a time keeps answers small. */
export const PAGE_SIZE = 250

export class CalendarApi {
  constructor(
    private readonly options: {
      readonly apiBase: string
      readonly tokens: TokenProvider
      readonly httpTimeoutSeconds: number
    }
  ) {}

  /** One request, with the access token; on 401 the token is refreshed once and the request repeated. */
  async request<T>(
    method: string,
    path: string,
    options: { readonly query?: Query; readonly body?: unknown } = {}
  ): Promise<T> {
    const url = new URL(this.options.apiBase + path)
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value))
    }
    let token = await this.options.tokens.accessToken()
    let response = await this.send(method, url, token, options.body)
    if (response.status === 401) {
      await response.body?.cancel()
      token = await this.options.tokens.refresh("Google answered 401", token)
      response = await this.send(method, url, token, options.body)
      if (response.status === 401) {
        const error = await this.error(method, path, response)
        throw new GcalError(
          `${error.message} even with a freshly refreshed access token. Run the setup again: ${SETUP_COMMAND}`
        )
      }
    }
    if (!response.ok) throw await this.error(method, path, response)
    if (response.status === 204) return undefined as T
    const text = await response.text()
    if (text.length === 0) return undefined as T
    try {
      return JSON.parse(text) as T
    } catch {
      throw new GcalError(`Google Calendar answered ${method} ${path} with something that is not JSON`)
    }
  }

  private async send(method: string, url: URL, token: string, body: unknown): Promise<Response> {
    try {
      return await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: "application/json",
          ...(body !== undefined ? { "content-type": "application/json" } : {})
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.options.httpTimeoutSeconds * 1000)
      })
    } catch (error) {
      throw new GcalError(`cannot reach Google Calendar (${method} ${url.pathname}): ${describeFetchError(error)}`)
    }
  }

  /** Google's `{"error": {"code", "message", "errors": [{reason, …}]}}` as one sentence. */
  private async error(method: string, path: string, response: Response): Promise<ApiError> {
    let message = response.statusText
    let reason: string | undefined
    try {
      const body: unknown = JSON.parse(await response.text())
      if (isObject(body) && isObject(body.error)) {
        if (typeof body.error.message === "string") message = body.error.message
        const first = Array.isArray(body.error.errors) ? body.error.errors[0] : undefined
        if (isObject(first) && typeof first.reason === "string") reason = first.reason
      }
    } catch {
      // Not JSON: the status line says enough.
    }
    const hint = response.status === 404
      ? " (check the calendar_id and event_id)"
      : response.status === 403 && reason === "insufficientPermissions"
      ? ` (the stored credentials lack the calendar scope; run the setup again: ${SETUP_COMMAND})`
      : ""
    return new ApiError(
      response.status,
      reason,
      `Google Calendar answered ${response.status} to ${method} ${path}: ${message}${
        reason !== undefined ? ` [${reason}]` : ""
      }${hint}`
    )
  }

  /** Every calendar in the user's calendar list (all pages). */
  async listCalendars(): Promise<Array<CalendarListEntry>> {
    const calendars: Array<CalendarListEntry> = []
    let pageToken: string | undefined
    for (let page = 0; page < MAX_PAGES; page++) {
      const answer = await this.request<{ items?: Array<CalendarListEntry>; nextPageToken?: string }>(
        "GET",
        "/users/me/calendarList",
        { query: { maxResults: PAGE_SIZE, pageToken } }
      )
      calendars.push(...(answer.items ?? []))
      pageToken = answer.nextPageToken
      if (pageToken === undefined) break
    }
    return calendars
  }

  /**
   * Events of a calendar, following `nextPageToken` until `maxResults` are collected. `more` is
   * true when Google had further pages.
   */
  async listEvents(
    calendarId: string,
    query: Query,
    maxResults: number
  ): Promise<{ readonly events: Array<CalendarEvent>; readonly more: boolean; readonly calendar: EventsPage }> {
    const events: Array<CalendarEvent> = []
    let pageToken: string | undefined
    let first: EventsPage | undefined
    for (let page = 0; page < MAX_PAGES && events.length < maxResults; page++) {
      const answer = await this.request<EventsPage>("GET", `${calendarPath(calendarId)}/events`, {
        query: { ...query, maxResults: Math.min(PAGE_SIZE, maxResults - events.length), pageToken }
      })
      first ??= answer
      events.push(...(answer.items ?? []))
      pageToken = answer.nextPageToken
      if (pageToken === undefined) break
    }
    return {
      events: events.slice(0, maxResults),
      more: pageToken !== undefined || events.length > maxResults,
      calendar: first ?? {}
    }
  }

  getEvent(calendarId: string, eventId: string): Promise<CalendarEvent> {
    return this.request("GET", eventPath(calendarId, eventId))
  }

  insertEvent(calendarId: string, event: Json): Promise<CalendarEvent> {
    return this.request("POST", `${calendarPath(calendarId)}/events`, { body: event })
  }

  patchEvent(calendarId: string, eventId: string, patch: Json): Promise<CalendarEvent> {
    return this.request("PATCH", eventPath(calendarId, eventId), { body: patch })
  }

  deleteEvent(calendarId: string, eventId: string): Promise<void> {
    return this.request("DELETE", eventPath(calendarId, eventId))
  }
}

/** `/calendars/{id}` with the id escaped (ids hold `@` and `#`). */
export const calendarPath = (calendarId: string): string => `/calendars/${encodeURIComponent(calendarId)}`

export const eventPath = (calendarId: string, eventId: string): string =>
  `${calendarPath(calendarId)}/events/${encodeURIComponent(eventId)}`
