/**
 * The seven Calendar tools on an SDK `McpServer`. Each answers readable text; a failure is a
 * text starting `Error: ` with `isError: true`.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { z } from "zod"
import { type Attendee, type CalendarApi, type Json, PAGE_SIZE } from "./api.js"
import { log } from "./config.js"
import { GcalError } from "./credentials.js"
import { formatCalendar, formatEvent } from "./format.js"
import { checkTimeZone, eventTimes, instantFor, singleEventTime } from "./time.js"

/** The default and largest `max_results` of `list_events`. */
export const DEFAULT_MAX_RESULTS = 25
export const MAX_RESULTS = PAGE_SIZE

const RESPONSES = ["accepted", "declined", "tentative", "needsAction"] as const

const calendarId = z.string().min(1).optional().describe("Calendar id (default \"primary\", the user's own calendar)")
const eventId = z.string().min(1).describe("The event id (from list_events)")
const timeZone = z.string().min(1).optional()

const text = (value: string): CallToolResult => ({ content: [{ type: "text", text: value }] })

/** Runs a tool body; any failure becomes an `Error: …` text with `isError`. */
const answer = async (tool: string, body: () => Promise<string>): Promise<CallToolResult> => {
  try {
    return text(await body())
  } catch (error) {
    if (!(error instanceof GcalError)) {
      log(`${tool} failed unexpectedly: ${error instanceof Error ? error.stack ?? error.message : String(error)}`)
    }
    const message = error instanceof Error ? error.message : String(error)
    return { content: [{ type: "text", text: `Error: ${message}` }], isError: true }
  }
}

const attendeesOf = (emails: ReadonlyArray<string>): Array<{ email: string }> =>
  emails.map((email) => ({ email: email.trim() }))

export const registerTools = (server: McpServer, api: CalendarApi, now: () => Date = () => new Date()): void => {
  server.registerTool(
    "list_calendars",
    {
      title: "List calendars",
      description:
        "Lists every calendar in the user's calendar list: name, id, whether it is the primary one, access role and time zone.",
      annotations: { readOnlyHint: true, openWorldHint: true }
    },
    () =>
      answer("list_calendars", async () => {
        const calendars = await api.listCalendars()
        if (calendars.length === 0) return "No calendars."
        return `${calendars.length} calendar${calendars.length === 1 ? "" : "s"}:\n${
          calendars.map(formatCalendar).join("\n")
        }`
      })
  )

  server.registerTool(
    "list_events",
    {
      title: "List events",
      description:
        "Lists events of a calendar in start-time order, recurring events expanded into their occurrences. " +
        "Times are dates (2025-01-31) or RFC 3339 date-times (2025-01-31T09:00:00+01:00); a date or a time without an offset " +
        "is read in time_zone (UTC when none is given).",
      inputSchema: {
        calendar_id: calendarId,
        start_time: z.string().min(1).optional().describe("Only events ending after this (default: now)"),
        end_time: z.string().min(1).optional().describe("Only events starting before this"),
        max_results: z.number().int().min(1).max(MAX_RESULTS).optional().describe(
          `At most this many events (default ${DEFAULT_MAX_RESULTS}, at most ${MAX_RESULTS})`
        ),
        full_text: z.string().min(1).optional().describe(
          "Only events matching this text (title, description, location, attendees)"
        ),
        time_zone: timeZone.describe(
          "IANA time zone for the answer's times and for bounds without an offset (default: the calendar's)"
        )
      },
      annotations: { readOnlyHint: true, openWorldHint: true }
    },
    (args) =>
      answer("list_events", async () => {
        const id = args.calendar_id ?? "primary"
        const zone = args.time_zone !== undefined ? checkTimeZone(args.time_zone) : undefined
        const timeMin = args.start_time !== undefined
          ? instantFor(args.start_time, "start_time", zone)
          : now().toISOString()
        const timeMax = args.end_time !== undefined ? instantFor(args.end_time, "end_time", zone) : undefined
        const max = args.max_results ?? DEFAULT_MAX_RESULTS
        const { events, more, calendar } = await api.listEvents(
          id,
          { timeMin, timeMax, q: args.full_text, timeZone: zone, singleEvents: true, orderBy: "startTime" },
          max
        )
        const name = calendar.summary !== undefined && calendar.summary !== id ? `${calendar.summary} (${id})` : id
        const range = `from ${timeMin}${timeMax !== undefined ? ` to ${timeMax}` : ""}`
        const matching = args.full_text !== undefined ? ` matching ${JSON.stringify(args.full_text)}` : ""
        if (events.length === 0) return `No events in ${name} ${range}${matching}.`
        const header = `${events.length} event${events.length === 1 ? "" : "s"} in ${name} ${range}${matching}:`
        const footer = more
          ? `\n\nMore events match: raise max_results (at most ${MAX_RESULTS}) or narrow the time range.`
          : ""
        return `${header}\n\n${events.map(formatEvent).join("\n\n")}${footer}`
      })
  )

  server.registerTool(
    "get_event",
    {
      title: "Get an event",
      description: "Shows one event by its id.",
      inputSchema: { event_id: eventId, calendar_id: calendarId },
      annotations: { readOnlyHint: true, openWorldHint: true }
    },
    (args) =>
      answer("get_event", async () => formatEvent(await api.getEvent(args.calendar_id ?? "primary", args.event_id)))
  )

  server.registerTool(
    "create_event",
    {
      title: "Create an event",
      description:
        "Creates an event. Two dates (2025-01-31) make an all-day event — end is the day after the last day, or equal to start for one day; " +
        "two RFC 3339 date-times make a timed event (without an offset they need time_zone). Invitations are not e-mailed.",
      inputSchema: {
        summary: z.string().min(1).describe("The title"),
        start: z.string().min(1).describe("Start: a date or a date-time"),
        end: z.string().min(1).describe("End: a date or a date-time, of the same kind as start"),
        description: z.string().optional(),
        location: z.string().optional(),
        attendees: z.array(z.string().min(3)).optional().describe("E-mail addresses of the guests"),
        recurrence: z.array(z.string().min(1)).optional().describe(
          "RFC 5545 lines, e.g. [\"RRULE:FREQ=WEEKLY;COUNT=4\"] (timed recurring events need time_zone)"
        ),
        time_zone: timeZone.describe("IANA time zone of start and end (e.g. Europe/Paris)"),
        calendar_id: calendarId
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }
    },
    (args) =>
      answer("create_event", async () => {
        const { start, end } = eventTimes(args.start, args.end, args.time_zone)
        if (
          args.recurrence !== undefined && args.recurrence.length > 0 && start.dateTime !== undefined &&
          args.time_zone === undefined
        ) {
          throw new GcalError("a recurring timed event needs time_zone (Google expands the rule in that zone)")
        }
        const body: Json = { summary: args.summary, start, end }
        if (args.description !== undefined) body.description = args.description
        if (args.location !== undefined) body.location = args.location
        if (args.attendees !== undefined) body.attendees = attendeesOf(args.attendees)
        if (args.recurrence !== undefined) body.recurrence = args.recurrence
        const created = await api.insertEvent(args.calendar_id ?? "primary", body)
        return `Created event:\n${formatEvent(created)}`
      })
  )

  server.registerTool(
    "update_event",
    {
      title: "Update an event",
      description:
        "Changes only the fields given (a PATCH); the others stay as they are. attendees and recurrence replace the whole list. " +
        "time_zone applies to the start and end given with it.",
      inputSchema: {
        event_id: eventId,
        summary: z.string().min(1).optional(),
        start: z.string().min(1).optional().describe("New start: a date or a date-time"),
        end: z.string().min(1).optional().describe("New end: a date or a date-time"),
        description: z.string().optional().describe("New description (empty to clear it)"),
        location: z.string().optional().describe("New location (empty to clear it)"),
        attendees: z.array(z.string().min(3)).optional().describe("The new guest list (e-mail addresses)"),
        recurrence: z.array(z.string().min(1)).optional().describe("The new RFC 5545 lines (empty to stop recurring)"),
        time_zone: timeZone.describe("IANA time zone of the new start and end"),
        calendar_id: calendarId
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }
    },
    (args) =>
      answer("update_event", async () => {
        const patch: Json = {}
        if (args.summary !== undefined) patch.summary = args.summary
        if (args.description !== undefined) patch.description = args.description
        if (args.location !== undefined) patch.location = args.location
        if (args.start !== undefined && args.end !== undefined) {
          const { start, end } = eventTimes(args.start, args.end, args.time_zone)
          patch.start = start
          patch.end = end
        } else if (args.start !== undefined) {
          patch.start = singleEventTime(args.start, "start", args.time_zone)
        } else if (args.end !== undefined) {
          patch.end = singleEventTime(args.end, "end", args.time_zone)
        } else if (args.time_zone !== undefined) {
          throw new GcalError("time_zone applies to start and end: give them too")
        }
        if (args.attendees !== undefined) patch.attendees = attendeesOf(args.attendees)
        if (args.recurrence !== undefined) patch.recurrence = args.recurrence
        if (Object.keys(patch).length === 0) {
          throw new GcalError(
            "nothing to change: give at least one of summary, start, end, description, location, attendees, recurrence"
          )
        }
        const updated = await api.patchEvent(args.calendar_id ?? "primary", args.event_id, patch)
        return `Updated event (${Object.keys(patch).join(", ")}):\n${formatEvent(updated)}`
      })
  )

  server.registerTool(
    "delete_event",
    {
      title: "Delete an event",
      description: "Deletes an event permanently (for a recurring event: the whole series).",
      inputSchema: { event_id: eventId, calendar_id: calendarId },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true }
    },
    (args) =>
      answer("delete_event", async () => {
        const id = args.calendar_id ?? "primary"
        await api.deleteEvent(id, args.event_id)
        return `Deleted event ${args.event_id} from calendar ${id}.`
      })
  )

  server.registerTool(
    "respond_to_event",
    {
      title: "Respond to an invitation",
      description: "Sets your RSVP to an event you are invited to: accepted, declined, tentative or needsAction.",
      inputSchema: {
        event_id: eventId,
        response: z.enum(RESPONSES).describe("accepted, declined, tentative or needsAction"),
        calendar_id: calendarId
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }
    },
    (args) =>
      answer("respond_to_event", async () => {
        const id = args.calendar_id ?? "primary"
        const event = await api.getEvent(id, args.event_id)
        const attendees: ReadonlyArray<Attendee> = event.attendees ?? []
        if (!attendees.some((a) => a.self === true)) {
          throw new GcalError(
            `you are not on the guest list of event ${args.event_id}, so there is no invitation to respond to`
          )
        }
        // A PATCH replaces the whole attendees list: send every guest, only yours changed.
        const patched = attendees.map((a) => (a.self === true ? { ...a, responseStatus: args.response } : a))
        const updated = await api.patchEvent(id, args.event_id, { attendees: patched })
        return `Responded ${args.response} to:\n${formatEvent(updated)}`
      })
  )
}
