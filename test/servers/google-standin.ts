/**
 * A stand-in for the Google endpoints the Calendar server and its setup use, on 127.0.0.1
 * (port 0), speaking their real JSON:
 *
 * - Calendar API v3 under `/calendar/v3`: `GET /users/me/calendarList`, `GET|POST
 *   /calendars/{id}/events`, `GET|PATCH|DELETE /calendars/{id}/events/{eventId}`. Lists page with
 *   `maxResults`/`pageToken`/`nextPageToken` (the page size is capped by `eventsPageSize` /
 *   `calendarsPageSize`, so pagination happens with a handful of events); `events.list` filters
 *   on `timeMin`, `timeMax`, `q`, `updatedMin`, `showDeleted`, and refuses `orderBy=startTime`
 *   without `singleEvents=true`, a bound without a UTC offset, and an unknown parameter, as
 *   Google does. Errors are `{"error": {"code", "message", "errors": [{domain, reason, message}]}}`;
 *   a missing, unknown or expired bearer token is a 401.
 * - The OAuth token endpoint `POST /token` (`authorization_code` with PKCE S256 checked, and
 *   `refresh_token`): `{access_token, expires_in, scope, token_type}`, errors as
 *   `{"error": "invalid_grant", "error_description": …}`.
 * - The consent endpoint `GET /o/oauth2/v2/auth`: checks the query, then redirects (302) to the
 *   loopback `redirect_uri` with `code` and `state` (or `error=access_denied` when told to deny).
 *
 * Every request is recorded (method, path, query, parsed body, bearer token). Test hooks create
 * events "elsewhere" (as another device would), expire access tokens and revoke refresh tokens.
 */
import { createHash, randomBytes } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export const CALENDAR_SCOPE = "https://www.googleapis.com/auth/calendar"

export interface RecordedRequest {
  readonly method: string
  /** The decoded path, without the `/calendar/v3` prefix for API calls. */
  readonly path: string
  readonly api: "calendar" | "token" | "consent" | "other"
  readonly query: Readonly<Record<string, string>>
  /** JSON bodies parsed, form bodies as an object, otherwise undefined. */
  readonly body: unknown
  /** The bearer token sent, if any. */
  readonly bearer: string | undefined
  /** The status answered. */
  status: number
}

type Json = Record<string, unknown>

export interface StandInOptions {
  /** The largest `events.list` page, whatever `maxResults` asks (default 250). */
  readonly eventsPageSize?: number
  /** The largest `calendarList.list` page (default 250). */
  readonly calendarsPageSize?: number
  /** `expires_in` of the access tokens issued (default 3599). */
  readonly accessTokenSeconds?: number
}

export interface Client {
  readonly client_id: string
  readonly client_secret: string
}

/** The signed-in user. */
export const USER = "me@example.com"
/** A second calendar whose id needs escaping in a path. */
export const TEAM_CALENDAR = "team#work@group.calendar.google.com"

interface Calendar {
  readonly entry: Json
  readonly events: Map<string, Json>
}

const nowIso = (): string => new Date().toISOString()

const googleError = (code: number, message: string, reason: string, extra: Json = {}): Json => ({
  error: {
    code,
    message,
    errors: [{ domain: "global", reason, message, ...extra }],
    ...(code === 401 ? { status: "UNAUTHENTICATED" } : {})
  }
})

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i
const DATE = /^\d{4}-\d{2}-\d{2}$/

/** Milliseconds of an event's `{date}` / `{dateTime}` (a date at UTC midnight). */
const epochOf = (time: unknown): number => {
  if (typeof time !== "object" || time === null) return Number.NaN
  const t = time as { date?: string; dateTime?: string }
  if (t.dateTime !== undefined) return Date.parse(RFC3339.test(t.dateTime) ? t.dateTime : `${t.dateTime}Z`)
  if (t.date !== undefined) return Date.parse(`${t.date}T00:00:00Z`)
  return Number.NaN
}

const EVENTS_LIST_PARAMS = new Set([
  "timeMin",
  "timeMax",
  "q",
  "maxResults",
  "pageToken",
  "singleEvents",
  "orderBy",
  "timeZone",
  "updatedMin",
  "showDeleted",
  "syncToken",
  "iCalUID",
  "maxAttendees",
  "showHiddenInvitations",
  "eventTypes",
  "privateExtendedProperty",
  "sharedExtendedProperty"
])

export class GoogleStandIn {
  readonly requests: Array<RecordedRequest> = []
  readonly client: Client = {
    client_id: "standin-client.apps.googleusercontent.com",
    client_secret: "standin-client-secret"
  }
  /** When set, the consent page answers `error=access_denied`. */
  deny = false
  /** When set, the consent page grants this scope instead of the one asked. */
  grantScope: string | undefined

  private readonly calendars = new Map<string, Calendar>()
  private readonly accessTokens = new Map<string, number>()
  private readonly refreshTokens = new Set<string>()
  private readonly codes = new Map<
    string,
    { redirectUri: string; challenge: string; scope: string; clientId: string }
  >()
  private readonly eventsPageSize: number
  private readonly calendarsPageSize: number
  private readonly accessTokenSeconds: number
  private sequence = 0

  private constructor(
    private readonly server: http.Server,
    readonly origin: string,
    options: StandInOptions
  ) {
    this.eventsPageSize = options.eventsPageSize ?? 250
    this.calendarsPageSize = options.calendarsPageSize ?? 250
    this.accessTokenSeconds = options.accessTokenSeconds ?? 3599
    this.addCalendar({ id: USER, summary: USER, timeZone: "Europe/Paris", accessRole: "owner", primary: true })
    this.addCalendar({ id: TEAM_CALENDAR, summary: "Team", timeZone: "UTC", accessRole: "writer" })
  }

  static async start(options: StandInOptions = {}): Promise<GoogleStandIn> {
    const server = http.createServer()
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => resolve())
    })
    const standIn = new GoogleStandIn(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, options)
    server.on("request", (req, res) => void standIn.handle(req, res))
    return standIn
  }

  /** The GCAL_* variables pointing the server and the setup here. */
  get env(): Record<string, string> {
    return {
      GCAL_API_BASE: `${this.origin}/calendar/v3`,
      GCAL_TOKEN_URL: `${this.origin}/token`,
      GCAL_AUTH_URL: `${this.origin}/o/oauth2/v2/auth`
    }
  }

  close(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }

  // --- test hooks -------------------------------------------------------------------------------

  /** The recorded Calendar API requests. */
  calendarRequests(): Array<RecordedRequest> {
    return this.requests.filter((r) => r.api === "calendar")
  }

  tokenRequests(): Array<RecordedRequest> {
    return this.requests.filter((r) => r.api === "token")
  }

  addCalendar(entry: Json & { id: string }): void {
    this.calendars.set(entry.id, {
      entry: {
        kind: "calendar#calendarListEntry",
        etag: `"${Date.now()}"`,
        colorId: "1",
        backgroundColor: "#ac725e",
        foregroundColor: "#1d1d1d",
        selected: true,
        defaultReminders: [],
        ...entry
      },
      events: new Map()
    })
  }

  /** Issues a refresh token and an access token for the client, as a completed sign-in would. */
  grant(): { refresh_token: string; access_token: string; expires_in: number } {
    const refresh_token = `1//standin-refresh-${randomBytes(8).toString("hex")}`
    this.refreshTokens.add(refresh_token)
    return { refresh_token, access_token: this.issueAccessToken(), expires_in: this.accessTokenSeconds }
  }

  /** Every access token issued so far stops working (Google answers 401). */
  expireAccessTokens(): void {
    for (const token of this.accessTokens.keys()) this.accessTokens.set(token, 0)
  }

  revokeRefreshToken(token: string): void {
    this.refreshTokens.delete(token)
  }

  isValidAccessToken(token: string): boolean {
    return (this.accessTokens.get(token) ?? 0) > Date.now()
  }

  /** An event created by someone else (another device, an invitation). */
  addEvent(calendarId: string, fields: Json): Json {
    const calendar = this.calendar(calendarId)
    if (calendar === undefined) throw new Error(`no calendar ${calendarId}`)
    return this.insert(calendar, fields)
  }

  /** The stored events of a calendar (cancelled ones included). */
  events(calendarId: string): Array<Json> {
    return [...(this.calendar(calendarId)?.events.values() ?? [])]
  }

  event(calendarId: string, eventId: string): Json | undefined {
    return this.calendar(calendarId)?.events.get(eventId)
  }

  /** Changes an event as another device would (its `updated` moves, `created` does not). */
  touchEvent(calendarId: string, eventId: string, fields: Json): void {
    const event = this.event(calendarId, eventId)
    if (event === undefined) throw new Error(`no event ${eventId}`)
    Object.assign(event, fields, { updated: nowIso(), etag: `"${++this.sequence}"` })
  }

  // --- HTTP ---------------------------------------------------------------------------------------

  private calendar(id: string): Calendar | undefined {
    if (id === "primary") return this.calendars.get(USER)
    return this.calendars.get(id)
  }

  private issueAccessToken(): string {
    const token = `ya29.standin-${randomBytes(12).toString("hex")}`
    this.accessTokens.set(token, Date.now() + this.accessTokenSeconds * 1000)
    return token
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Array<Buffer> = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const raw = Buffer.concat(chunks).toString("utf8")
    const url = new URL(req.url ?? "/", this.origin)
    const contentType = req.headers["content-type"] ?? ""
    let body: unknown
    if (raw.length > 0) {
      if (contentType.startsWith("application/json")) {
        try {
          body = JSON.parse(raw)
        } catch {
          body = raw
        }
      } else if (contentType.startsWith("application/x-www-form-urlencoded")) {
        body = Object.fromEntries(new URLSearchParams(raw))
      } else {
        body = raw
      }
    }
    const authorization = req.headers.authorization
    const bearer = authorization?.startsWith("Bearer ") ? authorization.slice(7) : undefined
    const isApi = url.pathname.startsWith("/calendar/v3/")
    const record: RecordedRequest = {
      method: req.method ?? "GET",
      path: isApi ? decodeURIComponent(url.pathname.slice("/calendar/v3".length)) : url.pathname,
      api: isApi
        ? "calendar"
        : url.pathname === "/token"
        ? "token"
        : url.pathname === "/o/oauth2/v2/auth"
        ? "consent"
        : "other",
      query: Object.fromEntries(url.searchParams),
      body,
      bearer,
      status: 0
    }
    this.requests.push(record)
    const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      record.status = status
      if (payload === undefined) {
        res.writeHead(status, headers)
        res.end()
        return
      }
      res.writeHead(status, { "content-type": "application/json; charset=UTF-8", ...headers })
      res.end(JSON.stringify(payload, null, 1))
    }
    try {
      if (record.api === "token") return this.token(record, send)
      if (record.api === "consent") return this.consent(record, res)
      if (!isApi) return send(404, googleError(404, "Not Found", "notFound"))
      return this.api(record, url.pathname.slice("/calendar/v3".length), send)
    } catch (error) {
      send(500, googleError(500, `stand-in failure: ${(error as Error).message}`, "backendError"))
    }
  }

  private token(record: RecordedRequest, send: (status: number, payload: unknown) => void): void {
    if (record.method !== "POST") return send(405, { error: "invalid_request", error_description: "POST only" })
    const form = (typeof record.body === "object" && record.body !== null ? record.body : {}) as Record<string, string>
    if (form.client_id !== this.client.client_id || form.client_secret !== this.client.client_secret) {
      return send(401, { error: "invalid_client", error_description: "The OAuth client was not found." })
    }
    if (form.grant_type === "refresh_token") {
      if (form.refresh_token === undefined || !this.refreshTokens.has(form.refresh_token)) {
        return send(400, { error: "invalid_grant", error_description: "Token has been expired or revoked." })
      }
      return send(200, {
        access_token: this.issueAccessToken(),
        expires_in: this.accessTokenSeconds,
        scope: CALENDAR_SCOPE,
        token_type: "Bearer"
      })
    }
    if (form.grant_type === "authorization_code") {
      const code = form.code === undefined ? undefined : this.codes.get(form.code)
      if (code === undefined) return send(400, { error: "invalid_grant", error_description: "Malformed auth code." })
      this.codes.delete(form.code!)
      if (form.redirect_uri !== code.redirectUri) {
        return send(400, { error: "redirect_uri_mismatch", error_description: "Bad Request" })
      }
      if (form.code_verifier === undefined) {
        return send(400, { error: "invalid_request", error_description: "code_verifier or verifier is not needed." })
      }
      const challenge = createHash("sha256").update(form.code_verifier, "ascii").digest("base64url")
      if (challenge !== code.challenge) {
        return send(400, { error: "invalid_grant", error_description: "Invalid code verifier." })
      }
      const refresh_token = `1//standin-refresh-${randomBytes(8).toString("hex")}`
      this.refreshTokens.add(refresh_token)
      return send(200, {
        access_token: this.issueAccessToken(),
        expires_in: this.accessTokenSeconds,
        refresh_token,
        scope: code.scope,
        token_type: "Bearer"
      })
    }
    return send(400, {
      error: "unsupported_grant_type",
      error_description: `Invalid grant_type: ${form.grant_type ?? ""}`
    })
  }

  private consent(record: RecordedRequest, res: http.ServerResponse): void {
    const q = record.query
    const refuse = (why: string) => {
      record.status = 400
      res.writeHead(400, { "content-type": "text/html; charset=utf-8" })
      res.end(`<h1>Error 400: invalid_request</h1><p>${why}</p>`)
    }
    if (q.client_id !== this.client.client_id) return refuse("The OAuth client was not found.")
    if (q.response_type !== "code") return refuse("response_type must be code")
    let redirect: URL
    try {
      redirect = new URL(q.redirect_uri ?? "")
    } catch {
      return refuse("redirect_uri is not a URL")
    }
    if (redirect.protocol !== "http:" || (redirect.hostname !== "127.0.0.1" && redirect.hostname !== "localhost")) {
      return refuse("a desktop client redirects to a loopback address")
    }
    if (q.code_challenge === undefined || q.code_challenge_method !== "S256") {
      return refuse("PKCE with S256 is required")
    }
    if (!(q.scope ?? "").split(" ").includes(CALENDAR_SCOPE)) return refuse("the calendar scope is not asked")
    if (q.state === undefined) return refuse("state is missing")
    const target = new URL(redirect)
    target.searchParams.set("state", q.state)
    if (this.deny) {
      target.searchParams.set("error", "access_denied")
    } else {
      const code = `4/standin-${randomBytes(12).toString("hex")}`
      const scope = this.grantScope ?? q.scope!
      this.codes.set(code, { redirectUri: q.redirect_uri!, challenge: q.code_challenge, scope, clientId: q.client_id })
      target.searchParams.set("code", code)
      target.searchParams.set("scope", scope)
    }
    record.status = 302
    res.writeHead(302, { location: target.toString() })
    res.end()
  }

  private api(
    record: RecordedRequest,
    rawPath: string,
    send: (status: number, payload: unknown, headers?: Record<string, string>) => void
  ): void {
    if (record.bearer === undefined) {
      return send(
        401,
        googleError(
          401,
          "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
          "required",
          { location: "Authorization", locationType: "header" }
        ),
        { "www-authenticate": "Bearer realm=\"https://accounts.google.com/\"" }
      )
    }
    if (!this.isValidAccessToken(record.bearer)) {
      return send(
        401,
        googleError(
          401,
          "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
          "authError",
          { location: "Authorization", locationType: "header" }
        ),
        { "www-authenticate": "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\"" }
      )
    }
    const segments = rawPath.split("/").filter((s) => s.length > 0).map(decodeURIComponent)
    const notFound = () => send(404, googleError(404, "Not Found", "notFound"))
    if (segments.length === 3 && segments[0] === "users" && segments[1] === "me" && segments[2] === "calendarList") {
      if (record.method !== "GET") return send(405, googleError(405, "Method Not Allowed", "httpMethodNotAllowed"))
      const entries = [...this.calendars.values()].map((c) => c.entry)
      const page = this.page(entries, record.query, this.calendarsPageSize)
      if (typeof page === "string") return send(400, googleError(400, page, "invalid"))
      return send(200, {
        kind: "calendar#calendarList",
        etag: `"${this.sequence}"`,
        ...(page.next !== undefined ? { nextPageToken: page.next } : { nextSyncToken: "standin-sync" }),
        items: page.items
      })
    }
    if (segments[0] !== "calendars" || segments[1] === undefined || segments[2] !== "events" || segments.length > 4) {
      return notFound()
    }
    const calendar = this.calendar(segments[1])
    if (calendar === undefined) return notFound()
    const eventId = segments[3]
    if (eventId === undefined) {
      if (record.method === "GET") return this.listEvents(calendar, record, send)
      if (record.method === "POST") {
        const problem = this.checkEvent(record.body, true)
        if (problem !== undefined) return send(400, googleError(400, problem, "invalid"))
        return send(200, this.insert(calendar, record.body as Json))
      }
      return send(405, googleError(405, "Method Not Allowed", "httpMethodNotAllowed"))
    }
    const event = calendar.events.get(eventId)
    if (event === undefined) return notFound()
    switch (record.method) {
      case "GET":
        return send(200, event)
      case "PATCH": {
        const problem = this.checkEvent({ ...event, ...(record.body as Json) }, false)
        if (problem !== undefined) return send(400, googleError(400, problem, "invalid"))
        Object.assign(event, record.body as Json, { updated: nowIso(), etag: `"${++this.sequence}"` })
        event.sequence = (event.sequence as number) + 1
        return send(200, event)
      }
      case "DELETE":
        if (event.status === "cancelled") return send(410, googleError(410, "Resource has been deleted", "deleted"))
        Object.assign(event, { status: "cancelled", updated: nowIso() })
        return send(204, undefined)
      default:
        return send(405, googleError(405, "Method Not Allowed", "httpMethodNotAllowed"))
    }
  }

  /** What Google would refuse in an event body, or undefined. */
  private checkEvent(body: unknown, creating: boolean): string | undefined {
    if (typeof body !== "object" || body === null) return "Bad Request"
    const event = body as Json
    for (const key of ["start", "end"] as const) {
      const time = event[key] as { date?: unknown; dateTime?: unknown; timeZone?: unknown } | undefined
      if (time === undefined) return creating ? `Missing ${key} time.` : "Bad Request"
      if (time.date !== undefined) {
        if (typeof time.date !== "string" || !DATE.test(time.date)) return `Invalid ${key} date.`
      } else if (typeof time.dateTime === "string") {
        const hasOffset = RFC3339.test(time.dateTime)
        if (!hasOffset && !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$/.test(time.dateTime)) {
          return `Invalid ${key} time.`
        }
        if (!hasOffset && typeof time.timeZone !== "string") return `Missing time zone definition for ${key} time.`
      } else {
        return `Missing ${key} time.`
      }
    }
    const start = event.start as { date?: string }
    const end = event.end as { date?: string }
    if ((start.date === undefined) !== (end.date === undefined)) {
      return "Start and end times must either both be date or both be dateTime."
    }
    if (epochOf(event.end) <= epochOf(event.start)) return "The specified time range is empty."
    return undefined
  }

  private insert(calendar: Calendar, fields: Json): Json {
    const id = randomBytes(13).toString("hex")
    const now = nowIso()
    const calendarId = calendar.entry.id as string
    const attendees = Array.isArray(fields.attendees)
      ? (fields.attendees as Array<Json>).map((a) => ({
        responseStatus: "needsAction",
        ...(a.email === USER ? { self: true } : {}),
        ...a
      }))
      : undefined
    const event: Json = {
      kind: "calendar#event",
      etag: `"${++this.sequence}"`,
      id,
      status: "confirmed",
      htmlLink: `https://www.google.com/calendar/event?eid=${Buffer.from(`${id} ${calendarId}`).toString("base64url")}`,
      created: now,
      updated: now,
      creator: { email: USER, self: true },
      organizer: calendar.entry.primary === true
        ? { email: USER, self: true }
        : { email: calendarId, displayName: calendar.entry.summary, self: true },
      iCalUID: `${id}@google.com`,
      sequence: 0,
      reminders: { useDefault: true },
      eventType: "default",
      ...fields,
      ...(attendees !== undefined ? { attendees } : {})
    }
    calendar.events.set(id, event)
    return event
  }

  private page<T>(
    items: ReadonlyArray<T>,
    query: Readonly<Record<string, string>>,
    cap: number
  ): { items: Array<T>; next: string | undefined } | string {
    const max = query.maxResults !== undefined ? Number(query.maxResults) : 250
    if (!Number.isInteger(max) || max < 1) return "Invalid value for maxResults"
    let offset = 0
    if (query.pageToken !== undefined) {
      const m = /^standin-page-(\d+)$/.exec(query.pageToken)
      if (m === null) return "Invalid page token value."
      offset = Number(m[1])
    }
    const size = Math.min(max, cap)
    const slice = items.slice(offset, offset + size)
    const next = offset + size < items.length ? `standin-page-${offset + size}` : undefined
    return { items: slice, next }
  }

  private listEvents(
    calendar: Calendar,
    record: RecordedRequest,
    send: (status: number, payload: unknown) => void
  ): void {
    const q = record.query
    const bad = (message: string) => send(400, googleError(400, message, "badRequest"))
    for (const key of Object.keys(q)) if (!EVENTS_LIST_PARAMS.has(key)) return bad(`Unknown parameter: ${key}`)
    for (const key of ["timeMin", "timeMax", "updatedMin"] as const) {
      if (q[key] !== undefined && !RFC3339.test(q[key])) return bad("Bad Request")
    }
    if (q.orderBy === "startTime" && q.singleEvents !== "true") {
      return bad("The requested ordering is not available for the particular query.")
    }
    const timeMin = q.timeMin !== undefined ? Date.parse(q.timeMin) : undefined
    const timeMax = q.timeMax !== undefined ? Date.parse(q.timeMax) : undefined
    const updatedMin = q.updatedMin !== undefined ? Date.parse(q.updatedMin) : undefined
    const text = q.q?.toLowerCase()
    let events = [...calendar.events.values()].filter((e) => {
      // Deleted events show with showDeleted, and always when updatedMin is given.
      if (e.status === "cancelled" && q.showDeleted !== "true" && updatedMin === undefined) return false
      if (timeMin !== undefined && !(epochOf(e.end) > timeMin)) return false
      if (timeMax !== undefined && !(epochOf(e.start) < timeMax)) return false
      if (updatedMin !== undefined && Date.parse(e.updated as string) < updatedMin) return false
      if (text !== undefined) {
        const haystack = [
          e.summary,
          e.description,
          e.location,
          ...((e.attendees as Array<Json> | undefined) ?? []).map((a) => a.email)
        ]
          .filter((s): s is string => typeof s === "string")
          .join("\n")
          .toLowerCase()
        if (!haystack.includes(text)) return false
      }
      return true
    })
    if (q.orderBy === "startTime") events = events.sort((a, b) => epochOf(a.start) - epochOf(b.start))
    if (q.orderBy === "updated") {
      events = events.sort((a, b) => Date.parse(a.updated as string) - Date.parse(b.updated as string))
    }
    const page = this.page(events, q, this.eventsPageSize)
    if (typeof page === "string") return bad(page)
    send(200, {
      kind: "calendar#events",
      etag: `"${this.sequence}"`,
      summary: calendar.entry.summary,
      description: "",
      updated: nowIso(),
      timeZone: q.timeZone ?? calendar.entry.timeZone,
      accessRole: calendar.entry.accessRole,
      defaultReminders: [],
      ...(page.next !== undefined ? { nextPageToken: page.next } : { nextSyncToken: "standin-sync" }),
      items: page.items
    })
  }
}
