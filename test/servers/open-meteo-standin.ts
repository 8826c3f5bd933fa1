/**
 * A stand-in for the three Open-Meteo APIs the weather server uses, on 127.0.0.1 (port 0):
 *
 * - `GET /v1/forecast` (api.open-meteo.com): `current`, `hourly` and `daily` blocks, each with its
 *   `*_units` block, for the variables asked; `forecast_days`, `forecast_hours`, `timezone` and the
 *   `temperature_unit`/`wind_speed_unit`/`precipitation_unit` options.
 * - `GET /v1/air-quality` (air-quality-api.open-meteo.com): the `current` block.
 * - `GET /v1/search` (geocoding-api.open-meteo.com): the `results` array from a small gazetteer
 *   (prefix match on the name, `count`, `countryCode`); no match is an answer without `results`,
 *   as the real API does.
 *
 * It validates its parameters the way Open-Meteo does and answers a bad request with HTTP 400
 * `{"error": true, "reason": "…"}` (an unknown variable, a latitude out of range, `daily` without
 * `timezone`, …), so a server that sends the wrong query fails here too. Every request is recorded
 * with its query parameters. `respond(api, behaviour)` overrides an API's answers (an error
 * answer, a hang, a dropped connection, a given JSON body) until `reset()`.
 *
 * The data are made up but deterministic; the shapes are the real ones.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export type Api = "forecast" | "air-quality" | "geocoding"

export interface RecordedRequest {
  readonly api: Api | "unknown"
  readonly method: string
  readonly path: string
  readonly params: Readonly<Record<string, string>>
}

/** How an API answers instead of its normal self. */
export type Behaviour =
  | { readonly kind: "answer"; readonly status: number; readonly body: string; readonly contentType?: string }
  | { readonly kind: "json"; readonly status?: number; readonly json: unknown }
  | { readonly kind: "hang" }
  | { readonly kind: "drop" }

export interface StandIn {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
  /** The WEATHER_* variables pointing the weather server here. */
  readonly env: Readonly<Record<string, string>>
  readonly requests: Array<RecordedRequest>
  /** The recorded requests of one API. */
  readonly requestsTo: (api: Api) => Array<RecordedRequest>
  readonly respond: (api: Api, behaviour: Behaviour) => void
  /** Forgets the requests and the overrides. */
  readonly reset: () => void
  readonly close: () => Promise<void>
}

const PATHS: Record<string, Api> = {
  "/v1/forecast": "forecast",
  "/v1/air-quality": "air-quality",
  "/v1/search": "geocoding"
}

// --- the gazetteer ---------------------------------------------------------------------------

export interface GazetteerEntry {
  readonly id: number
  readonly name: string
  readonly latitude: number
  readonly longitude: number
  readonly elevation: number
  readonly feature_code: string
  readonly country_code: string
  readonly country: string
  readonly admin1: string
  readonly admin2?: string
  readonly timezone: string
  readonly population: number
}

/** Ordered by population, as the real API ranks its matches. */
export const GAZETTEER: ReadonlyArray<GazetteerEntry> = [
  {
    id: 1850147,
    name: "Tokyo",
    latitude: 35.6895,
    longitude: 139.69171,
    elevation: 44,
    feature_code: "PPLC",
    country_code: "JP",
    country: "Japan",
    admin1: "Tokyo",
    timezone: "Asia/Tokyo",
    population: 8336599
  },
  {
    id: 2950159,
    name: "Berlin",
    latitude: 52.52437,
    longitude: 13.41053,
    elevation: 74,
    feature_code: "PPLC",
    country_code: "DE",
    country: "Germany",
    admin1: "Land Berlin",
    timezone: "Europe/Berlin",
    population: 3426354
  },
  {
    id: 2988507,
    name: "Paris",
    latitude: 48.85341,
    longitude: 2.3488,
    elevation: 42,
    feature_code: "PPLC",
    country_code: "FR",
    country: "France",
    admin1: "Île-de-France",
    admin2: "Paris",
    timezone: "Europe/Paris",
    population: 2138551
  },
  {
    id: 4409896,
    name: "Springfield",
    latitude: 37.21533,
    longitude: -93.29824,
    elevation: 398,
    feature_code: "PPLA2",
    country_code: "US",
    country: "United States",
    admin1: "Missouri",
    admin2: "Greene",
    timezone: "America/Chicago",
    population: 169176
  },
  {
    id: 4951788,
    name: "Springfield",
    latitude: 42.10148,
    longitude: -72.58981,
    elevation: 21,
    feature_code: "PPLA2",
    country_code: "US",
    country: "United States",
    admin1: "Massachusetts",
    admin2: "Hampden",
    timezone: "America/New_York",
    population: 155929
  },
  {
    id: 4250542,
    name: "Springfield",
    latitude: 39.80172,
    longitude: -89.64371,
    elevation: 182,
    feature_code: "PPLA",
    country_code: "US",
    country: "United States",
    admin1: "Illinois",
    admin2: "Sangamon",
    timezone: "America/Chicago",
    population: 116565
  },
  {
    id: 4717560,
    name: "Paris",
    latitude: 33.66094,
    longitude: -95.55551,
    elevation: 183,
    feature_code: "PPLA2",
    country_code: "US",
    country: "United States",
    admin1: "Texas",
    admin2: "Lamar",
    timezone: "America/Chicago",
    population: 24782
  }
]

const TIMEZONES: Record<string, readonly [string, number]> = {
  GMT: ["GMT", 0],
  "Asia/Tokyo": ["JST", 32400],
  "Europe/Berlin": ["CEST", 7200],
  "Europe/Paris": ["CEST", 7200],
  "America/Chicago": ["CDT", -18000],
  "America/New_York": ["EDT", -14400]
}

// --- the data --------------------------------------------------------------------------------

/** The first day of every answer. */
export const FIRST_DAY = "2025-06-01"
export const CURRENT_TIME = "2025-06-01T14:15"
export const CURRENT_HOUR = "2025-06-01T14:00"

/** Metric values of the current block. */
export const CURRENT_VALUES: Readonly<Record<string, number>> = {
  temperature_2m: 18.3,
  relative_humidity_2m: 45,
  apparent_temperature: 17.1,
  is_day: 1,
  precipitation: 0.4,
  rain: 0.4,
  showers: 0,
  snowfall: 0,
  weather_code: 61,
  cloud_cover: 40,
  pressure_msl: 1015.2,
  surface_pressure: 1006.3,
  wind_speed_10m: 12.4,
  wind_direction_10m: 225,
  wind_gusts_10m: 25.2,
  precipitation_probability: 35,
  visibility: 24140,
  uv_index: 5.35
}

const DAILY_CODES = [0, 61, 95, 3, 71, 45, 2, 80, 1, 63, 0, 51, 3, 2, 1, 0]

/** Metric values of day `i` (0 = the first day). */
export const dailyValues = (i: number): Record<string, number | string> => {
  const date = addDays(FIRST_DAY, i)
  return {
    time: date,
    weather_code: DAILY_CODES[i % DAILY_CODES.length]!,
    temperature_2m_max: round(20 + i * 0.7, 1),
    temperature_2m_min: round(10 + i * 0.3, 1),
    precipitation_sum: [0, 3.2, 12.5, 0.1, 5][i % 5]!,
    precipitation_probability_max: [0, 60, 90, 10, 75][i % 5]!,
    wind_speed_10m_max: round(15 + i, 1),
    wind_gusts_10m_max: round(30 + i, 1),
    uv_index_max: round(6 + (i % 3) * 0.5, 2),
    sunrise: `${date}T05:${String(2 + (i % 10)).padStart(2, "0")}`,
    sunset: `${date}T21:${String(30 - (i % 10)).padStart(2, "0")}`
  }
}

/** Metric values of hour `i` (0 = the current hour). */
export const hourlyValues = (i: number): Record<string, number | string> => ({
  time: addHours(CURRENT_HOUR, i),
  temperature_2m: round(18 - i * 0.4, 1),
  relative_humidity_2m: 45 + (i % 20),
  apparent_temperature: round(17 - i * 0.4, 1),
  is_day: i < 7 ? 1 : 0,
  precipitation: i % 4 === 1 ? 0.3 : 0,
  rain: i % 4 === 1 ? 0.3 : 0,
  showers: 0,
  snowfall: 0,
  weather_code: [2, 61, 3, 0][i % 4]!,
  cloud_cover: (i * 10) % 100,
  pressure_msl: 1015,
  surface_pressure: 1006,
  wind_speed_10m: round(10 + i * 0.5, 1),
  wind_direction_10m: (200 + i * 5) % 360,
  wind_gusts_10m: round(20 + i, 1),
  precipitation_probability: (i * 15) % 100,
  visibility: 24140,
  uv_index: i < 5 ? 3 : 0
})

export const AIR_VALUES: Readonly<Record<string, number>> = {
  european_aqi: 23,
  us_aqi: 35,
  pm10: 8.2,
  pm2_5: 5.1,
  carbon_monoxide: 160,
  nitrogen_dioxide: 12.4,
  sulphur_dioxide: 1.3,
  ozone: 70,
  dust: 0,
  uv_index: 5.35,
  uv_index_clear_sky: 6.1,
  ammonia: 2.1,
  aerosol_optical_depth: 0.12
}

const AIR_UNITS: Record<string, string> = {
  european_aqi: "EAQI",
  us_aqi: "USAQI",
  uv_index: "",
  uv_index_clear_sky: "",
  aerosol_optical_depth: ""
}

const FORECAST_VARIABLES = new Set(Object.keys(CURRENT_VALUES))
const DAILY_VARIABLES = new Set(Object.keys(dailyValues(0)).filter((k) => k !== "time"))

function round(x: number, digits: number): number {
  const f = 10 ** digits
  return Math.round(x * f) / f
}

function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + days)
  return d.toISOString().slice(0, 10)
}

function addHours(time: string, hours: number): string {
  const d = new Date(`${time}:00Z`)
  d.setUTCHours(d.getUTCHours() + hours)
  return d.toISOString().slice(0, 16)
}

// --- unit conversion -------------------------------------------------------------------------

interface Units {
  readonly temperature: "celsius" | "fahrenheit"
  readonly windSpeed: "kmh" | "ms" | "mph" | "kn"
  readonly precipitation: "mm" | "inch"
}

const TEMPERATURE = /^(temperature_2m|apparent_temperature)/
const WIND = /^wind_(speed|gusts)_10m/
const PRECIPITATION = /^(precipitation(_sum)?|rain|showers)$/

const unitOf = (variable: string, units: Units): string => {
  if (variable === "time" || variable === "sunrise" || variable === "sunset") return "iso8601"
  if (variable === "interval") return "seconds"
  if (TEMPERATURE.test(variable)) return units.temperature === "celsius" ? "°C" : "°F"
  if (WIND.test(variable)) return { kmh: "km/h", ms: "m/s", mph: "mp/h", kn: "kn" }[units.windSpeed]
  if (PRECIPITATION.test(variable)) return units.precipitation
  if (variable === "snowfall") return units.precipitation === "mm" ? "cm" : "inch"
  if (
    variable.startsWith("relative_humidity") || variable.startsWith("cloud_cover") ||
    variable.startsWith("precipitation_probability")
  ) return "%"
  if (variable.startsWith("pressure") || variable === "surface_pressure") return "hPa"
  if (variable === "wind_direction_10m") return "°"
  if (variable === "weather_code") return "wmo code"
  if (variable === "visibility") return units.precipitation === "mm" ? "m" : "ft"
  return ""
}

const convert = (variable: string, value: number | string, units: Units): number | string => {
  if (typeof value === "string") return value
  if (TEMPERATURE.test(variable) && units.temperature === "fahrenheit") return round(value * 9 / 5 + 32, 1)
  if (WIND.test(variable)) {
    if (units.windSpeed === "mph") return round(value / 1.609344, 1)
    if (units.windSpeed === "ms") return round(value / 3.6, 1)
    if (units.windSpeed === "kn") return round(value / 1.852, 1)
  }
  if (PRECIPITATION.test(variable) && units.precipitation === "inch") return round(value / 25.4, 3)
  return value
}

// --- validation (Open-Meteo's 400 answers) --------------------------------------------------------

class BadRequest extends Error {}

const coordinate = (params: URLSearchParams, key: "latitude" | "longitude"): number => {
  const raw = params.get(key)
  const value = raw === null ? NaN : Number(raw)
  if (raw === null || raw.trim() === "" || !Number.isFinite(value)) {
    throw new BadRequest(`Value of type 'Float' required for key '${key}'.`)
  }
  const limit = key === "latitude" ? 90 : 180
  if (value < -limit || value > limit) {
    throw new BadRequest(
      `${key === "latitude" ? "Latitude" : "Longitude"} must be in range of -${limit} to ${limit}°. Given: ${
        value.toFixed(1)
      }.`
    )
  }
  return value
}

const variables = (
  params: URLSearchParams,
  key: string,
  known: Set<string>,
  type: string
): Array<string> | undefined => {
  const raw = params.get(key)
  if (raw === null) return undefined
  const list = raw.split(",").map((v) => v.trim()).filter((v) => v !== "")
  for (const v of list) {
    if (!known.has(v)) throw new BadRequest(`Cannot initialize ${type} from invalid String value ${v} for key ${key}`)
  }
  return list
}

const option = <A extends string>(
  params: URLSearchParams,
  key: string,
  allowed: ReadonlyArray<A>,
  type: string,
  fallback: A
): A => {
  const raw = params.get(key)
  if (raw === null) return fallback
  if (!(allowed as ReadonlyArray<string>).includes(raw)) {
    throw new BadRequest(`Cannot initialize ${type} from invalid String value ${raw} for key ${key}`)
  }
  return raw as A
}

const integer = (
  params: URLSearchParams,
  key: string,
  min: number,
  max: number,
  fallback: number,
  what: string
): number => {
  const raw = params.get(key)
  if (raw === null) return fallback
  const value = Number(raw)
  if (!Number.isInteger(value)) throw new BadRequest(`Value of type 'Int' required for key '${key}'.`)
  if (value < min || value > max) throw new BadRequest(`${what} is invalid. Allowed range ${min} to ${max}.`)
  return value
}

/** `timezone=auto` resolves to the place's zone when the coordinates are a gazetteer place. */
const timezoneOf = (params: URLSearchParams, latitude: number, longitude: number): string => {
  const raw = params.get("timezone")
  if (raw === null) return "GMT"
  if (raw === "auto") {
    const near = GAZETTEER.find((g) => Math.abs(g.latitude - latitude) < 0.5 && Math.abs(g.longitude - longitude) < 0.5)
    return near?.timezone ?? "GMT"
  }
  if (TIMEZONES[raw] === undefined) throw new BadRequest(`Invalid timezone`)
  return raw
}

const header = (latitude: number, longitude: number, timezone: string) => {
  const [abbreviation, offset] = TIMEZONES[timezone] ?? ["GMT", 0]
  return {
    // Snapped to the model grid, as the real API does.
    latitude: round(Math.round(latitude * 10) / 10, 6),
    longitude: round(Math.round(longitude * 10) / 10, 6),
    generationtime_ms: 0.0429153442382812,
    utc_offset_seconds: offset,
    timezone,
    timezone_abbreviation: abbreviation,
    elevation: 38
  }
}

const forecast = (params: URLSearchParams): unknown => {
  const latitude = coordinate(params, "latitude")
  const longitude = coordinate(params, "longitude")
  const current = variables(params, "current", FORECAST_VARIABLES, "ForecastVariable")
  const hourly = variables(params, "hourly", FORECAST_VARIABLES, "ForecastVariable")
  const daily = variables(params, "daily", DAILY_VARIABLES, "ForecastVariableDaily")
  const units: Units = {
    temperature: option(params, "temperature_unit", ["celsius", "fahrenheit"], "TemperatureUnit", "celsius"),
    windSpeed: option(params, "wind_speed_unit", ["kmh", "ms", "mph", "kn"], "WindspeedUnit", "kmh"),
    precipitation: option(params, "precipitation_unit", ["mm", "inch"], "PrecipitationUnit", "mm")
  }
  const days = integer(params, "forecast_days", 0, 16, 7, "Forecast days")
  const hours = params.has("forecast_hours")
    ? integer(params, "forecast_hours", 1, 16 * 24, 0, "Forecast hours")
    : days * 24
  if (daily !== undefined && params.get("timezone") === null) throw new BadRequest("Timezone is required")
  const timezone = timezoneOf(params, latitude, longitude)
  const out: Record<string, unknown> = header(latitude, longitude, timezone)
  const unitsBlock = (list: ReadonlyArray<string>, extra: ReadonlyArray<string>) =>
    Object.fromEntries([...extra, ...list].map((v) => [v, unitOf(v, units)]))
  if (current !== undefined) {
    out.current_units = unitsBlock(current, ["time", "interval"])
    out.current = Object.fromEntries([
      ["time", CURRENT_TIME],
      ["interval", 900],
      ...current.map((v) => [v, convert(v, CURRENT_VALUES[v]!, units)])
    ])
  }
  if (hourly !== undefined) {
    const rows = Array.from({ length: hours }, (_, i) => hourlyValues(i))
    out.hourly_units = unitsBlock(hourly, ["time"])
    out.hourly = Object.fromEntries(["time", ...hourly].map((v) => [v, rows.map((r) => convert(v, r[v]!, units))]))
  }
  if (daily !== undefined) {
    const rows = Array.from({ length: days }, (_, i) => dailyValues(i))
    out.daily_units = unitsBlock(daily, ["time"])
    out.daily = Object.fromEntries(["time", ...daily].map((v) => [v, rows.map((r) => convert(v, r[v]!, units))]))
  }
  return out
}

const airQuality = (params: URLSearchParams): unknown => {
  const latitude = coordinate(params, "latitude")
  const longitude = coordinate(params, "longitude")
  const current = variables(params, "current", new Set(Object.keys(AIR_VALUES)), "CamsVariable")
  const timezone = timezoneOf(params, latitude, longitude)
  const out: Record<string, unknown> = header(latitude, longitude, timezone)
  if (current !== undefined) {
    out.current_units = Object.fromEntries([
      ["time", "iso8601"],
      ["interval", "seconds"],
      ...current.map((v) => [v, AIR_UNITS[v] ?? "μg/m³"])
    ])
    out.current = Object.fromEntries([
      ["time", CURRENT_HOUR],
      ["interval", 3600],
      ...current.map((v) => [v, AIR_VALUES[v]!])
    ])
  }
  return out
}

const search = (params: URLSearchParams): unknown => {
  const name = params.get("name")
  if (name === null) throw new BadRequest("Parameter 'name' is required")
  const count = integer(params, "count", 1, 100, 10, "Parameter count")
  const format = params.get("format")
  if (format !== null && format !== "json" && format !== "protobuf") throw new BadRequest(`Invalid format ${format}`)
  const countryCode = params.get("countryCode")
  const wanted = name.trim().toLowerCase()
  const matches = wanted.length < 2
    ? []
    : GAZETTEER.filter((g) => g.name.toLowerCase().startsWith(wanted))
      .filter((g) => countryCode === null || g.country_code === countryCode.toUpperCase())
      .slice(0, count)
  const out: Record<string, unknown> = {}
  // No match: the real API leaves `results` out altogether.
  if (matches.length > 0) {
    out.results = matches.map((g) => ({
      id: g.id,
      name: g.name,
      latitude: g.latitude,
      longitude: g.longitude,
      elevation: g.elevation,
      feature_code: g.feature_code,
      country_code: g.country_code,
      timezone: g.timezone,
      population: g.population,
      country: g.country,
      admin1: g.admin1,
      ...(g.admin2 !== undefined ? { admin2: g.admin2 } : {})
    }))
  }
  out.generationtime_ms = 0.61035156
  return out
}

const HANDLERS: Record<Api, (params: URLSearchParams) => unknown> = {
  forecast,
  "air-quality": airQuality,
  geocoding: search
}

// --- the server ------------------------------------------------------------------------------

export const startOpenMeteoStandIn = async (): Promise<StandIn> => {
  const requests: Array<RecordedRequest> = []
  const overrides = new Map<Api, Behaviour>()

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    const api = PATHS[url.pathname]
    requests.push({
      api: api ?? "unknown",
      method: req.method ?? "",
      path: url.pathname,
      params: Object.fromEntries(url.searchParams)
    })
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { "content-type": "application/json; charset=utf-8" })
      res.end(JSON.stringify(value))
    }
    if (api === undefined) return json(404, { error: true, reason: "Not Found" })
    if (req.method !== "GET") return json(405, { error: true, reason: "Method Not Allowed" })
    const override = overrides.get(api)
    if (override !== undefined) {
      switch (override.kind) {
        case "hang":
          return
        case "drop":
          return req.socket.destroy()
        case "json":
          return json(override.status ?? 200, override.json)
        case "answer":
          res.writeHead(override.status, { "content-type": override.contentType ?? "text/plain; charset=utf-8" })
          return res.end(override.body)
      }
    }
    try {
      json(200, HANDLERS[api](url.searchParams))
    } catch (error) {
      if (error instanceof BadRequest) return json(400, { reason: error.message, error: true })
      json(500, { error: true, reason: String(error) })
    }
  })

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  const origin = `http://127.0.0.1:${port}`
  return {
    origin,
    env: {
      WEATHER_FORECAST_URL: `${origin}/v1/forecast`,
      WEATHER_AIR_QUALITY_URL: `${origin}/v1/air-quality`,
      WEATHER_GEOCODING_URL: `${origin}/v1/search`
    },
    requests,
    requestsTo: (api) => requests.filter((r) => r.api === api),
    respond: (api, behaviour) => void overrides.set(api, behaviour),
    reset: () => {
      requests.length = 0
      overrides.clear()
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
