/**
 * The Google Calendar server (scripts/gcal-server.ts) and its setup (scripts/gcal-oauth-setup.ts)
 * through our client engine, against the Google stand-in on 127.0.0.1: every tool and what
 * Google received, pagination, token refresh and revocation, the loopback OAuth flow end to end,
 * and the new-event poller across a restart.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { McpClient } from "@skald/mcp"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as Path from "node:path"
import { clientLayer, connect, eventually, expectText, makeLogCapture } from "../support.js"
import {
  awaitConsentUrl,
  awaitPolls,
  collectEvents,
  credsFile,
  fileMode,
  pollRequests,
  readCreds,
  runScript,
  secretsDir,
  serverCommand,
  serverScript,
  setupScript,
  standIn,
  stateFile,
  writeCreds
} from "./gcal-support.js"
import { CALENDAR_SCOPE, type GoogleStandIn, type RecordedRequest, TEAM_CALENDAR, USER } from "./google-standin.js"

class Google
  extends Context.Tag("test/gcal/Google")<Google, { readonly google: GoogleStandIn; readonly dir: string }>()
{}

/** One server for the tool tests: stand-in pages of 2 events and 1 calendar, polling off. */
const toolsLayer = Layer.unwrapScoped(
  Effect.gen(function*() {
    const google = yield* standIn({ eventsPageSize: 2, calendarsPageSize: 1 })
    const dir = yield* secretsDir
    writeCreds(dir, google)
    return Layer.merge(Layer.succeed(Google, { google, dir }), clientLayer("gcal", serverCommand(google, dir)))
  })
)

/** The requests the stand-in received while `effect` ran. */
const during = <A, E, R>(google: GoogleStandIn, effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const before = google.requests.length
    const result = yield* effect
    return { result, requests: google.requests.slice(before) }
  })

const call = (name: string, args: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const client = yield* McpClient.McpClient
    return expectText((yield* client.callTool(name, args)).result)
  })

const only = (requests: ReadonlyArray<RecordedRequest>): RecordedRequest => {
  assert.strictEqual(
    requests.length,
    1,
    `expected one request, got ${JSON.stringify(requests.map((r) => `${r.method} ${r.path}`))}`
  )
  return requests[0]!
}

const timed = (dateTime: string) => ({ dateTime, timeZone: "Europe/Paris" })

layer(toolsLayer, { excludeTestServices: true })("gcal tools", (it) => {
  it.effect("lists the seven tools with their arguments", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.McpClient
      assert.strictEqual(client.identity.serverInfo.name, "gcal")
      const tools = yield* client.tools
      assert.deepStrictEqual(tools.map((t) => t.name), [
        "list_calendars",
        "list_events",
        "get_event",
        "create_event",
        "update_event",
        "delete_event",
        "respond_to_event"
      ])
      const props = (name: string) =>
        Object.keys(tools.find((t) => t.name === name)!.inputSchema.properties ?? {}).sort()
      const required = (name: string) =>
        [...((tools.find((t) => t.name === name)!.inputSchema.required as Array<string> | undefined) ?? [])].sort()
      assert.deepStrictEqual(props("list_events"), [
        "calendar_id",
        "end_time",
        "full_text",
        "max_results",
        "start_time",
        "time_zone"
      ])
      assert.deepStrictEqual(required("list_events"), [])
      assert.deepStrictEqual(required("create_event"), ["end", "start", "summary"])
      assert.deepStrictEqual(required("update_event"), ["event_id"])
      assert.deepStrictEqual(required("respond_to_event"), ["event_id", "response"])
      const response = (tools.find((t) =>
        t.name === "respond_to_event"
      )!.inputSchema.properties as Record<string, { enum?: Array<string> }>).response
      assert.deepStrictEqual(response?.enum, ["accepted", "declined", "tentative", "needsAction"])
    }))

  it.effect("list_calendars follows nextPageToken and lists every calendar", () =>
    Effect.gen(function*() {
      const { google } = yield* Google
      const { result, requests } = yield* during(google, call("list_calendars"))
      assert.isFalse(result.isError)
      assert.deepStrictEqual(requests.map((r) => [r.method, r.path, r.query]), [
        ["GET", "/users/me/calendarList", { maxResults: "250" }],
        ["GET", "/users/me/calendarList", { maxResults: "250", pageToken: "standin-page-1" }]
      ])
      assert.strictEqual(
        result.text,
        [
          "2 calendars:",
          `- ${USER} (id: ${USER}, primary, access: owner, time zone: Europe/Paris)`,
          `- Team (id: ${TEAM_CALENDAR}, access: writer, time zone: UTC)`
        ].join("\n")
      )
    }))

  it.effect("list_events pages until max_results, with the calendar id escaped in the path", () =>
    Effect.gen(function*() {
      const { google } = yield* Google
      for (let day = 1; day <= 5; day++) {
        google.addEvent(TEAM_CALENDAR, {
          summary: `Standup ${day}`,
          start: { dateTime: `2031-05-0${day}T09:00:00Z` },
          end: { dateTime: `2031-05-0${day}T09:15:00Z` }
        })
      }
      google.addEvent(TEAM_CALENDAR, {
        summary: "Too late",
        start: { dateTime: "2031-06-01T09:00:00Z" },
        end: { dateTime: "2031-06-01T10:00:00Z" }
      })
      const { result, requests } = yield* during(
        google,
        call("list_events", {
          calendar_id: TEAM_CALENDAR,
          start_time: "2031-05-01T00:00:00Z",
          end_time: "2031-05-31T00:00:00Z",
          max_results: 4
        })
      )
      assert.isFalse(result.isError, result.text)
      const path = `/calendars/${TEAM_CALENDAR}/events`
      const query = {
        timeMin: "2031-05-01T00:00:00Z",
        timeMax: "2031-05-31T00:00:00Z",
        singleEvents: "true",
        orderBy: "startTime"
      }
      assert.deepStrictEqual(requests.map((r) => [r.method, r.path, r.query]), [
        ["GET", path, { ...query, maxResults: "4" }],
        ["GET", path, { ...query, maxResults: "2", pageToken: "standin-page-2" }]
      ])
      const titles = result.text.split("\n").filter((l) => l.startsWith("Standup") || l.startsWith("Too late"))
      assert.deepStrictEqual(titles, ["Standup 1", "Standup 2", "Standup 3", "Standup 4"])
      assert.match(
        result.text,
        /^4 events in Team \(team#work@group\.calendar\.google\.com\) from 2031-05-01T00:00:00Z to 2031-05-31T00:00:00Z:/
      )
      assert.include(result.text, "when: 2031-05-01T09:00:00Z – 2031-05-01T09:15:00Z")
      assert.include(result.text, "More events match")

      // All five fit: three pages, no "more".
      const all = yield* during(
        google,
        call("list_events", {
          calendar_id: TEAM_CALENDAR,
          start_time: "2031-05-01T00:00:00Z",
          end_time: "2031-05-31T00:00:00Z"
        })
      )
      assert.deepStrictEqual(all.requests.map((r) => [r.query.maxResults, r.query.pageToken]), [["25", undefined], [
        "23",
        "standin-page-2"
      ], ["21", "standin-page-4"]])
      assert.include(all.result.text, "Standup 5")
      assert.notInclude(all.result.text, "More events match")
    }))

  it.effect("list_events: full_text is q, time_zone reads date bounds in that zone, start_time defaults to now", () =>
    Effect.gen(function*() {
      const { google } = yield* Google
      google.addEvent("primary", {
        summary: "Dentist",
        location: "Rue de Rivoli",
        start: timed("2032-03-10T10:00:00+01:00"),
        end: timed("2032-03-10T11:00:00+01:00")
      })
      google.addEvent("primary", {
        summary: "Lunch",
        start: timed("2032-03-10T12:00:00+01:00"),
        end: timed("2032-03-10T13:00:00+01:00")
      })
      const { result, requests } = yield* during(
        google,
        call("list_events", {
          start_time: "2032-03-10",
          end_time: "2032-03-11",
          full_text: "rivoli",
          time_zone: "Europe/Paris"
        })
      )
      assert.deepStrictEqual(only(requests).query, {
        timeMin: "2032-03-10T00:00:00+01:00",
        timeMax: "2032-03-11T00:00:00+01:00",
        q: "rivoli",
        timeZone: "Europe/Paris",
        singleEvents: "true",
        orderBy: "startTime",
        maxResults: "25"
      })
      assert.strictEqual(only(requests).path, "/calendars/primary/events")
      assert.include(result.text, "Dentist")
      assert.include(result.text, "location: Rue de Rivoli")
      assert.include(result.text, "when: 2032-03-10T10:00:00+01:00 – 2032-03-10T11:00:00+01:00 (Europe/Paris)")
      assert.notInclude(result.text, "Lunch")

      // A summer date in the same zone is two hours ahead of UTC.
      const summer = yield* during(
        google,
        call("list_events", { start_time: "2032-07-01T08:30", time_zone: "Europe/Paris" })
      )
      assert.strictEqual(only(summer.requests).query.timeMin, "2032-07-01T08:30:00+02:00")

      const before = Date.now()
      const defaulted = yield* during(google, call("list_events", { full_text: "nothing matches this" }))
      const timeMin = Date.parse(only(defaulted.requests).query.timeMin!)
      assert.isTrue(timeMin >= before - 1000 && timeMin <= Date.now(), only(defaulted.requests).query.timeMin)
      assert.match(
        defaulted.result.text,
        /^No events in me@example\.com \(primary\) from .* matching "nothing matches this"\.$/
      )
    }))

  it.effect("list_events refuses a bound it cannot read, before asking Google", () =>
    Effect.gen(function*() {
      const { google } = yield* Google
      const { result, requests } = yield* during(google, call("list_events", { start_time: "next tuesday" }))
      assert.isTrue(result.isError)
      assert.match(result.text, /^Error: start_time must be a date \(2025-01-31\) or an RFC 3339 date-time/)
      assert.deepStrictEqual(requests, [])
      const zone = yield* call("list_events", { start_time: "2030-01-01", time_zone: "Mars/Olympus" })
      assert.isTrue(zone.isError)
      assert.include(zone.text, "time_zone must be an IANA time zone name")
    }))

  it.effect("get_event shows the event; an unknown id is Google's 404 as an Error text", () =>
    Effect.gen(function*() {
      const { google } = yield* Google
      const event = google.addEvent("primary", {
        summary: "Design review",
        description: "Agenda:\n1. specs\n2. dates",
        start: timed("2033-01-05T14:00:00+01:00"),
        end: timed("2033-01-05T15:30:00+01:00"),
        organizer: { email: "boss@example.com" },
        attendees: [{ email: USER, self: true, responseStatus: "accepted" }, {
          email: "boss@example.com",
          organizer: true,
          responseStatus: "accepted"
        }]
      })
      const { result, requests } = yield* during(google, call("get_event", { event_id: event.id }))
      assert.deepStrictEqual([only(requests).method, only(requests).path], [
        "GET",
        `/calendars/primary/events/${event.id as string}`
      ])
      assert.strictEqual(
        result.text,
        [
          "Design review",
          `  id: ${event.id as string}`,
          "  when: 2033-01-05T14:00:00+01:00 – 2033-01-05T15:30:00+01:00 (Europe/Paris)",
          "  description: Agenda:\n    1. specs\n    2. dates",
          "  organizer: boss@example.com",
          `  attendees: ${USER} (accepted, you); boss@example.com (accepted, organizer)`,
          `  link: ${event.htmlLink as string}`
        ].join("\n")
      )

      const missing = yield* during(google, call("get_event", { event_id: "nope", calendar_id: TEAM_CALENDAR }))
      assert.strictEqual(only(missing.requests).path, `/calendars/${TEAM_CALENDAR}/events/nope`)
      assert.strictEqual(only(missing.requests).status, 404)
      assert.isTrue(missing.result.isError)
      assert.strictEqual(
        missing.result.text,
        "Error: Google Calendar answered 404 to GET /calendars/team%23work%40group.calendar.google.com/events/nope: Not Found [notFound] (check the calendar_id and event_id)"
      )
    }))

  it.effect("create_event sends a timed event with every optional field", () =>
    Effect.gen(function*() {
      const { google } = yield* Google
      const { result, requests } = yield* during(
        google,
        call("create_event", {
          summary: "Weekly 1:1",
          start: "2034-02-01T10:00:00",
          end: "2034-02-01T10:30",
          time_zone: "Europe/Paris",
          description: "Notes in the doc",
          location: "Room 4",
          attendees: ["ana@example.com", "bo@example.com"],
          recurrence: ["RRULE:FREQ=WEEKLY;COUNT=4"]
        })
      )
      assert.isFalse(result.isError, result.text)
      const request = only(requests)
      assert.deepStrictEqual([request.method, request.path, request.query], ["POST", "/calendars/primary/events", {}])
      assert.deepStrictEqual(request.body, {
        summary: "Weekly 1:1",
        start: { dateTime: "2034-02-01T10:00:00", timeZone: "Europe/Paris" },
        end: { dateTime: "2034-02-01T10:30:00", timeZone: "Europe/Paris" },
        description: "Notes in the doc",
        location: "Room 4",
        attendees: [{ email: "ana@example.com" }, { email: "bo@example.com" }],
        recurrence: ["RRULE:FREQ=WEEKLY;COUNT=4"]
      })
      const created = google.events("primary").find((e) => e.summary === "Weekly 1:1")!
      assert.match(result.text, new RegExp(`^Created event:\nWeekly 1:1\n  id: ${created.id as string}\n`))
      assert.include(result.text, "recurrence: RRULE:FREQ=WEEKLY;COUNT=4")
      assert.include(result.text, "attendees: ana@example.com (needsAction); bo@example.com (needsAction)")
    }))

  it.effect("create_event: two dates make an all-day event (one day when they are equal); only what was given is sent", () =>
    Effect.gen(function*() {
      const { google } = yield* Google
      const oneDay = yield* during(
        google,
        call("create_event", { summary: "Holiday", start: "2034-08-15", end: "2034-08-15", calendar_id: TEAM_CALENDAR })
      )
      assert.strictEqual(only(oneDay.requests).path, `/calendars/${TEAM_CALENDAR}/events`)
      assert.deepStrictEqual(only(oneDay.requests).body, {
        summary: "Holiday",
        start: { date: "2034-08-15" },
        end: { date: "2034-08-16" }
      })
      assert.include(oneDay.result.text, "when: 2034-08-15 (all day)")

      const trip = yield* during(
        google,
        call("create_event", { summary: "Trip", start: "2034-08-20", end: "2034-08-23" })
      )
      assert.deepStrictEqual(only(trip.requests).body, {
        summary: "Trip",
        start: { date: "2034-08-20" },
        end: { date: "2034-08-23" }
      })
      assert.include(trip.result.text, "when: 2034-08-20 – 2034-08-22 (all day)")

      const utc = yield* during(
        google,
        call("create_event", { summary: "Call", start: "2034-09-01T15:00:00Z", end: "2034-09-01T15:20:00+00:00" })
      )
      assert.deepStrictEqual(only(utc.requests).body, {
        summary: "Call",
        start: { dateTime: "2034-09-01T15:00:00Z" },
        end: { dateTime: "2034-09-01T15:20:00+00:00" }
      })
    }))

  it.effect("create_event refuses mixed, reversed or offset-less times without calling Google", () =>
    Effect.gen(function*() {
      const { google } = yield* Google
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ start: "2034-01-01", end: "2034-01-01T10:00:00Z" }, "Error: start and end must both be dates"],
        [{ start: "2034-01-01T10:00:00Z", end: "2034-01-01T09:00:00Z" }, "Error: end must be after start"],
        [{ start: "2034-01-01T10:00:00", end: "2034-01-01T11:00:00" }, "Error: start has no UTC offset"],
        [{ start: "2034-02-30", end: "2034-03-01" }, "Error: start is not a real date or time"],
        [
          { start: "2034-01-01T10:00:00Z", end: "2034-01-01T11:00:00Z", recurrence: ["RRULE:FREQ=DAILY"] },
          "Error: a recurring timed event needs time_zone"
        ]
      ]
      for (const [args, message] of cases) {
        const { result, requests } = yield* during(google, call("create_event", { summary: "x", ...args }))
        assert.isTrue(result.isError, JSON.stringify(args))
        assert.isTrue(result.text.startsWith(message), `${JSON.stringify(args)} → ${result.text}`)
        assert.deepStrictEqual(requests, [])
      }
    }))

  it.effect("update_event PATCHes only the fields given", () =>
    Effect.gen(function*() {
      const { google } = yield* Google
      const event = google.addEvent("primary", {
        summary: "Old title",
        description: "Keep me",
        location: "Old place",
        start: timed("2035-04-01T09:00:00+02:00"),
        end: timed("2035-04-01T10:00:00+02:00")
      })
      const id = event.id as string
      const { result, requests } = yield* during(
        google,
        call("update_event", { event_id: id, summary: "New title", location: "" })
      )
      assert.isFalse(result.isError, result.text)
      const request = only(requests)
      assert.deepStrictEqual([request.method, request.path], ["PATCH", `/calendars/primary/events/${id}`])
      assert.deepStrictEqual(request.body, { summary: "New title", location: "" })
      const stored = google.event("primary", id)!
      assert.strictEqual(stored.description, "Keep me")
      assert.deepStrictEqual(stored.start, timed("2035-04-01T09:00:00+02:00"))
      assert.match(result.text, /^Updated event \(summary, location\):\nNew title\n/)

      const moved = yield* during(
        google,
        call("update_event", {
          event_id: id,
          start: "2035-04-02T09:00",
          end: "2035-04-02T10:00",
          time_zone: "America/New_York"
        })
      )
      assert.deepStrictEqual(only(moved.requests).body, {
        start: { dateTime: "2035-04-02T09:00:00", timeZone: "America/New_York" },
        end: { dateTime: "2035-04-02T10:00:00", timeZone: "America/New_York" }
      })
      const guests = yield* during(
        google,
        call("update_event", { event_id: id, attendees: ["x@example.com"], end: "2035-04-02T11:00:00-04:00" })
      )
      assert.deepStrictEqual(only(guests.requests).body, {
        end: { dateTime: "2035-04-02T11:00:00-04:00" },
        attendees: [{ email: "x@example.com" }]
      })

      const nothing = yield* during(google, call("update_event", { event_id: id }))
      assert.isTrue(nothing.result.isError)
      assert.match(nothing.result.text, /^Error: nothing to change/)
      assert.deepStrictEqual(nothing.requests, [])
    }))

  it.effect("delete_event DELETEs the event; a second delete is Google's 410", () =>
    Effect.gen(function*() {
      const { google } = yield* Google
      const event = google.addEvent(TEAM_CALENDAR, {
        summary: "Cancelled talk",
        start: { date: "2036-01-01" },
        end: { date: "2036-01-02" }
      })
      const id = event.id as string
      const { result, requests } = yield* during(
        google,
        call("delete_event", { event_id: id, calendar_id: TEAM_CALENDAR })
      )
      assert.deepStrictEqual([only(requests).method, only(requests).path, only(requests).status], [
        "DELETE",
        `/calendars/${TEAM_CALENDAR}/events/${id}`,
        204
      ])
      assert.strictEqual(result.text, `Deleted event ${id} from calendar ${TEAM_CALENDAR}.`)
      assert.isFalse(result.isError)
      assert.strictEqual(google.event(TEAM_CALENDAR, id)!.status, "cancelled")
      const again = yield* call("delete_event", { event_id: id, calendar_id: TEAM_CALENDAR })
      assert.isTrue(again.isError)
      assert.match(
        again.text,
        /^Error: Google Calendar answered 410 to DELETE .*: Resource has been deleted \[deleted\]$/
      )
    }))

  it.effect("respond_to_event patches the self attendee's responseStatus, leaving the other guests as they are", () =>
    Effect.gen(function*() {
      const { google } = yield* Google
      const guests = [
        { email: "boss@example.com", organizer: true, responseStatus: "accepted" },
        { email: USER, self: true, responseStatus: "needsAction" },
        { email: "other@example.com", responseStatus: "declined", optional: true }
      ]
      const event = google.addEvent("primary", {
        summary: "Offsite",
        organizer: { email: "boss@example.com" },
        start: timed("2037-06-01T09:00:00+02:00"),
        end: timed("2037-06-01T17:00:00+02:00"),
        attendees: guests
      })
      const id = event.id as string
      for (const response of ["tentative", "declined", "accepted", "needsAction"] as const) {
        const { result, requests } = yield* during(google, call("respond_to_event", { event_id: id, response }))
        assert.isFalse(result.isError, result.text)
        assert.deepStrictEqual(requests.map((r) => [r.method, r.path]), [
          ["GET", `/calendars/primary/events/${id}`],
          ["PATCH", `/calendars/primary/events/${id}`]
        ])
        assert.deepStrictEqual(requests[1]!.body, {
          attendees: [guests[0], { ...guests[1], responseStatus: response }, guests[2]]
        })
        assert.include(result.text, `${USER} (${response}, you)`)
        assert.match(result.text, new RegExp(`^Responded ${response} to:\nOffsite\n`))
      }

      const mine = google.addEvent("primary", {
        summary: "Solo",
        start: timed("2037-06-02T09:00:00+02:00"),
        end: timed("2037-06-02T10:00:00+02:00")
      })
      const solo = yield* during(google, call("respond_to_event", { event_id: mine.id, response: "accepted" }))
      assert.isTrue(solo.result.isError)
      assert.match(solo.result.text, /^Error: you are not on the guest list of event/)
      assert.deepStrictEqual(solo.requests.map((r) => r.method), ["GET"])

      const client = yield* McpClient.McpClient
      const invalid = expectText(
        (yield* client.callTool("respond_to_event", { event_id: id, response: "maybe" })).result
      )
      assert.isTrue(invalid.isError)
    }))

  it.effect("with GCAL_POLL_SECONDS=0 nothing polled, and each request carried the stored access token", () =>
    Effect.gen(function*() {
      const { dir, google } = yield* Google
      assert.deepStrictEqual(pollRequests(google), [])
      assert.isFalse(fs.existsSync(stateFile(dir)))
      const token = readCreds(dir).access_token!
      assert.isAbove(google.calendarRequests().length, 10)
      assert.isTrue(google.calendarRequests().every((r) => r.bearer === token))
      assert.deepStrictEqual(google.tokenRequests(), [])
    }))
})

describe("gcal credentials", () => {
  it.live("an access token Google calls expired is refreshed once, used, and written back (0600)", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const google = yield* standIn()
        const dir = yield* secretsDir
        const before = writeCreds(dir, google)
        google.expireAccessTokens()
        const logs = makeLogCapture()
        const client = yield* connect("gcal-refresh", serverCommand(google, dir)).pipe(logs.provide)
        const result = expectText((yield* client.callTool("list_calendars")).result)
        assert.isFalse(result.isError, result.text)
        assert.include(result.text, "2 calendars:")

        const after = readCreds(dir)
        const seen = google.requests.map((r) => [r.method, r.api, r.status])
        assert.deepStrictEqual(seen, [
          ["GET", "calendar", 401],
          ["POST", "token", 200],
          ["GET", "calendar", 200]
        ])
        assert.strictEqual(google.requests[0]!.bearer, before.access_token)
        assert.deepStrictEqual(google.requests[1]!.body, {
          grant_type: "refresh_token",
          refresh_token: before.refresh_token,
          client_id: before.client_id,
          client_secret: before.client_secret
        })
        assert.strictEqual(google.requests[2]!.bearer, after.access_token)
        assert.notStrictEqual(after.access_token, before.access_token)
        assert.isTrue(google.isValidAccessToken(after.access_token!))
        assert.strictEqual(after.refresh_token, before.refresh_token)
        assert.strictEqual(after.client_secret, before.client_secret)
        assert.isAbove(Date.parse(after.expiry!), Date.now() + 3000 * 1000)
        assert.strictEqual(fileMode(credsFile(dir)), 0o600)
        assert.strictEqual(fileMode(dir), 0o700)

        // The new token serves the next call without another refresh.
        yield* client.callTool("get_event", { event_id: "nope" })
        assert.strictEqual(google.tokenRequests().length, 1)
        assert.strictEqual(google.requests.at(-1)!.bearer, after.access_token)

        // No token or secret reaches the server's log.
        yield* eventually(
          () => logs.withTag("stderr").some((l) => l.includes("access token refreshed")),
          "the refresh logged"
        )
        const text = logs.lines.map((l) => l.text).join("\n")
        for (const secret of [before.access_token!, after.access_token!, before.refresh_token, before.client_secret]) {
          assert.notInclude(text, secret)
        }
      })
    ))

  it.live("a token past its expiry is refreshed before the request (no 401)", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const google = yield* standIn()
        const dir = yield* secretsDir
        const before = writeCreds(dir, google, { expiry: new Date(Date.now() - 60_000).toISOString() })
        const client = yield* connect("gcal-expiry", serverCommand(google, dir))
        const result = expectText((yield* client.callTool("list_events", { start_time: "2040-01-01" })).result)
        assert.isFalse(result.isError, result.text)
        assert.deepStrictEqual(google.requests.map((r) => [r.api, r.status]), [["token", 200], ["calendar", 200]])
        const after = readCreds(dir)
        assert.notStrictEqual(after.access_token, before.access_token)
        assert.strictEqual(google.requests[1]!.bearer, after.access_token)
      })
    ))

  it.live("a revoked refresh token is a clear error saying to run the setup; new credentials are picked up without a restart", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const google = yield* standIn()
        const dir = yield* secretsDir
        const before = writeCreds(dir, google)
        google.expireAccessTokens()
        google.revokeRefreshToken(before.refresh_token)
        const client = yield* connect("gcal-revoked", serverCommand(google, dir))
        const result = expectText((yield* client.callTool("list_calendars")).result)
        assert.isTrue(result.isError)
        assert.match(
          result.text,
          /^Error: Google refused the stored refresh token \(invalid_grant: Token has been expired or revoked\.\)\./
        )
        assert.include(result.text, "run the setup again")
        assert.include(result.text, "scripts/gcal-oauth-setup.ts")
        assert.notInclude(result.text, before.refresh_token)
        assert.deepStrictEqual(google.requests.map((r) => [r.api, r.status]), [["calendar", 401], ["token", 400]])
        assert.deepStrictEqual(readCreds(dir), before)

        // The setup ran again (here: a new grant written to the file): the same server uses it.
        writeCreds(dir, google)
        const again = expectText((yield* client.callTool("list_calendars")).result)
        assert.isFalse(again.isError, again.text)
      })
    ))

  it.live("no credentials file: the error names the file and the setup", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const google = yield* standIn()
        const dir = yield* secretsDir
        const client = yield* connect("gcal-nocreds", serverCommand(google, dir))
        const result = expectText((yield* client.callTool("get_event", { event_id: "x" })).result)
        assert.isTrue(result.isError)
        assert.strictEqual(
          result.text,
          `Error: no Google credentials at ${
            credsFile(dir)
          }. Run the setup first: node --import tsx scripts/gcal-oauth-setup.ts --client-secrets <client_secret_….json>`
        )
        assert.deepStrictEqual(google.requests, [])
      })
    ))

  it.live("the secrets folder is $SKALD_HOME/secrets when SKALD_SECRETS_DIR is not set", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const google = yield* standIn()
        const home = yield* secretsDir
        fs.mkdirSync(Path.join(home, "secrets"))
        writeCreds(Path.join(home, "secrets"), google)
        const command = serverCommand(google, "unused")
        const env: Record<string, string> = { ...command.env, SKALD_HOME: home, SKALD_SECRETS_DIR: "" }
        const client = yield* connect("gcal-home", { ...command, env })
        const result = expectText((yield* client.callTool("list_calendars")).result)
        assert.isFalse(result.isError, result.text)
      })
    ))
})

/** The Desktop-app client file Google lets one download. */
const clientSecretsFile = (dir: string, google: GoogleStandIn): string => {
  const file = Path.join(dir, "client_secret_standin.apps.googleusercontent.com.json")
  fs.writeFileSync(
    file,
    JSON.stringify({
      installed: {
        ...google.client,
        project_id: "skald-test",
        auth_uri: "https://accounts.google.com/o/oauth2/auth",
        token_uri: "https://oauth2.googleapis.com/token",
        auth_provider_x509_cert_url: "https://www.googleapis.com/oauth2/v1/certs",
        redirect_uris: ["http://localhost"]
      }
    })
  )
  return file
}

describe("gcal_oauth_setup", () => {
  it.live("signs in through the loopback flow end to end and stores credentials the server can use", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const google = yield* standIn()
        const dir = yield* secretsDir
        const secrets = Path.join(dir, "secrets")
        const setup = yield* runScript(setupScript, ["--client-secrets", clientSecretsFile(dir, google)], {
          ...google.env,
          SKALD_SECRETS_DIR: secrets
        })
        const url = yield* awaitConsentUrl(setup, google.env.GCAL_AUTH_URL!)
        const q = Object.fromEntries(url.searchParams)
        assert.strictEqual(url.origin + url.pathname, google.env.GCAL_AUTH_URL)
        assert.strictEqual(q.client_id, google.client.client_id)
        assert.match(q.redirect_uri!, /^http:\/\/127\.0\.0\.1:\d+\/$/)
        assert.notStrictEqual(q.redirect_uri, "http://127.0.0.1:0/")
        assert.strictEqual(q.response_type, "code")
        assert.strictEqual(q.scope, CALENDAR_SCOPE)
        assert.strictEqual(q.code_challenge_method, "S256")
        assert.match(q.code_challenge!, /^[A-Za-z0-9_-]{43}$/)
        assert.match(q.state!, /^[A-Za-z0-9_-]{20,}$/)
        assert.strictEqual(q.access_type, "offline")
        assert.strictEqual(q.prompt, "consent")
        assert.isUndefined(setup.exitCode())

        // The browser: the consent page redirects to the loopback listener, which answers a page.
        const consent = yield* Effect.promise(() => fetch(url, { redirect: "manual" }))
        assert.strictEqual(consent.status, 302)
        const back = new URL(consent.headers.get("location")!)
        assert.strictEqual(`${back.origin}${back.pathname}`, q.redirect_uri)
        assert.strictEqual(back.searchParams.get("state"), q.state)
        const landing = yield* Effect.promise(() => fetch(back))
        assert.strictEqual(landing.status, 200)
        assert.include(yield* Effect.promise(() => landing.text()), "Signed in")

        assert.strictEqual(yield* setup.exited, 0)
        const file = credsFile(secrets)
        assert.strictEqual(setup.stdout(), `Stored Google Calendar credentials in ${file}\n`)
        const exchange = only(google.tokenRequests())
        const form = exchange.body as Record<string, string>
        assert.strictEqual(exchange.status, 200)
        assert.deepStrictEqual(Object.keys(form).sort(), [
          "client_id",
          "client_secret",
          "code",
          "code_verifier",
          "grant_type",
          "redirect_uri"
        ])
        assert.strictEqual(form.grant_type, "authorization_code")
        assert.strictEqual(form.code, back.searchParams.get("code"))
        assert.strictEqual(form.redirect_uri, q.redirect_uri)

        assert.strictEqual(fileMode(file), 0o600)
        const stored = readCreds(secrets)
        assert.deepStrictEqual(Object.keys(stored).sort(), [
          "access_token",
          "client_id",
          "client_secret",
          "expiry",
          "refresh_token",
          "scope",
          "token_type"
        ])
        assert.strictEqual(stored.client_id, google.client.client_id)
        assert.strictEqual(stored.client_secret, google.client.client_secret)
        assert.strictEqual(stored.scope, CALENDAR_SCOPE)
        assert.strictEqual(stored.token_type, "Bearer")
        assert.isTrue(google.isValidAccessToken(stored.access_token!))
        assert.isAbove(Date.parse(stored.expiry!), Date.now())
        // No token on either stream.
        for (const secret of [stored.access_token!, stored.refresh_token, stored.client_secret]) {
          assert.notInclude(setup.stdout() + setup.stderr(), secret)
        }

        // The server signs in with what the setup stored, refreshing with its refresh token.
        google.expireAccessTokens()
        const client = yield* connect("gcal-after-setup", serverCommand(google, secrets))
        const result = expectText((yield* client.callTool("list_calendars")).result)
        assert.isFalse(result.isError, result.text)
        assert.strictEqual(
          (google.tokenRequests()[1]!.body as Record<string, string>).refresh_token,
          stored.refresh_token
        )
      })
    ))

  it.live("a redirect whose state does not match is refused and nothing is stored", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const google = yield* standIn()
        const dir = yield* secretsDir
        const setup = yield* runScript(setupScript, [], {
          ...google.env,
          SKALD_SECRETS_DIR: dir,
          GCAL_CLIENT_ID: google.client.client_id,
          GCAL_CLIENT_SECRET: google.client.client_secret
        })
        const url = yield* awaitConsentUrl(setup, google.env.GCAL_AUTH_URL!)
        const consent = yield* Effect.promise(() => fetch(url, { redirect: "manual" }))
        const back = new URL(consent.headers.get("location")!)
        back.searchParams.set("state", "forged")
        const landing = yield* Effect.promise(() => fetch(back))
        assert.strictEqual(landing.status, 400)
        assert.strictEqual(yield* setup.exited, 1)
        assert.include(setup.stderr(), "state does not match")
        assert.deepStrictEqual(google.tokenRequests(), [])
        assert.isFalse(fs.existsSync(credsFile(dir)))
      })
    ))

  it.live("a refused consent ends the setup with exit 1 and stores nothing", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const google = yield* standIn()
        google.deny = true
        const dir = yield* secretsDir
        const setup = yield* runScript(setupScript, ["--client-secrets", clientSecretsFile(dir, google)], {
          ...google.env,
          SKALD_SECRETS_DIR: dir
        })
        const url = yield* awaitConsentUrl(setup, google.env.GCAL_AUTH_URL!)
        const consent = yield* Effect.promise(() => fetch(url, { redirect: "manual" }))
        yield* Effect.promise(() => fetch(new URL(consent.headers.get("location")!)))
        assert.strictEqual(yield* setup.exited, 1)
        assert.include(setup.stderr(), "Google did not grant access (access_denied)")
        assert.isFalse(fs.existsSync(credsFile(dir)))
      })
    ))

  it.live("a consent without the calendar scope is refused", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const google = yield* standIn()
        google.grantScope = "openid"
        const dir = yield* secretsDir
        const setup = yield* runScript(setupScript, ["--client-secrets", clientSecretsFile(dir, google)], {
          ...google.env,
          SKALD_SECRETS_DIR: dir
        })
        const url = yield* awaitConsentUrl(setup, google.env.GCAL_AUTH_URL!)
        const consent = yield* Effect.promise(() => fetch(url, { redirect: "manual" }))
        const landing = yield* Effect.promise(() => fetch(new URL(consent.headers.get("location")!)))
        assert.strictEqual(landing.status, 500)
        assert.strictEqual(yield* setup.exited, 1)
        assert.include(setup.stderr(), "Google Calendar access was not granted")
        assert.isFalse(fs.existsSync(credsFile(dir)))
      })
    ))

  it.live("--help on both scripts; usage errors exit 2", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const dir = yield* secretsDir
        const help = yield* runScript(setupScript, ["--help"], {})
        assert.strictEqual(yield* help.exited, 0)
        assert.match(help.stdout(), /^Usage: node --import tsx scripts\/gcal-oauth-setup\.ts/)
        assert.include(help.stdout(), "--client-secrets FILE")
        const serverHelp = yield* runScript(serverScript, ["--help"], {})
        assert.strictEqual(yield* serverHelp.exited, 0)
        assert.match(serverHelp.stdout(), /^Usage: node --import tsx scripts\/gcal-server\.ts/)
        assert.include(serverHelp.stdout(), "GCAL_POLL_SECONDS")

        const noClient = yield* runScript(setupScript, [], {
          SKALD_SECRETS_DIR: dir,
          GCAL_CLIENT_ID: "",
          GCAL_CLIENT_SECRET: ""
        })
        assert.strictEqual(yield* noClient.exited, 2)
        assert.include(noClient.stderr(), "give --client-secrets FILE")
        const web = Path.join(dir, "web.json")
        fs.writeFileSync(web, JSON.stringify({ web: { client_id: "a", client_secret: "b" } }))
        const webClient = yield* runScript(setupScript, ["--client-secrets", web], { SKALD_SECRETS_DIR: dir })
        assert.strictEqual(yield* webClient.exited, 1)
        assert.include(webClient.stderr(), "\"Desktop app\"")
        const badPoll = yield* runScript(serverScript, [], { SKALD_SECRETS_DIR: dir, GCAL_POLL_SECONDS: "soon" })
        assert.strictEqual(yield* badPoll.exited, 2)
        assert.include(badPoll.stderr(), "GCAL_POLL_SECONDS must be a number of seconds")
      })
    ))
})

describe("gcal new-event poller", () => {
  it.live("pushes one event/new_calendar_event per new event, none for old or changed ones, and replays none after a restart", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const google = yield* standIn({ eventsPageSize: 2 })
        const dir = yield* secretsDir
        writeCreds(dir, google)
        const env = { GCAL_POLL_SECONDS: "0.2" }
        const anHourAgo = new Date(Date.now() - 3600_000).toISOString()
        const old = google.addEvent("primary", {
          summary: "Existing",
          created: anHourAgo,
          updated: anHourAgo,
          start: timed("2038-01-01T09:00:00+01:00"),
          end: timed("2038-01-01T10:00:00+01:00")
        })

        // --- the first server: a baseline, then the new events ---
        const first = yield* Effect.scoped(
          Effect.gen(function*() {
            const client = yield* connect("gcal-poll-1", serverCommand(google, dir, env))
            const events = yield* collectEvents(client)
            yield* awaitPolls(google, 0, 1, "the baseline poll")
            yield* eventually(() => fs.existsSync(stateFile(dir)), "the state file")
            assert.strictEqual(fileMode(stateFile(dir)), 0o600)

            const a = google.addEvent("primary", {
              summary: "Planning",
              description: "Quarterly",
              location: "HQ",
              start: timed("2038-02-01T09:00:00+01:00"),
              end: timed("2038-02-01T10:00:00+01:00"),
              attendees: [{ email: "ana@example.com" }]
            })
            const b = google.addEvent("primary", {
              summary: "Offsite",
              start: { date: "2038-03-01" },
              end: { date: "2038-03-03" }
            })
            google.addEvent("primary", {
              summary: "Already cancelled",
              status: "cancelled",
              start: { date: "2038-03-05" },
              end: { date: "2038-03-06" }
            })
            google.touchEvent("primary", old.id as string, { summary: "Existing, renamed" })
            const viaTool = expectText(
              (yield* client.callTool("create_event", { summary: "Made here", start: "2038-04-01", end: "2038-04-01" }))
                .result
            )
            assert.isFalse(viaTool.isError, viaTool.text)
            const c = google.events("primary").find((e) => e.summary === "Made here")!

            yield* eventually(() => events.length >= 3, "three pushed events")
            // Several more polls: nothing is pushed twice.
            yield* awaitPolls(google, pollRequests(google).length, 3, "three more polls")
            assert.deepStrictEqual(events.map((e) => e.method), [
              "event/new_calendar_event",
              "event/new_calendar_event",
              "event/new_calendar_event"
            ])
            const byId = new Map(
              events.map((e) => [(e.params as { id: string }).id, e.params as Record<string, unknown>])
            )
            assert.deepStrictEqual([...byId.keys()].sort(), [a.id, b.id, c.id].sort())
            assert.deepStrictEqual(byId.get(a.id as string), {
              id: a.id,
              calendar: "primary",
              calendar_name: USER,
              summary: "Planning",
              start: "2038-02-01T09:00:00+01:00",
              end: "2038-02-01T10:00:00+01:00",
              all_day: false,
              time_zone: "Europe/Paris",
              location: "HQ",
              description: "Quarterly",
              organizer: USER,
              creator: USER,
              attendees: ["ana@example.com"],
              status: "confirmed",
              created: a.created,
              htmlLink: a.htmlLink
            })
            assert.deepStrictEqual(
              [byId.get(b.id as string)!.start, byId.get(b.id as string)!.end, byId.get(b.id as string)!.all_day],
              ["2038-03-01", "2038-03-03", true]
            )
            // The poller asked for changes since its previous poll, series unexpanded.
            const poll = pollRequests(google).at(-1)!
            assert.strictEqual(poll.path, "/calendars/primary/events")
            assert.strictEqual(poll.query.singleEvents, "false")
            assert.strictEqual(poll.query.showDeleted, "false")
            return events.length
          })
        )
        assert.strictEqual(first, 3)

        // --- a restart with the same state file: nothing old comes back, new events still do ---
        yield* Effect.scoped(
          Effect.gen(function*() {
            const polled = pollRequests(google).length
            const client = yield* connect("gcal-poll-2", serverCommand(google, dir, env))
            const events = yield* collectEvents(client)
            yield* awaitPolls(google, polled, 3, "three polls after the restart")
            assert.deepStrictEqual(events, [])

            const d = google.addEvent("primary", {
              summary: "After restart",
              start: timed("2038-05-01T09:00:00+02:00"),
              end: timed("2038-05-01T09:30:00+02:00")
            })
            yield* eventually(() => events.length >= 1, "the event created after the restart")
            yield* awaitPolls(google, pollRequests(google).length, 2, "two more polls")
            assert.deepStrictEqual(events.map((e) => (e.params as { id: string }).id), [d.id])
          })
        )
      })
    ))

  it.live("a first run announces nothing that existed before it, and watches every calendar in GCAL_POLL_CALENDARS", () =>
    Effect.scoped(
      Effect.gen(function*() {
        const google = yield* standIn()
        const dir = yield* secretsDir
        writeCreds(dir, google)
        // Created just now, inside the overlap window: part of the baseline all the same.
        google.addEvent("primary", {
          summary: "Just before",
          start: { date: "2039-01-01" },
          end: { date: "2039-01-02" }
        })
        google.addEvent(TEAM_CALENDAR, {
          summary: "Team, just before",
          start: { date: "2039-01-01" },
          end: { date: "2039-01-02" }
        })
        const client = yield* connect(
          "gcal-poll-cals",
          serverCommand(google, dir, { GCAL_POLL_SECONDS: "0.2", GCAL_POLL_CALENDARS: `primary, ${TEAM_CALENDAR}` })
        )
        const events = yield* collectEvents(client)
        yield* awaitPolls(google, 0, 4, "two polls of each calendar")
        assert.deepStrictEqual(events, [])
        const paths = new Set(pollRequests(google).map((r) => r.path))
        assert.deepStrictEqual(
          [...paths].sort(),
          ["/calendars/primary/events", `/calendars/${TEAM_CALENDAR}/events`].sort()
        )

        const team = google.addEvent(TEAM_CALENDAR, {
          summary: "Team event",
          start: { date: "2039-02-01" },
          end: { date: "2039-02-02" }
        })
        yield* eventually(() => events.length >= 1, "the team calendar's new event")
        yield* awaitPolls(google, pollRequests(google).length, 4, "more polls")
        assert.strictEqual(events.length, 1)
        assert.deepStrictEqual(
          [
            (events[0]!.params as Record<string, unknown>).id,
            (events[0]!.params as Record<string, unknown>).calendar,
            (events[0]!.params as Record<string, unknown>).calendar_name
          ],
          [team.id, TEAM_CALENDAR, "Team"]
        )
      })
    ))
})
