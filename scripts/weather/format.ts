/**
 * Words for numbers: WMO weather codes, compass points, and the European and US air-quality
 * index bands.
 */

const WMO: Record<number, readonly [string, string]> = {
  0: ["☀️", "Clear sky"],
  1: ["🌤️", "Mainly clear"],
  2: ["⛅", "Partly cloudy"],
  3: ["☁️", "Overcast"],
  45: ["🌫️", "Fog"],
  48: ["🌫️", "Depositing rime fog"],
  51: ["🌦️", "Light drizzle"],
  53: ["🌦️", "Moderate drizzle"],
  55: ["🌧️", "Dense drizzle"],
  56: ["🌧️", "Light freezing drizzle"],
  57: ["🌧️", "Dense freezing drizzle"],
  61: ["🌦️", "Slight rain"],
  63: ["🌧️", "Moderate rain"],
  65: ["🌧️", "Heavy rain"],
  66: ["🌧️", "Light freezing rain"],
  67: ["🌧️", "Heavy freezing rain"],
  71: ["🌨️", "Slight snowfall"],
  73: ["🌨️", "Moderate snowfall"],
  75: ["❄️", "Heavy snowfall"],
  77: ["🌨️", "Snow grains"],
  80: ["🌦️", "Slight rain showers"],
  81: ["🌧️", "Moderate rain showers"],
  82: ["⛈️", "Violent rain showers"],
  85: ["🌨️", "Slight snow showers"],
  86: ["❄️", "Heavy snow showers"],
  95: ["⛈️", "Thunderstorm"],
  96: ["⛈️", "Thunderstorm with slight hail"],
  99: ["⛈️", "Thunderstorm with heavy hail"]
}

/** "☀️ Clear sky" for a WMO weather code. */
export const describeWeather = (code: number | null): string => {
  if (code === null) return "❔ conditions unknown"
  const known = WMO[code]
  return known === undefined ? `❔ weather code ${code}` : `${known[0]} ${known[1]}`
}

const POINTS = ["N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W", "WNW", "NW", "NNW"]

/** "SW" for 225°. */
export const compass = (degrees: number): string => POINTS[Math.round((((degrees % 360) + 360) % 360) / 22.5) % 16]!

/** "18.3 °C", "45 %", or "n/a" for a missing value. */
export const withUnit = (value: number | null, unit: string | undefined): string => {
  if (value === null) return "n/a"
  const u = unit ?? ""
  return u === "" ? `${value}` : `${value} ${u}`
}

/** The European AQI band (EEA): good ≤ 20 < fair ≤ 40 < moderate ≤ 60 < poor ≤ 80 < very poor ≤ 100 < extremely poor. */
export const europeanBand = (aqi: number | null): { readonly category: string; readonly emoji: string } | null => {
  if (aqi === null) return null
  if (aqi <= 20) return { category: "good", emoji: "🟢" }
  if (aqi <= 40) return { category: "fair", emoji: "🟢" }
  if (aqi <= 60) return { category: "moderate", emoji: "🟡" }
  if (aqi <= 80) return { category: "poor", emoji: "🟠" }
  if (aqi <= 100) return { category: "very poor", emoji: "🔴" }
  return { category: "extremely poor", emoji: "🟣" }
}

/** The US AQI band (EPA). */
export const usBand = (aqi: number | null): { readonly category: string; readonly emoji: string } | null => {
  if (aqi === null) return null
  if (aqi <= 50) return { category: "good", emoji: "🟢" }
  if (aqi <= 100) return { category: "moderate", emoji: "🟡" }
  if (aqi <= 150) return { category: "unhealthy for sensitive groups", emoji: "🟠" }
  if (aqi <= 200) return { category: "unhealthy", emoji: "🔴" }
  if (aqi <= 300) return { category: "very unhealthy", emoji: "🟣" }
  return { category: "hazardous", emoji: "🟤" }
}

/** The UV index band (WHO). */
export const uvBand = (uv: number | null): string | null => {
  if (uv === null) return null
  if (uv < 3) return "low"
  if (uv < 6) return "moderate"
  if (uv < 8) return "high"
  if (uv < 11) return "very high"
  return "extreme"
}
