/**
 * A small Open-Meteo client for the weather server: the forecast, air-quality and geocoding APIs
 * over global `fetch`, each request with its own timeout, and every failure turned into a
 * `WeatherError` whose message a user can act on (never carrying the API key).
 */

/** Where the APIs live and how long to wait for them. */
export interface Endpoints {
  readonly forecast: URL
  readonly airQuality: URL
  readonly geocoding: URL
  readonly timeoutMs: number
  /** Open-Meteo's commercial `apikey` parameter, sent on every request when set. */
  readonly apiKey: string | undefined
}

export const DEFAULT_URLS = {
  forecast: "https://api.open-meteo.com/v1/forecast",
  airQuality: "https://air-quality-api.open-meteo.com/v1/air-quality",
  geocoding: "https://geocoding-api.open-meteo.com/v1/search"
} as const

export const ENV = {
  forecast: "WEATHER_FORECAST_URL",
  airQuality: "WEATHER_AIR_QUALITY_URL",
  geocoding: "WEATHER_GEOCODING_URL",
  timeout: "WEATHER_HTTP_TIMEOUT",
  apiKey: "WEATHER_API_KEY"
} as const

const DEFAULT_TIMEOUT_SECONDS = 10

/** Reads the endpoints from the environment; throws with a message naming the bad variable. */
export const endpointsFromEnv = (env: NodeJS.ProcessEnv = process.env): Endpoints => {
  const url = (name: string, fallback: string): URL => {
    const raw = env[name]?.trim() || fallback
    let parsed: URL
    try {
      parsed = new URL(raw)
    } catch {
      throw new Error(`${name} is not a URL: ${JSON.stringify(raw)}`)
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new Error(`${name} must be an http(s) URL, got ${parsed.protocol}`)
    }
    return parsed
  }
  const rawTimeout = env[ENV.timeout]?.trim()
  let timeoutMs = DEFAULT_TIMEOUT_SECONDS * 1000
  if (rawTimeout !== undefined && rawTimeout !== "") {
    const seconds = Number(rawTimeout)
    if (!Number.isFinite(seconds) || seconds <= 0) {
      throw new Error(`${ENV.timeout} must be a positive number of seconds, got ${JSON.stringify(rawTimeout)}`)
    }
    timeoutMs = Math.max(1, Math.round(seconds * 1000))
  }
  const apiKey = env[ENV.apiKey]?.trim()
  return {
    forecast: url(ENV.forecast, DEFAULT_URLS.forecast),
    airQuality: url(ENV.airQuality, DEFAULT_URLS.airQuality),
    geocoding: url(ENV.geocoding, DEFAULT_URLS.geocoding),
    timeoutMs,
    apiKey: apiKey === undefined || apiKey === "" ? undefined : apiKey
  }
}

/** A URL without its query string or credentials (safe to show). */
export const displayUrl = (url: URL): string => `${url.origin}${url.pathname}`

/** A failure a tool reports as `Error: <message>`. */
export class WeatherError extends Error {
  override readonly name = "WeatherError"
}

export type Api = "forecast" | "air-quality" | "geocoding"

/** Counts for the `status` tool. */
export interface Stats {
  ok: number
  failed: number
  lastFailure: string | undefined
}

export const makeStats = (): Stats => ({ ok: 0, failed: 0, lastFailure: undefined })

const MAX_REASON = 300

/** A remote text made safe to quote: one line, printable, bounded. */
const quote = (text: string): string => {
  const line = text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim()
  return line.length > MAX_REASON ? `${line.slice(0, MAX_REASON)}…` : line
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Why `fetch` threw, in a few words (undici hides the socket error in `cause`). */
const networkReason = (error: unknown): string => {
  const cause = isObject(error) && "cause" in error ? (error as { cause?: unknown }).cause : undefined
  if (isObject(cause)) {
    const code = typeof cause.code === "string" ? cause.code : undefined
    const message = typeof cause.message === "string" ? cause.message : undefined
    if (message !== undefined) return quote(message)
    if (code !== undefined) return code
  }
  return error instanceof Error ? quote(error.message) : "unknown error"
}

/**
 * GETs `base` with `params` (plus the API key) and returns the parsed JSON object. Throws a
 * `WeatherError` on a network failure, the timeout, an HTTP error (quoting Open-Meteo's
 * `{"error": true, "reason": …}`), or an answer that is not a JSON object. `signal` is the
 * tool call's: a cancelled call aborts the request.
 */
export const getJson = async (
  endpoints: Endpoints,
  stats: Stats,
  api: Api,
  base: URL,
  params: Readonly<Record<string, string>>,
  signal?: AbortSignal
): Promise<Record<string, unknown>> => {
  try {
    const value = await request(endpoints, api, base, params, signal)
    stats.ok++
    return value
  } catch (error) {
    stats.failed++
    stats.lastFailure = error instanceof WeatherError ? error.message : "unexpected failure"
    throw error
  }
}

const request = async (
  endpoints: Endpoints,
  api: Api,
  base: URL,
  params: Readonly<Record<string, string>>,
  signal: AbortSignal | undefined
): Promise<Record<string, unknown>> => {
  const url = new URL(base)
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value)
  if (endpoints.apiKey !== undefined) url.searchParams.set("apikey", endpoints.apiKey)
  const timeout = AbortSignal.timeout(endpoints.timeoutMs)
  const both = signal === undefined ? timeout : AbortSignal.any([timeout, signal])
  const what = `the ${api} API`
  let response: Response
  let body: string
  try {
    response = await fetch(url, {
      signal: both,
      headers: { accept: "application/json", "user-agent": "skald-weather-mcp/1.0" }
    })
    body = await response.text()
  } catch (error) {
    if (timeout.aborted) {
      throw new WeatherError(`${what} did not answer within ${endpoints.timeoutMs / 1000} s (${ENV.timeout})`)
    }
    if (signal?.aborted === true) throw new WeatherError(`the request to ${what} was cancelled`)
    throw new WeatherError(`could not reach ${what} at ${displayUrl(base)}: ${networkReason(error)}`)
  }
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    json = undefined
  }
  // Open-Meteo answers a bad request with 400 {"error": true, "reason": "..."}.
  if (isObject(json) && json.error === true) {
    const reason = typeof json.reason === "string" ? quote(json.reason) : "no reason given"
    throw new WeatherError(`${what} refused the request (HTTP ${response.status}): ${reason}`)
  }
  if (!response.ok) {
    throw new WeatherError(
      `${what} answered HTTP ${response.status}${response.statusText ? ` ${quote(response.statusText)}` : ""}`
    )
  }
  if (!isObject(json)) throw new WeatherError(`${what} answered something that is not a JSON object`)
  return json
}

// --- reading answers -------------------------------------------------------------------------

/** A number, or null when Open-Meteo has no value. */
export const num = (u: unknown): number | null => (typeof u === "number" && Number.isFinite(u) ? u : null)

export const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

/** The object at `key`, or a `WeatherError` saying the answer lacks it. */
export const block = (json: Record<string, unknown>, key: string, api: Api): Record<string, unknown> => {
  const value = json[key]
  if (!isObject(value)) throw new WeatherError(`the ${api} API answered without a '${key}' block`)
  return value
}

/** The units block (`current_units`, …), or an empty one. */
export const units = (json: Record<string, unknown>, key: string): Record<string, string> => {
  const value = json[`${key}_units`]
  const out: Record<string, string> = {}
  if (isObject(value)) { for (const [k, v] of Object.entries(value)) if (typeof v === "string") out[k] = v }
  return out
}

/** The array at `key` of a block (hourly/daily series), or an empty one. */
export const series = (b: Record<string, unknown>, key: string): ReadonlyArray<unknown> => {
  const value = b[key]
  return Array.isArray(value) ? value : []
}

// --- geocoding -------------------------------------------------------------------------------

/** A resolved place. */
export interface Place {
  readonly name: string
  readonly latitude: number
  readonly longitude: number
  readonly country?: string
  readonly admin1?: string
  readonly timezone?: string
}

/** "Berlin, Land Berlin, Germany" (the parts the answer had). */
export const placeLabel = (place: Place): string =>
  [place.name, place.admin1, place.country].filter((p, i, all) => p !== undefined && p !== "" && all.indexOf(p) === i)
    .join(", ")

/** "52.52, 13.41" */
export const coordinates = (latitude: number, longitude: number): string =>
  `${Number(latitude.toFixed(4))}, ${Number(longitude.toFixed(4))}`

/**
 * Finds a place by name. "Name, XX" (two letters) asks for that ISO country code; "Name,
 * Qualifier" picks the first match whose region or country contains the qualifier.
 */
export const geocode = async (
  endpoints: Endpoints,
  stats: Stats,
  query: string,
  signal?: AbortSignal
): Promise<Place> => {
  const [rawName, ...rest] = query.split(",")
  const name = (rawName ?? "").trim()
  const qualifier = rest.join(",").trim()
  if (name.length < 2) throw new WeatherError(`a place name needs at least 2 characters, got ${JSON.stringify(query)}`)
  const countryCode = /^[A-Za-z]{2}$/.test(qualifier) ? qualifier.toUpperCase() : undefined
  const params: Record<string, string> = {
    name,
    count: qualifier !== "" && countryCode === undefined ? "20" : "1",
    language: "en",
    format: "json"
  }
  if (countryCode !== undefined) params.countryCode = countryCode
  const json = await getJson(endpoints, stats, "geocoding", endpoints.geocoding, params, signal)
  const results = Array.isArray(json.results) ? json.results.filter(isObject) : []
  const wanted = qualifier.toLowerCase()
  const match = countryCode !== undefined || wanted === ""
    ? results[0]
    : results.find((r) =>
      ["admin1", "admin2", "admin3", "country"].some((k) =>
        typeof r[k] === "string" && (r[k] as string).toLowerCase().includes(wanted)
      )
    )
  const latitude = num(match?.latitude)
  const longitude = num(match?.longitude)
  if (match === undefined || latitude === null || longitude === null) {
    throw new WeatherError(
      `no place named ${
        JSON.stringify(query)
      } was found (check the spelling, try a larger town nearby, or give latitude and longitude)`
    )
  }
  const optional = (
    key: string
  ) => (typeof match[key] === "string" && match[key] !== "" ? { [key]: match[key] as string } : {})
  return {
    name: str(match.name) ?? name,
    latitude,
    longitude,
    ...optional("country"),
    ...optional("admin1"),
    ...optional("timezone")
  }
}
