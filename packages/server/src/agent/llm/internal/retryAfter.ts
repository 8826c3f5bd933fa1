/**
 * The delay a model server asks for before the next try, shared by the providers.
 *
 * @since 0.1.0
 */

const NUMBER = /^\s*\d+(\.\d+)?\s*$/

/**
 * The delay a server asks for, in milliseconds: `retry-after-ms` (OpenAI, Azure), else
 * `Retry-After` as seconds or as an HTTP date (relative to `now`); `undefined` when absent or
 * unreadable.
 */
export const retryAfterMillis = (
  headers: Readonly<Record<string, string | undefined>>,
  now: number
): number | undefined => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && NUMBER.test(ms)) return Math.ceil(Number(ms))
  const value = headers["retry-after"]
  if (value === undefined) return undefined
  if (NUMBER.test(value)) return Math.ceil(Number(value) * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}
