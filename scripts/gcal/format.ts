/**
 * The tools' readable text: one block per event (title, then indented `key: value` lines) and
 * one line per calendar. Times are shown as Google sent them (in the event's or the requested
 * time zone).
 */
import type { Attendee, CalendarEvent, CalendarListEntry, EventDateTime } from "./api.js"
import { dayBefore } from "./time.js"

/** `2025-01-10 (all day)`, `2025-01-10 – 2025-01-12 (all day)`, or `start – end (time zone)`. */
export const formatWhen = (start: EventDateTime | undefined, end: EventDateTime | undefined): string => {
  if (start?.date !== undefined) {
    const last = end?.date !== undefined ? dayBefore(end.date) : start.date
    return last === start.date || last < start.date ? `${start.date} (all day)` : `${start.date} – ${last} (all day)`
  }
  const from = start?.dateTime ?? "?"
  const to = end?.dateTime ?? "?"
  const zone = start?.timeZone ?? end?.timeZone
  return `${from} – ${to}${zone !== undefined ? ` (${zone})` : ""}`
}

const attendee = (a: Attendee): string => {
  const who = a.displayName !== undefined && a.email !== undefined
    ? `${a.displayName} <${a.email}>`
    : a.email ?? a.displayName ?? "?"
  const notes = [a.responseStatus ?? "needsAction"]
  if (a.self === true) notes.push("you")
  if (a.organizer === true) notes.push("organizer")
  if (a.optional === true) notes.push("optional")
  return `${who} (${notes.join(", ")})`
}

const indentRest = (text: string): string => text.replace(/\r?\n/g, "\n    ")

/** An event as a block of text. */
export const formatEvent = (event: CalendarEvent): string => {
  const lines = [event.summary !== undefined && event.summary.length > 0 ? event.summary : "(no title)"]
  const add = (key: string, value: string | undefined) => {
    if (value !== undefined && value.length > 0) lines.push(`  ${key}: ${indentRest(value)}`)
  }
  add("id", event.id)
  add("when", formatWhen(event.start, event.end))
  if (event.status !== undefined && event.status !== "confirmed") add("status", event.status)
  add("location", event.location)
  add("description", event.description)
  const organizer = event.organizer
  if (organizer !== undefined && organizer.self !== true) add("organizer", organizer.displayName ?? organizer.email)
  if (event.attendees !== undefined && event.attendees.length > 0) {
    add("attendees", event.attendees.map(attendee).join("; "))
  }
  if (event.recurrence !== undefined && event.recurrence.length > 0) add("recurrence", event.recurrence.join("; "))
  add("recurring event", event.recurringEventId)
  add("meet", event.hangoutLink)
  add("link", event.htmlLink)
  return lines.join("\n")
}

/** A calendar as one line. */
export const formatCalendar = (calendar: CalendarListEntry): string => {
  const name = calendar.summaryOverride ?? calendar.summary ?? calendar.id
  const notes = [`id: ${calendar.id}`]
  if (calendar.primary === true) notes.push("primary")
  if (calendar.accessRole !== undefined) notes.push(`access: ${calendar.accessRole}`)
  if (calendar.timeZone !== undefined) notes.push(`time zone: ${calendar.timeZone}`)
  return `- ${name} (${notes.join(", ")})`
}
