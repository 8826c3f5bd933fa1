/**
 * The weather server (scripts/weather-server.ts) over stdio, against a stand-in for the Open-Meteo
 * APIs on 127.0.0.1 that speaks their JSON shapes and validates their query parameters: every
 * tool, the structured air-quality result against its declared outputSchema, the query the
 * server sent, and the error paths (unknown place, a 400 `{"error": true, "reason"}` answer, an
 * HTTP 5xx, no connection, a timeout, bad arguments and a bad environment).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { McpClient, McpLog, OutputSchema, StdioTransport } from "@skald/mcp"
import { Context, Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { repoRoot } from "../fixtures/fixtures.js"
import { expectJson, expectText, makeLogCapture } from "../support.js"
import { AIR_VALUES, CURRENT_HOUR, GAZETTEER, type StandIn, startOpenMeteoStandIn } from "./open-meteo-standin.js"

const SERVER = Path.join(repoRoot, "scripts", "weather-server.ts")

const weatherCommand = (env: Readonly<Record<string, string>>) => ({
  command: process.execPath,
  args: ["--import", "tsx", SERVER],
  cwd: repoRoot,
  env
})

/** Runs the server's command line to its exit (no MCP session). */
const runCli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.async<{ code: number | null; stdout: string; stderr: string }>((resume) => {
    const child = execFile(process.execPath, ["--import", "tsx", SERVER, ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      timeout: 30_000
    }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
      resume(Effect.succeed({ code, stdout, stderr }))
    })
    child.stdin?.end()
  })

interface Harness {
  readonly standIn: StandIn
  readonly client: McpClient.Service
  readonly logs: ReturnType<typeof makeLogCapture>
}

/** A stand-in, then a weather server pointed at it (plus `env`), both closed with the scope. */
const startHarness = (env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const standIn = yield* Effect.acquireRelease(Effect.promise(startOpenMeteoStandIn), (s) => Effect.promise(s.close))
    const logs = makeLogCapture()
    const client = yield* StdioTransport.client({
      server: "weather",
      ...weatherCommand({ ...standIn.env, ...env }),
      stdinGrace: "1 second",
      termGrace: "1 second"
    }).pipe(Effect.provideService(McpLog.McpLogSink, logs.sink))
    return { standIn, client, logs } satisfies Harness
  })

class Weather extends Context.Tag("test/Weather")<Weather, Harness>() {}

/** A short HTTP timeout so the hang case ends quickly (not asserted as a duration). */
const WeatherLive = Layer.scoped(Weather, startHarness({ WEATHER_HTTP_TIMEOUT: "1" }))

/** Calls a tool with a fresh stand-in log. */
const call = (name: string, args: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const { client, standIn } = yield* Weather
    standIn.reset()
    return yield* client.callTool(name, args)
  })

const textOf = (outcome: McpClient.CallOutcome) => expectText(outcome.result)

const expectError = (outcome: McpClient.CallOutcome, includes: string) => {
  const result = textOf(outcome)
  assert.isTrue(result.isError, `expected isError, got: ${result.text}`)
  assert.match(result.text, /^Error: /)
  assert.include(result.text, includes)
  return result.text
}

const berlin = GAZETTEER.find((g) => g.name === "Berlin")!

const CURRENT_VARIABLES = "temperature_2m,relative_humidity_2m,apparent_temperature,is_day,precipitation,weather_code,"
  + "cloud_cover,pressure_msl,wind_speed_10m,wind_direction_10m,wind_gusts_10m"
const DAILY_VARIABLES =
  "weather_code,temperature_2m_max,temperature_2m_min,precipitation_sum,precipitation_probability_max,"
  + "wind_speed_10m_max,sunrise,sunset"
const AIR_VARIABLES =
  "european_aqi,us_aqi,pm2_5,pm10,ozone,nitrogen_dioxide,sulphur_dioxide,carbon_monoxide,dust,uv_index"

/** A port nothing listens on (bound, then released). */
const closedPort = () =>
  Effect.promise(() =>
    new Promise<number>((resolve) => {
      const s = http.createServer()
      s.listen(0, "127.0.0.1", () => {
        const { port } = s.address() as AddressInfo
        s.close(() => resolve(port))
      })
    })
  )

layer(WeatherLive, { excludeTestServices: true, timeout: 60_000 })("weather server", (it) => {
  it.effect("lists its four tools; only get_air_quality declares an outputSchema", () =>
    Effect.gen(function*() {
      const { client } = yield* Weather
      const tools = yield* client.tools
      assert.deepStrictEqual(tools.map((t) => t.name).sort(), [
        "get_air_quality",
        "get_current_weather",
        "get_forecast",
        "status"
      ])
      for (const tool of tools) {
        assert.strictEqual(tool.outputSchema !== undefined, tool.name === "get_air_quality", tool.name)
      }
      const current = tools.find((t) => t.name === "get_current_weather")!
      const props = current.inputSchema.properties as Record<string, unknown>
      assert.includeMembers(Object.keys(props), ["location", "latitude", "longitude", "units"])
    }))

  it.effect("get_current_weather by name: geocodes, asks the forecast API for the current block, prints it with its units", () =>
    Effect.gen(function*() {
      const { standIn } = yield* Weather
      const outcome = yield* call("get_current_weather", { location: "Berlin" })
      const { isError, text } = textOf(outcome)
      assert.isFalse(isError, text)
      assert.deepStrictEqual(standIn.requests.map((r) => r.api), ["geocoding", "forecast"])
      assert.deepStrictEqual(standIn.requestsTo("geocoding")[0]!.params, {
        name: "Berlin",
        count: "1",
        language: "en",
        format: "json"
      })
      assert.deepStrictEqual(standIn.requestsTo("forecast")[0]!.params, {
        latitude: String(berlin.latitude),
        longitude: String(berlin.longitude),
        current: CURRENT_VARIABLES,
        timezone: "auto"
      })
      assert.strictEqual(
        text,
        [
          "Current weather in Berlin, Land Berlin, Germany (52.5244, 13.4105) at 2025-06-01T14:15 (Europe/Berlin):",
          "🌦️ Slight rain, 18.3 °C (feels like 17.1 °C)",
          "Humidity 45 %, cloud cover 40 %, pressure 1015.2 hPa",
          "Wind 12.4 km/h from SW (225°), gusts 25.2 km/h",
          "Precipitation 0.4 mm"
        ].join("\n")
      )
    }))

  it.effect("get_current_weather by coordinates in imperial units: no geocoding, the unit options sent, °F shown", () =>
    Effect.gen(function*() {
      const { standIn } = yield* Weather
      const outcome = yield* call("get_current_weather", { latitude: -33.87, longitude: 151.21, units: "imperial" })
      const { isError, text } = textOf(outcome)
      assert.isFalse(isError, text)
      assert.deepStrictEqual(standIn.requests.map((r) => r.api), ["forecast"])
      assert.deepStrictEqual(standIn.requests[0]!.params, {
        latitude: "-33.87",
        longitude: "151.21",
        current: CURRENT_VARIABLES,
        timezone: "auto",
        temperature_unit: "fahrenheit",
        wind_speed_unit: "mph",
        precipitation_unit: "inch"
      })
      assert.include(text, "Current weather in -33.87, 151.21 at 2025-06-01T14:15 (GMT):")
      assert.include(text, "64.9 °F (feels like 62.8 °F)")
      assert.include(text, "Wind 7.7 mp/h from SW (225°), gusts 15.7 mp/h")
      assert.include(text, "Precipitation 0.016 inch")
    }))

  it.effect("get_forecast: daily block for `days`, hourly block for `hours`, one line each", () =>
    Effect.gen(function*() {
      const { standIn } = yield* Weather
      const outcome = yield* call("get_forecast", { location: "Paris, FR", days: 3, hours: 4 })
      const { isError, text } = textOf(outcome)
      assert.isFalse(isError, text)
      const [geo, forecast] = [standIn.requestsTo("geocoding")[0]!, standIn.requestsTo("forecast")[0]!]
      assert.deepStrictEqual(geo.params, {
        name: "Paris",
        count: "1",
        language: "en",
        format: "json",
        countryCode: "FR"
      })
      assert.deepStrictEqual(forecast.params, {
        latitude: "48.85341",
        longitude: "2.3488",
        daily: DAILY_VARIABLES,
        forecast_days: "3",
        hourly: "temperature_2m,precipitation_probability,weather_code,wind_speed_10m",
        forecast_hours: "4",
        timezone: "auto"
      })
      const lines = text.split("\n")
      assert.strictEqual(lines[0], "3-day forecast for Paris, Île-de-France, France (48.8534, 2.3488) (Europe/Paris):")
      assert.deepStrictEqual(lines.slice(1, 4), [
        "2025-06-01: ☀️ Clear sky, 10 °C to 20 °C, precipitation 0 mm (0 % chance), wind up to 15 km/h, sunrise 05:02, sunset 21:30",
        "2025-06-02: 🌦️ Slight rain, 10.3 °C to 20.7 °C, precipitation 3.2 mm (60 % chance), wind up to 16 km/h, sunrise 05:03, sunset 21:29",
        "2025-06-03: ⛈️ Thunderstorm, 10.6 °C to 21.4 °C, precipitation 12.5 mm (90 % chance), wind up to 17 km/h, sunrise 05:04, sunset 21:28"
      ])
      assert.strictEqual(lines[4], "")
      assert.strictEqual(lines[5], "Next 4 hours:")
      assert.deepStrictEqual(lines.slice(6), [
        `${CURRENT_HOUR}: 18 °C, ⛅ Partly cloudy, precipitation 0 % chance, wind 10 km/h`,
        "2025-06-01T15:00: 17.6 °C, 🌦️ Slight rain, precipitation 15 % chance, wind 10.5 km/h",
        "2025-06-01T16:00: 17.2 °C, ☁️ Overcast, precipitation 30 % chance, wind 11 km/h",
        "2025-06-01T17:00: 16.8 °C, ☀️ Clear sky, precipitation 45 % chance, wind 11.5 km/h"
      ])
    }))

  it.effect("get_forecast defaults: 3 days, no hourly block", () =>
    Effect.gen(function*() {
      const { standIn } = yield* Weather
      const outcome = yield* call("get_forecast", { latitude: 52.52, longitude: 13.41 })
      assert.isFalse(textOf(outcome).isError)
      const params = standIn.requestsTo("forecast")[0]!.params
      assert.strictEqual(params.forecast_days, "3")
      assert.notProperty(params, "hourly")
      assert.notProperty(params, "forecast_hours")
      assert.strictEqual(textOf(outcome).text.split("\n").length, 4)
    }))

  it.effect("a qualifier that is not a country code picks the match whose region names it", () =>
    Effect.gen(function*() {
      const { standIn } = yield* Weather
      const outcome = yield* call("get_current_weather", { location: "Springfield, Illinois" })
      assert.isFalse(textOf(outcome).isError, textOf(outcome).text)
      assert.deepStrictEqual(standIn.requestsTo("geocoding")[0]!.params, {
        name: "Springfield",
        count: "20",
        language: "en",
        format: "json"
      })
      assert.strictEqual(standIn.requestsTo("forecast")[0]!.params.latitude, "39.80172")
      assert.include(textOf(outcome).text, "Springfield, Illinois, United States (39.8017, -89.6437)")
      // Without the qualifier the best-ranked Springfield is taken.
      const plain = yield* call("get_current_weather", { location: "Springfield" })
      assert.include(textOf(plain).text, "Springfield, Missouri, United States")
    }))

  it.effect("get_air_quality: structuredContent that validates against the declared outputSchema, with a JSON text mirror", () =>
    Effect.gen(function*() {
      const { client, standIn, logs } = yield* Weather
      const warningsBefore = logs.withTag("warning").length
      const outcome = yield* call("get_air_quality", { location: "Berlin" })
      const json = expectJson(outcome.result)
      assert.isFalse(json.isError)
      assert.deepStrictEqual(standIn.requestsTo("air-quality")[0]!.params, {
        latitude: String(berlin.latitude),
        longitude: String(berlin.longitude),
        current: AIR_VARIABLES,
        timezone: "auto"
      })
      const value = json.value as Record<string, unknown>
      assert.deepStrictEqual({ ...value, summary: "…" }, {
        summary: "…",
        location: {
          name: "Berlin, Land Berlin, Germany",
          latitude: berlin.latitude,
          longitude: berlin.longitude,
          country: "Germany",
          timezone: "Europe/Berlin"
        },
        time: CURRENT_HOUR,
        european_aqi: AIR_VALUES.european_aqi,
        european_aqi_category: "fair",
        us_aqi: AIR_VALUES.us_aqi,
        us_aqi_category: "good",
        pollutants_ug_m3: {
          pm2_5: AIR_VALUES.pm2_5,
          pm10: AIR_VALUES.pm10,
          ozone: AIR_VALUES.ozone,
          nitrogen_dioxide: AIR_VALUES.nitrogen_dioxide,
          sulphur_dioxide: AIR_VALUES.sulphur_dioxide,
          carbon_monoxide: AIR_VALUES.carbon_monoxide,
          dust: AIR_VALUES.dust
        },
        uv_index: AIR_VALUES.uv_index,
        uv_category: "moderate",
        source: "Open-Meteo Air Quality API (CAMS)"
      })
      assert.strictEqual(
        value.summary,
        [
          `🟢 Air quality in Berlin, Land Berlin, Germany (52.5244, 13.4105) at ${CURRENT_HOUR}: European AQI 23 (fair), US AQI 35 (good).`,
          "Pollutants (μg/m³): PM2.5 5.1, PM10 8.2, O₃ 70, NO₂ 12.4, SO₂ 1.3, CO 160, dust 0.",
          "UV index 5.35 (moderate)."
        ].join("\n")
      )
      // The declared schema accepts it (and is a real check: a wrong type is refused).
      const tool = (yield* client.tools).find((t) => t.name === "get_air_quality")!
      const check = OutputSchema.make(tool.outputSchema!)
      assert.isUndefined(check(outcome.wire.structuredContent))
      assert.isDefined(check({ ...value, european_aqi: "fair" }))
      assert.isDefined(check({ ...value, pollutants_ug_m3: undefined }))
      // The engine checked it too and had nothing to say.
      assert.deepStrictEqual(logs.withTag("warning").slice(warningsBefore), [])
      // The text mirror is the same object.
      const content = outcome.wire.content as Array<{ type: string; text: string }>
      assert.strictEqual(content.length, 1)
      assert.deepStrictEqual(JSON.parse(content[0]!.text), outcome.wire.structuredContent)
    }))

  it.effect("get_air_quality with readings Open-Meteo lacks (null): still valid, shown as n/a", () =>
    Effect.gen(function*() {
      const { client, standIn } = yield* Weather
      standIn.reset()
      standIn.respond("air-quality", {
        kind: "json",
        json: {
          latitude: 10,
          longitude: 10,
          generationtime_ms: 0.2,
          utc_offset_seconds: 0,
          timezone: "GMT",
          timezone_abbreviation: "GMT",
          elevation: 300,
          current_units: {
            time: "iso8601",
            interval: "seconds",
            european_aqi: "EAQI",
            us_aqi: "USAQI",
            pm2_5: "μg/m³"
          },
          current: { time: CURRENT_HOUR, interval: 3600, european_aqi: null, us_aqi: 160, pm2_5: null, pm10: 40 }
        }
      })
      const outcome = yield* client.callTool("get_air_quality", { latitude: 10, longitude: 10 })
      const value = expectJson(outcome.result).value as Record<string, unknown>
      assert.strictEqual(value.european_aqi, null)
      assert.strictEqual(value.european_aqi_category, null)
      assert.strictEqual(value.us_aqi_category, "unhealthy")
      assert.deepStrictEqual(value.pollutants_ug_m3, {
        pm2_5: null,
        pm10: 40,
        ozone: null,
        nitrogen_dioxide: null,
        sulphur_dioxide: null,
        carbon_monoxide: null,
        dust: null
      })
      assert.include(value.summary as string, "🔴 Air quality in 10, 10 at")
      assert.include(value.summary as string, "European AQI n/a, US AQI 160 (unhealthy)")
      const tool = (yield* client.tools).find((t) => t.name === "get_air_quality")!
      assert.isUndefined(OutputSchema.make(tool.outputSchema!)(outcome.wire.structuredContent))
    }))

  it.effect("an unknown place is an Error text, and only the geocoding API was asked", () =>
    Effect.gen(function*() {
      const { standIn } = yield* Weather
      for (const tool of ["get_current_weather", "get_forecast", "get_air_quality"]) {
        const outcome = yield* call(tool, { location: "Atlantis" })
        expectError(outcome, `no place named "Atlantis" was found`)
        assert.deepStrictEqual(standIn.requests.map((r) => r.api), ["geocoding"], tool)
      }
      // A known name in another country is unknown too.
      expectError(yield* call("get_current_weather", { location: "Berlin, JP" }), `no place named "Berlin, JP"`)
      assert.strictEqual(standIn.requestsTo("geocoding")[0]!.params.countryCode, "JP")
      expectError(
        yield* call("get_current_weather", { location: "Springfield, Oregon" }),
        `no place named "Springfield, Oregon"`
      )
    }))

  it.effect("Open-Meteo's 400 {error, reason} answer is quoted in the Error text", () =>
    Effect.gen(function*() {
      const { client, standIn } = yield* Weather
      standIn.reset()
      standIn.respond("forecast", {
        kind: "json",
        status: 400,
        json: {
          reason: "Cannot initialize ForecastVariable from invalid String value foo for key current",
          error: true
        }
      })
      const outcome = yield* client.callTool("get_current_weather", { latitude: 1, longitude: 2 })
      const text = expectError(
        outcome,
        "the forecast API refused the request (HTTP 400): Cannot initialize ForecastVariable"
      )
      assert.notInclude(text, "\n")
      standIn.respond("geocoding", {
        kind: "json",
        status: 400,
        json: { error: true, reason: "Parameter count must be between 1 and 100." }
      })
      expectError(
        yield* client.callTool("get_air_quality", { location: "Berlin" }),
        "the geocoding API refused the request (HTTP 400): Parameter count"
      )
    }))

  it.effect("an HTTP 5xx with an HTML body, and a 200 that is not JSON, are Error texts", () =>
    Effect.gen(function*() {
      const { client, standIn } = yield* Weather
      standIn.reset()
      standIn.respond("air-quality", {
        kind: "answer",
        status: 502,
        body: "<html>Bad Gateway</html>",
        contentType: "text/html"
      })
      expectError(
        yield* client.callTool("get_air_quality", { latitude: 1, longitude: 2 }),
        "the air-quality API answered HTTP 502 Bad Gateway"
      )
      standIn.respond("air-quality", {
        kind: "answer",
        status: 200,
        body: "<html>captive portal</html>",
        contentType: "text/html"
      })
      expectError(
        yield* client.callTool("get_air_quality", { latitude: 1, longitude: 2 }),
        "the air-quality API answered something that is not a JSON object"
      )
      standIn.respond("forecast", { kind: "json", json: { latitude: 1, longitude: 2 } })
      expectError(
        yield* client.callTool("get_current_weather", { latitude: 1, longitude: 2 }),
        "the forecast API answered without a 'current' block"
      )
    }))

  it.effect("a dropped connection and an API that never answers are Error texts (the timeout is WEATHER_HTTP_TIMEOUT)", () =>
    Effect.gen(function*() {
      const { client, standIn } = yield* Weather
      standIn.reset()
      standIn.respond("forecast", { kind: "drop" })
      expectError(
        yield* client.callTool("get_forecast", { latitude: 1, longitude: 2 }),
        "could not reach the forecast API at http://127.0.0.1:"
      )
      standIn.respond("forecast", { kind: "hang" })
      expectError(
        yield* client.callTool("get_forecast", { latitude: 1, longitude: 2 }),
        "the forecast API did not answer within 1 s (WEATHER_HTTP_TIMEOUT)"
      )
    }))

  it.effect("bad arguments: neither or both ways of giving a place, a latitude out of range, days out of range", () =>
    Effect.gen(function*() {
      const { client, standIn } = yield* Weather
      standIn.reset()
      expectError(
        yield* client.callTool("get_current_weather", {}),
        "give a location name, or both latitude and longitude"
      )
      expectError(
        yield* client.callTool("get_current_weather", { latitude: 5 }),
        "give a location name, or both latitude and longitude"
      )
      expectError(yield* client.callTool("get_forecast", { location: "Berlin", latitude: 1, longitude: 2 }), "not both")
      expectError(yield* client.callTool("get_current_weather", { location: "B" }), "at least 2 characters")
      // Schema violations are refused by the SDK before the handler runs.
      for (
        const args of [{ latitude: 91, longitude: 0 }, { latitude: 1, longitude: 2, days: 17 }, {
          location: "Berlin",
          units: "kelvin"
        }]
      ) {
        const result = textOf(yield* client.callTool("get_forecast", args))
        assert.isTrue(result.isError, result.text)
        assert.include(result.text, "Input validation error")
      }
      // None of it reached Open-Meteo.
      assert.deepStrictEqual(standIn.requests, [])
    }))

  it.effect("status: endpoints, timeout, request counts with the last failure; probe asks each API", () =>
    Effect.gen(function*() {
      const { client, standIn } = yield* Weather
      standIn.reset()
      const first = textOf(yield* client.callTool("status", {}))
      assert.isFalse(first.isError)
      assert.include(first.text, `forecast API: ${standIn.env.WEATHER_FORECAST_URL}`)
      assert.include(first.text, `air-quality API: ${standIn.env.WEATHER_AIR_QUALITY_URL}`)
      assert.include(first.text, `geocoding API: ${standIn.env.WEATHER_GEOCODING_URL}`)
      assert.include(first.text, "HTTP timeout: 1 s")
      assert.include(first.text, "API key: none (free tier)")
      const counts = (text: string) => {
        const m = /requests so far: (\d+) \((\d+) ok, (\d+) failed\)/.exec(text)
        assert.isNotNull(m, text)
        return { total: Number(m![1]), ok: Number(m![2]), failed: Number(m![3]) }
      }
      const before = counts(first.text)
      assert.strictEqual(before.total, before.ok + before.failed)
      assert.deepStrictEqual(standIn.requests, [])

      // One good call (two requests) and one refused (one request).
      yield* client.callTool("get_current_weather", { location: "Tokyo" })
      standIn.respond("air-quality", {
        kind: "json",
        status: 400,
        json: { error: true, reason: "Latitude must be in range of -90 to 90°. Given: 91.0." }
      })
      yield* client.callTool("get_air_quality", { latitude: 1, longitude: 2 })
      const second = textOf(yield* client.callTool("status", {})).text
      assert.deepStrictEqual(counts(second), { total: before.total + 3, ok: before.ok + 2, failed: before.failed + 1 })
      assert.include(
        second,
        "last failure: the air-quality API refused the request (HTTP 400): Latitude must be in range"
      )

      standIn.reset()
      standIn.respond("geocoding", { kind: "answer", status: 503, body: "down" })
      const probed = textOf(yield* client.callTool("status", { probe: true })).text
      assert.include(probed, "probe forecast API: ok")
      assert.include(probed, "probe air-quality API: ok")
      assert.include(probed, "probe geocoding API: failed (the geocoding API answered HTTP 503 Service Unavailable)")
      assert.deepStrictEqual(standIn.requests.map((r) => r.api), ["forecast", "air-quality", "geocoding"])
    }))
})

describe("weather server, other settings", () => {
  it.scopedLive("WEATHER_API_KEY is sent as `apikey` on every request and shown nowhere", () =>
    Effect.gen(function*() {
      const key = "om-key-5b7c1e0f9a"
      const { client, standIn, logs } = yield* startHarness({ WEATHER_API_KEY: key })
      const outcome = yield* client.callTool("get_forecast", { location: "Berlin" })
      assert.isFalse(textOf(outcome).isError)
      assert.deepStrictEqual(standIn.requests.map((r) => r.params.apikey), [key, key])
      standIn.respond("forecast", { kind: "drop" })
      const failed = textOf(yield* client.callTool("get_forecast", { location: "Berlin" })).text
      const status = textOf(yield* client.callTool("status", {})).text
      assert.include(status, "API key: set (WEATHER_API_KEY)")
      for (const text of [textOf(outcome).text, failed, status, ...logs.lines.map((l) => l.text)]) {
        assert.notInclude(text, key)
      }
    }), { timeout: 60_000 })

  it.scopedLive("an API that is not listening: could not reach it", () =>
    Effect.gen(function*() {
      const port = yield* closedPort()
      const { client } = yield* startHarness({ WEATHER_GEOCODING_URL: `http://127.0.0.1:${port}/v1/search` })
      const text = expectError(
        yield* client.callTool("get_current_weather", { location: "Berlin" }),
        "could not reach the geocoding API"
      )
      assert.include(text, `127.0.0.1:${port}`)
      assert.include(text, "ECONNREFUSED")
    }), { timeout: 60_000 })

  it.effect("--help prints the tools and the environment variables and exits 0", () =>
    Effect.gen(function*() {
      const { code, stderr, stdout } = yield* runCli(["--help"])
      assert.strictEqual(code, 0, stderr)
      for (
        const word of [
          "get_current_weather",
          "get_forecast",
          "get_air_quality",
          "status",
          "WEATHER_FORECAST_URL",
          "WEATHER_AIR_QUALITY_URL",
          "WEATHER_GEOCODING_URL",
          "WEATHER_HTTP_TIMEOUT"
        ]
      ) {
        assert.include(stdout, word)
      }
    }), { timeout: 30_000 })

  it.effect("a bad setting or an unknown argument exits 2 saying what is wrong", () =>
    Effect.gen(function*() {
      const timeout = yield* runCli([], { WEATHER_HTTP_TIMEOUT: "soon" })
      assert.strictEqual(timeout.code, 2)
      assert.include(timeout.stderr, `WEATHER_HTTP_TIMEOUT must be a positive number of seconds, got "soon"`)
      const url = yield* runCli([], { WEATHER_FORECAST_URL: "ftp://127.0.0.1/forecast" })
      assert.strictEqual(url.code, 2)
      assert.include(url.stderr, "WEATHER_FORECAST_URL must be an http(s) URL")
      const arg = yield* runCli(["--verbose"])
      assert.strictEqual(arg.code, 2)
      assert.include(arg.stderr, `unknown argument "--verbose"`)
    }), { timeout: 60_000 })
})
