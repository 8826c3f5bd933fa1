/**
 * The weather MCP server (stdio): current conditions, forecasts and air quality from Open-Meteo
 * (no account needed), for a place given by name (geocoded) or by latitude/longitude.
 *
 * - `get_current_weather`, `get_forecast`, `status`: plain text.
 * - `get_air_quality`: structured — a declared `outputSchema`, `structuredContent` (a
 *   human-readable `summary` plus `european_aqi`, `us_aqi`, `pollutants_ug_m3`, …) and its JSON
 *   as the text mirror.
 * - Every failure (unknown place, an HTTP error answer, no network, the timeout) is a plain
 *   `Error: …` text result with `isError: true`.
 *
 * Run: `node --import tsx scripts/weather-server.ts` (`--help` for the environment variables).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { z } from "zod"
import { compass, describeWeather, europeanBand, usBand, uvBand, withUnit } from "./weather/format.js"
import {
  block,
  coordinates,
  DEFAULT_URLS,
  displayUrl,
  endpointsFromEnv,
  ENV,
  geocode,
  getJson,
  makeStats,
  num,
  type Place,
  placeLabel,
  series,
  str,
  units,
  WeatherError
} from "./weather/open-meteo.js"

const NAME = "weather"
const VERSION = "1.0.0"

const HELP = `Usage: node --import tsx scripts/weather-server.ts [--help]

A stdio MCP server with weather tools backed by Open-Meteo (https://open-meteo.com):
  get_current_weather  current conditions            {location | latitude+longitude, units?}
  get_forecast         daily (and hourly) forecast   {location | latitude+longitude, days?, hours?, units?}
  get_air_quality      air quality, structured       {location | latitude+longitude}
  status               endpoints and request counts  {probe?}

Environment:
  ${ENV.forecast}     forecast API (default ${DEFAULT_URLS.forecast})
  ${ENV.airQuality}  air-quality API (default ${DEFAULT_URLS.airQuality})
  ${ENV.geocoding}    geocoding API (default ${DEFAULT_URLS.geocoding})
  ${ENV.timeout}     seconds to wait for each HTTP answer (default 10)
  ${ENV.apiKey}          Open-Meteo commercial API key, sent as 'apikey' (optional)
`

// --- command line --------------------------------------------------------------------------

const argv = process.argv.slice(2)
if (argv.includes("--help") || argv.includes("-h")) {
  process.stdout.write(HELP)
  process.exit(0)
}
if (argv.length > 0) {
  process.stderr.write(`weather-server: unknown argument ${JSON.stringify(argv[0])}; try --help\n`)
  process.exit(2)
}

let endpoints: ReturnType<typeof endpointsFromEnv>
try {
  endpoints = endpointsFromEnv()
} catch (error) {
  process.stderr.write(`weather-server: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(2)
}
const stats = makeStats()

// --- shared pieces ---------------------------------------------------------------------------

const text = (value: string, isError = false): CallToolResult =>
  isError ? { content: [{ type: "text", text: value }], isError: true } : { content: [{ type: "text", text: value }] }

const failure = (error: unknown): CallToolResult => {
  if (error instanceof WeatherError) return text(`Error: ${error.message}`, true)
  // Not ours: say so without a stack trace.
  process.stderr.write(
    `weather-server: unexpected failure: ${error instanceof Error ? error.message : String(error)}\n`
  )
  return text(`Error: unexpected failure (${error instanceof Error ? error.message : String(error)})`, true)
}

const locationArgs = {
  location: z.string().min(1).max(200).optional()
    .describe("Place name, e.g. \"Berlin\", \"Paris, FR\" (ISO country code) or \"Springfield, Missouri\""),
  latitude: z.number().min(-90).max(90).optional().describe(
    "Latitude in degrees (with longitude, instead of location)"
  ),
  longitude: z.number().min(-180).max(180).optional().describe(
    "Longitude in degrees (with latitude, instead of location)"
  )
}

const unitsArg = z.enum(["metric", "imperial"]).optional()
  .describe("metric (°C, km/h, mm; the default) or imperial (°F, mph, inch)")

type LocationArgs = { location?: string | undefined; latitude?: number | undefined; longitude?: number | undefined }

/** The place asked for: geocoded by name, or the coordinates as given. */
const resolve = async (args: LocationArgs, signal: AbortSignal): Promise<Place> => {
  const hasCoordinates = args.latitude !== undefined || args.longitude !== undefined
  if (args.location !== undefined && hasCoordinates) {
    throw new WeatherError("give either a location name or latitude and longitude, not both")
  }
  if (args.location !== undefined) return geocode(endpoints, stats, args.location, signal)
  if (args.latitude === undefined || args.longitude === undefined) {
    throw new WeatherError("give a location name, or both latitude and longitude")
  }
  return { name: coordinates(args.latitude, args.longitude), latitude: args.latitude, longitude: args.longitude }
}

/** "Berlin, Land Berlin, Germany (52.52, 13.405)" or just the coordinates. */
const where = (place: Place): string => {
  const coords = coordinates(place.latitude, place.longitude)
  const label = placeLabel(place)
  return label === coords ? coords : `${label} (${coords})`
}

const unitParams = (system: "metric" | "imperial" | undefined): Record<string, string> =>
  system === "imperial" ? { temperature_unit: "fahrenheit", wind_speed_unit: "mph", precipitation_unit: "inch" } : {}

const position = (place: Place) => ({ latitude: String(place.latitude), longitude: String(place.longitude) })

// --- the server ------------------------------------------------------------------------------

const server = new McpServer({ name: NAME, version: VERSION }, { capabilities: { tools: {} } })

const CURRENT = [
  "temperature_2m",
  "relative_humidity_2m",
  "apparent_temperature",
  "is_day",
  "precipitation",
  "weather_code",
  "cloud_cover",
  "pressure_msl",
  "wind_speed_10m",
  "wind_direction_10m",
  "wind_gusts_10m"
]

server.registerTool(
  "get_current_weather",
  {
    title: "Current weather",
    description:
      "Current weather conditions (temperature, feels-like, humidity, wind, precipitation, clouds, pressure) "
      + "for a place name or latitude/longitude.",
    inputSchema: { ...locationArgs, units: unitsArg },
    annotations: { readOnlyHint: true, openWorldHint: true }
  },
  async (args, extra) => {
    try {
      const place = await resolve(args, extra.signal)
      const json = await getJson(endpoints, stats, "forecast", endpoints.forecast, {
        ...position(place),
        current: CURRENT.join(","),
        timezone: "auto",
        ...unitParams(args.units)
      }, extra.signal)
      const now = block(json, "current", "forecast")
      const u = units(json, "current")
      const v = (key: string) => withUnit(num(now[key]), u[key])
      const direction = num(now.wind_direction_10m)
      const lines = [
        `Current weather in ${where(place)} at ${str(now.time) ?? "an unknown time"} (${str(json.timezone) ?? "GMT"}):`,
        `${describeWeather(num(now.weather_code))}, ${v("temperature_2m")} (feels like ${v("apparent_temperature")})`
        + (num(now.is_day) === 0 ? ", night" : ""),
        `Humidity ${v("relative_humidity_2m")}, cloud cover ${v("cloud_cover")}, pressure ${v("pressure_msl")}`,
        `Wind ${v("wind_speed_10m")}${direction === null ? "" : ` from ${compass(direction)} (${direction}°)`}, gusts ${
          v("wind_gusts_10m")
        }`,
        `Precipitation ${v("precipitation")}`
      ]
      return text(lines.join("\n"))
    } catch (error) {
      return failure(error)
    }
  }
)

const DAILY = [
  "weather_code",
  "temperature_2m_max",
  "temperature_2m_min",
  "precipitation_sum",
  "precipitation_probability_max",
  "wind_speed_10m_max",
  "sunrise",
  "sunset"
]
const HOURLY = ["temperature_2m", "precipitation_probability", "weather_code", "wind_speed_10m"]

/** "05:32" from "2025-06-01T05:32". */
const clock = (iso: unknown): string => {
  const s = str(iso)
  return s === undefined ? "n/a" : s.includes("T") ? s.slice(s.indexOf("T") + 1) : s
}

server.registerTool(
  "get_forecast",
  {
    title: "Weather forecast",
    description: "Daily forecast (conditions, min/max temperature, precipitation, wind, sunrise/sunset) for 1-16 days, "
      + "optionally with the next hours one by one, for a place name or latitude/longitude.",
    inputSchema: {
      ...locationArgs,
      days: z.number().int().min(1).max(16).optional().describe("Days to forecast, today included (1-16, default 3)"),
      hours: z.number().int().min(0).max(168).optional().describe("Also list the next N hours (0-168, default 0)"),
      units: unitsArg
    },
    annotations: { readOnlyHint: true, openWorldHint: true }
  },
  async (args, extra) => {
    try {
      const place = await resolve(args, extra.signal)
      const days = args.days ?? 3
      const hours = args.hours ?? 0
      const json = await getJson(endpoints, stats, "forecast", endpoints.forecast, {
        ...position(place),
        daily: DAILY.join(","),
        forecast_days: String(days),
        ...(hours > 0 ? { hourly: HOURLY.join(","), forecast_hours: String(hours) } : {}),
        timezone: "auto",
        ...unitParams(args.units)
      }, extra.signal)
      const daily = block(json, "daily", "forecast")
      const du = units(json, "daily")
      const lines = [`${days}-day forecast for ${where(place)} (${str(json.timezone) ?? "GMT"}):`]
      const dates = series(daily, "time")
      dates.forEach((date, i) => {
        const at = (key: string) => num(series(daily, key)[i])
        const probability = at("precipitation_probability_max")
        lines.push(
          `${str(date) ?? "?"}: ${describeWeather(at("weather_code"))}, `
            + `${withUnit(at("temperature_2m_min"), du.temperature_2m_min)} to ${
              withUnit(at("temperature_2m_max"), du.temperature_2m_max)
            }, `
            + `precipitation ${withUnit(at("precipitation_sum"), du.precipitation_sum)}`
            + (probability === null ? "" : ` (${withUnit(probability, du.precipitation_probability_max)} chance)`)
            + `, wind up to ${withUnit(at("wind_speed_10m_max"), du.wind_speed_10m_max)}`
            + `, sunrise ${clock(series(daily, "sunrise")[i])}, sunset ${clock(series(daily, "sunset")[i])}`
        )
      })
      if (dates.length === 0) lines.push("(no days in the answer)")
      if (hours > 0) {
        const hourly = block(json, "hourly", "forecast")
        const hu = units(json, "hourly")
        lines.push("", `Next ${hours} hours:`)
        series(hourly, "time").forEach((time, i) => {
          const at = (key: string) => num(series(hourly, key)[i])
          lines.push(
            `${str(time) ?? "?"}: ${withUnit(at("temperature_2m"), hu.temperature_2m)}, ${
              describeWeather(at("weather_code"))
            }, `
              + `precipitation ${withUnit(at("precipitation_probability"), hu.precipitation_probability)} chance, `
              + `wind ${withUnit(at("wind_speed_10m"), hu.wind_speed_10m)}`
          )
        })
      }
      return text(lines.join("\n"))
    } catch (error) {
      return failure(error)
    }
  }
)

const POLLUTANTS = ["pm2_5", "pm10", "ozone", "nitrogen_dioxide", "sulphur_dioxide", "carbon_monoxide", "dust"] as const
const AIR = ["european_aqi", "us_aqi", ...POLLUTANTS, "uv_index"]
const POLLUTANT_LABEL: Record<(typeof POLLUTANTS)[number], string> = {
  pm2_5: "PM2.5",
  pm10: "PM10",
  ozone: "O₃",
  nitrogen_dioxide: "NO₂",
  sulphur_dioxide: "SO₂",
  carbon_monoxide: "CO",
  dust: "dust"
}

const reading = z.number().nullable()
const airQualityOutput = {
  summary: z.string().describe("Human-readable summary (the same facts as the fields below)"),
  location: z.object({
    name: z.string(),
    latitude: z.number(),
    longitude: z.number(),
    country: z.string().optional(),
    timezone: z.string().optional()
  }),
  time: z.string().describe("Local time of the reading (ISO 8601, no offset; see location.timezone)"),
  european_aqi: reading.describe("European AQI (EEA), 0-100+; null when unavailable"),
  european_aqi_category: z.string().nullable(),
  us_aqi: reading.describe("US AQI (EPA), 0-500; null when unavailable"),
  us_aqi_category: z.string().nullable(),
  pollutants_ug_m3: z.object({
    pm2_5: reading,
    pm10: reading,
    ozone: reading,
    nitrogen_dioxide: reading,
    sulphur_dioxide: reading,
    carbon_monoxide: reading,
    dust: reading
  }).describe("Concentrations in μg/m³; null when unavailable"),
  uv_index: reading,
  uv_category: z.string().nullable(),
  source: z.string()
}

server.registerTool(
  "get_air_quality",
  {
    title: "Air quality",
    description: "Current air quality (European and US AQI, PM2.5, PM10, ozone, NO₂, SO₂, CO, dust, UV index) "
      + "for a place name or latitude/longitude, as structured data with a summary.",
    inputSchema: locationArgs,
    outputSchema: airQualityOutput,
    annotations: { readOnlyHint: true, openWorldHint: true }
  },
  async (args, extra) => {
    try {
      const place = await resolve(args, extra.signal)
      const json = await getJson(endpoints, stats, "air-quality", endpoints.airQuality, {
        ...position(place),
        current: AIR.join(","),
        timezone: "auto"
      }, extra.signal)
      const now = block(json, "current", "air-quality")
      const pollutants = Object.fromEntries(POLLUTANTS.map((p) => [p, num(now[p])])) as Record<
        (typeof POLLUTANTS)[number],
        number | null
      >
      const european = num(now.european_aqi)
      const us = num(now.us_aqi)
      const uv = num(now.uv_index)
      const eu = europeanBand(european)
      const usb = usBand(us)
      const time = str(now.time) ?? ""
      const timezone = str(json.timezone) ?? place.timezone
      const headline = eu ?? usb
      const summary = [
        `${headline?.emoji ?? "❔"} Air quality in ${where(place)}${time === "" ? "" : ` at ${time}`}: `
        + `European AQI ${european ?? "n/a"}${eu === null ? "" : ` (${eu.category})`}, `
        + `US AQI ${us ?? "n/a"}${usb === null ? "" : ` (${usb.category})`}.`,
        `Pollutants (μg/m³): ${POLLUTANTS.map((p) => `${POLLUTANT_LABEL[p]} ${pollutants[p] ?? "n/a"}`).join(", ")}.`,
        `UV index ${uv ?? "n/a"}${uv === null ? "" : ` (${uvBand(uv)})`}.`
      ].join("\n")
      const structured = {
        summary,
        location: {
          name: placeLabel(place),
          latitude: place.latitude,
          longitude: place.longitude,
          ...(place.country !== undefined ? { country: place.country } : {}),
          ...(timezone !== undefined ? { timezone } : {})
        },
        time,
        european_aqi: european,
        european_aqi_category: eu?.category ?? null,
        us_aqi: us,
        us_aqi_category: usb?.category ?? null,
        pollutants_ug_m3: pollutants,
        uv_index: uv,
        uv_category: uvBand(uv),
        source: "Open-Meteo Air Quality API (CAMS)"
      }
      // The spec's text mirror: the same object serialized.
      return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured }
    } catch (error) {
      return failure(error)
    }
  }
)

server.registerTool(
  "status",
  {
    title: "Weather server status",
    description: "The endpoints in use, the HTTP timeout and how many requests succeeded or failed; "
      + "with probe=true, also checks that each API answers.",
    inputSchema: { probe: z.boolean().optional().describe("Also send a tiny request to each API") },
    annotations: { readOnlyHint: true, openWorldHint: true }
  },
  async ({ probe }, extra) => {
    const lines = [
      `${NAME} MCP server ${VERSION} (data: Open-Meteo, https://open-meteo.com)`,
      `forecast API: ${displayUrl(endpoints.forecast)}`,
      `air-quality API: ${displayUrl(endpoints.airQuality)}`,
      `geocoding API: ${displayUrl(endpoints.geocoding)}`,
      `HTTP timeout: ${endpoints.timeoutMs / 1000} s`,
      `API key: ${endpoints.apiKey === undefined ? "none (free tier)" : `set (${ENV.apiKey})`}`,
      `requests so far: ${stats.ok + stats.failed} (${stats.ok} ok, ${stats.failed} failed)`
      + (stats.lastFailure === undefined ? "" : `; last failure: ${stats.lastFailure}`)
    ]
    if (probe === true) {
      const check = async (label: string, run: () => Promise<unknown>) => {
        try {
          await run()
          return `probe ${label}: ok`
        } catch (error) {
          return `probe ${label}: failed (${error instanceof WeatherError ? error.message : String(error)})`
        }
      }
      const origin = { latitude: "0", longitude: "0" }
      lines.push(
        await check(
          "forecast API",
          () =>
            getJson(
              endpoints,
              stats,
              "forecast",
              endpoints.forecast,
              { ...origin, current: "temperature_2m" },
              extra.signal
            )
        ),
        await check(
          "air-quality API",
          () =>
            getJson(
              endpoints,
              stats,
              "air-quality",
              endpoints.airQuality,
              { ...origin, current: "european_aqi" },
              extra.signal
            )
        ),
        await check(
          "geocoding API",
          () =>
            getJson(endpoints, stats, "geocoding", endpoints.geocoding, {
              name: "Berlin",
              count: "1",
              language: "en",
              format: "json"
            }, extra.signal)
        )
      )
    }
    return text(lines.join("\n"))
  }
)

await server.connect(new StdioServerTransport())
process.stderr.write(`weather-server ${VERSION} ready (forecast API ${displayUrl(endpoints.forecast)})\n`)
// Exit when the client closes our stdin (the SDK's transport does not exit by itself).
process.stdin.on("end", () => process.exit(0))
