/**
 * Whether a host name or address is this machine's loopback: the HTTP endpoints' bind rule and the
 * registration's rule for where a plain-http Client ID Metadata Document may live.
 *
 * @since 0.1.0
 */

/** True for 127.0.0.0/8, ::1 (bracketed or not, as a URL's `hostname` gives it) and localhost. */
export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
