/**
 * Asking the user for a secret or a confirmation from inside a tool call (MCP elicitation), for
 * the example servers built on the official SDK's `McpServer`.
 *
 * Usage, inside a tool handler (`extra` is the handler's second argument):
 *
 * ```ts
 * import { askSecret, confirm, ElicitationUnsupported } from "./lib/url-elicitation.js"
 *
 * const answer = await askSecret(server, {
 *   title: "Password for deploy@web1",
 *   message: "Enter the SSH login password for deploy@web1",
 *   field: "password",
 *   signal: extra.signal,                // the call's cancellation
 *   relatedRequestId: extra.requestId    // routes the request with the call (streamable HTTP)
 * })
 * if (answer.action !== "accept") return textResult(`Error: no password (${answer.action})`, true)
 * use(answer.value)                      // never log it, never return it, never write it down
 *
 * const yes = await confirm(server, "Overwrite /etc/hosts?", extra.signal) // "yes" | "no" | "cancel"
 * ```
 *
 * Both throw `ElicitationUnsupported` when the client cannot ask the user at all (it declared no
 * elicitation), and rethrow protocol errors; a timeout or a cancelled call is `cancel` (with a
 * `reason`). The wait for the user is bounded by `MCP_ELICITATION_TIMEOUT` (seconds, default 600)
 * or the request's `timeoutMs`.
 *
 * How a secret is asked:
 * - The client declared `elicitation.url`: URL mode (MCP 2025-11-25). This process serves a
 *   one-time page on 127.0.0.1 (port 0, an unguessable path token) with an HTML form; the client
 *   is sent `elicitation/create {mode: "url", url, elicitationId, message}` and its `accept`
 *   means "opened it". The value arrives by the form's POST, never through the client or the
 *   model. After the POST the page answers "done", stops listening and burns its token (another
 *   request gets 410 or no connection), and `notifications/elicitation/complete` is sent. A
 *   decline or cancel closes the page at once; so do the deadline and the call's AbortSignal.
 * - Otherwise: form mode with one required string field named `field` (password, passphrase,
 *   secret or token) — the seed's convention, which clients such as ours mask by that name.
 *   DEVIATION: the 2025-11-25 spec says servers MUST NOT ask for sensitive data in form mode;
 *   we do it anyway as a fallback so a form-only client can still be used (docs/servers.md).
 *
 * Nothing here logs anything, least of all an answered value or the page's URL (its token).
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import type { ElicitResult, RequestId } from "@modelcontextprotocol/sdk/types.js"
import { randomBytes, randomUUID } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

// --- the public API ----------------------------------------------------------------------------

export interface SecretRequest {
  /** A short heading (the page's title; the form field's title). */
  readonly title: string
  /** What is asked and why, shown to the user. */
  readonly message: string
  /** The form field's name in the form fallback: a name clients mask. */
  readonly field: "password" | "passphrase" | "secret" | "token"
  /** The tool call's signal: aborting it withdraws the question (`cancel`, reason `aborted`). */
  readonly signal?: AbortSignal
  /** The tool call's request id (`extra.requestId`), so the question travels with the call. */
  readonly relatedRequestId?: RequestId
  /** Overrides `MCP_ELICITATION_TIMEOUT` for this question (milliseconds). */
  readonly timeoutMs?: number
}

/** Why an answer is `cancel` although the user did not say so. */
export type CancelReason = "timeout" | "aborted"

export type SecretAnswer =
  | { readonly action: "accept"; readonly value: string }
  | { readonly action: "decline" | "cancel"; readonly reason?: CancelReason }

/** The client declared no way to ask the user (no elicitation capability, or not this mode). */
export class ElicitationUnsupported extends Error {
  override readonly name = "ElicitationUnsupported"
  constructor(readonly mode: "form" | "url") {
    super(
      mode === "form"
        ? "the client cannot ask the user for input (it declared no form elicitation)"
        : "the client cannot open a URL for the user (it declared no URL elicitation)"
    )
  }
}

/** The environment variable bounding how long a question waits for the user (seconds). */
export const TIMEOUT_ENV = "MCP_ELICITATION_TIMEOUT"
const DEFAULT_TIMEOUT_SECONDS = 600

/**
 * The wait bound in milliseconds from `MCP_ELICITATION_TIMEOUT` (seconds, fractions allowed;
 * default 600). Throws on a value that is not a positive number: call it at startup to fail early.
 */
export const elicitationTimeoutMs = (env: NodeJS.ProcessEnv = process.env): number => {
  const raw = env[TIMEOUT_ENV]
  if (raw === undefined || raw.trim() === "") return DEFAULT_TIMEOUT_SECONDS * 1000
  const seconds = Number(raw)
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new Error(`${TIMEOUT_ENV} must be a positive number of seconds, got ${JSON.stringify(raw)}`)
  }
  return Math.max(1, Math.round(seconds * 1000))
}

/** What the client declared it can do. */
export const clientModes = (server: McpServer): { readonly form: boolean; readonly url: boolean } => {
  const elicitation = server.server.getClientCapabilities()?.elicitation
  return { form: elicitation?.form !== undefined, url: elicitation?.url !== undefined }
}

/**
 * Asks for a secret: URL mode when the client declared `elicitation.url`, else the seed's form
 * convention (a documented deviation from the spec, see the top of this file).
 */
export const askSecret = async (server: McpServer, request: SecretRequest): Promise<SecretAnswer> => {
  const modes = clientModes(server)
  if (modes.url) {
    const answer = await askViaUrlPage(server, {
      title: request.title,
      message: request.message,
      fields: [{ name: request.field, label: request.title, secret: true }],
      ...optional(request)
    })
    if (answer.action !== "accept") return answer
    const value = answer.values[request.field]
    if (value === undefined) throw new Error("the page was submitted without the value")
    return { action: "accept", value }
  }
  if (!modes.form) throw new ElicitationUnsupported("form")
  const outcome = await elicit(server, {
    mode: "form",
    message: request.message,
    requestedSchema: {
      type: "object",
      properties: { [request.field]: { type: "string", title: request.title, minLength: 1 } },
      required: [request.field]
    }
  }, request)
  if (outcome.cut !== undefined) return { action: "cancel", reason: outcome.cut }
  const answer = outcome.result
  if (answer.action !== "accept") return { action: answer.action }
  const value = answer.content?.[request.field]
  if (typeof value !== "string") throw new Error(`the client accepted without a string '${request.field}'`)
  return { action: "accept", value }
}

/** A form-mode yes/no question (a form without fields): accept is yes, decline is no. */
export const confirm = async (
  server: McpServer,
  message: string,
  signal?: AbortSignal,
  options: { readonly relatedRequestId?: RequestId; readonly timeoutMs?: number } = {}
): Promise<"yes" | "no" | "cancel"> => {
  if (!clientModes(server).form) throw new ElicitationUnsupported("form")
  const outcome = await elicit(
    server,
    { mode: "form", message, requestedSchema: { type: "object", properties: {} } },
    { ...options, ...(signal !== undefined ? { signal } : {}) }
  )
  if (outcome.cut !== undefined) return "cancel"
  const action = outcome.result.action
  return action === "accept" ? "yes" : action === "decline" ? "no" : "cancel"
}

/** One input of a one-time page. */
export interface PageField {
  readonly name: string
  readonly label: string
  /** A password input (masked, no autocomplete) instead of a text input. */
  readonly secret?: boolean
  /** An empty value is refused (the form is shown again); default true. */
  readonly required?: boolean
}

export interface UrlPageRequest {
  readonly title: string
  readonly message: string
  readonly fields: ReadonlyArray<PageField>
  readonly signal?: AbortSignal
  readonly relatedRequestId?: RequestId
  readonly timeoutMs?: number
}

export type UrlPageAnswer =
  | { readonly action: "accept"; readonly values: Readonly<Record<string, string>> }
  | { readonly action: "decline" | "cancel"; readonly reason?: CancelReason }

/**
 * URL mode with a one-time page of this process (the lower-level piece under `askSecret`; use it
 * directly for other, non-secret input). Throws `ElicitationUnsupported` when the client did not
 * declare `elicitation.url`.
 */
export const askViaUrlPage = async (server: McpServer, request: UrlPageRequest): Promise<UrlPageAnswer> => {
  if (!clientModes(server).url) throw new ElicitationUnsupported("url")
  const timeoutMs = request.timeoutMs ?? elicitationTimeoutMs()
  // One deadline for the whole exchange: the client's answer, then the page's POST.
  const bound = withDeadline(timeoutMs, request.signal)
  let page: OneTimePage | undefined
  try {
    page = await serveOneTimePage({ title: request.title, message: request.message, fields: request.fields })
    const elicitationId = randomUUID()
    const outcome = await elicitWithin(
      server,
      { mode: "url", message: request.message, url: page.url, elicitationId },
      bound,
      timeoutMs,
      request.relatedRequestId
    )
    if (outcome.cut !== undefined) return { action: "cancel", reason: outcome.cut }
    const answer = outcome.result
    // A decline or a cancel closes the page at once (finally).
    if (answer.action !== "accept") return { action: answer.action }
    // accept means "opened it": now the value comes by the page's POST (maybe it already has).
    const values = await untilAborted(page.submitted, bound.signal)
    if (values === undefined) return { action: "cancel", reason: bound.reason() }
    const related = request.relatedRequestId !== undefined ? { relatedRequestId: request.relatedRequestId } : undefined
    // The value is in hand: a completion the client can no longer receive changes nothing.
    await server.server.createElicitationCompletionNotifier(elicitationId, related)().catch(() => {})
    return { action: "accept", values }
  } finally {
    page?.close()
    bound.dispose()
  }
}

// --- the one-time page -------------------------------------------------------------------------

export interface OneTimePage {
  /** `http://127.0.0.1:<port>/elicit/<token>`: a capability, do not log it. */
  readonly url: string
  /** The submitted values; `undefined` when the page closed without a submission. */
  readonly submitted: Promise<Readonly<Record<string, string>> | undefined>
  /** Stops listening and drops every connection (idempotent). */
  readonly close: () => void
}

const MAX_BODY_BYTES = 64 * 1024

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

const SECURITY_HEADERS = {
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
}

const STYLE = "body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}" +
  "label{display:block;margin:1rem 0 .25rem}input{width:100%;padding:.4rem;box-sizing:border-box}" +
  "button{margin-top:1rem;padding:.4rem 1.2rem}.error{color:#b00020}"

const pageHtml = (title: string, body: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
  `<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`

const formHtml = (options: { title: string; message: string; fields: ReadonlyArray<PageField> }, error?: string) =>
  pageHtml(
    options.title,
    `<h1>${escapeHtml(options.title)}</h1><p>${escapeHtml(options.message)}</p>` +
      (error !== undefined ? `<p class="error">${escapeHtml(error)}</p>` : "") +
      `<form method="post" autocomplete="off">` +
      options.fields.map((f, i) =>
        `<label for="f${i}">${escapeHtml(f.label)}</label>` +
        `<input id="f${i}" name="${escapeHtml(f.name)}" type="${f.secret === true ? "password" : "text"}"` +
        `${f.secret === true ? ` autocomplete="new-password"` : ""}${f.required === false ? "" : " required"}` +
        `${i === 0 ? " autofocus" : ""}>`
      ).join("") +
      `<button type="submit">Submit</button></form>`
  )

const DONE_HTML = pageHtml("Done", "<h1>Done</h1><p>Thank you — you can close this page.</p>")

/**
 * Serves one form on 127.0.0.1 (port 0) under an unguessable path. `GET` shows the form; a `POST`
 * (`application/x-www-form-urlencoded`) with every required field filled resolves `submitted`,
 * answers a "done" page and closes the page for good. Everything else is answered 4xx.
 */
export const serveOneTimePage = async (options: {
  readonly title: string
  readonly message: string
  readonly fields: ReadonlyArray<PageField>
}): Promise<OneTimePage> => {
  const token = randomBytes(32).toString("base64url")
  const path = `/elicit/${token}`
  let resolveSubmitted: (values: Readonly<Record<string, string>> | undefined) => void = () => {}
  const submitted = new Promise<Readonly<Record<string, string>> | undefined>((resolve) => (resolveSubmitted = resolve))
  let burnt = false
  let port = 0

  const send = (res: http.ServerResponse, status: number, html: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8", ...extra })
    res.end(html)
  }
  const plain = (res: http.ServerResponse, status: number, text: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, { ...SECURITY_HEADERS, "content-type": "text/plain; charset=utf-8", ...extra })
    res.end(`${text}\n`)
  }

  const server = http.createServer((req, res) => {
    // Only our own address (a DNS-rebound name never matches), only our path.
    const host = req.headers.host ?? ""
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) return plain(res, 400, "unexpected Host")
    const pathname = (req.url ?? "").split("?")[0]
    if (pathname !== path) return plain(res, 404, "not found")
    if (burnt) return plain(res, 410, "this page has already been used", { connection: "close" })
    if (req.method === "GET" || req.method === "HEAD") return send(res, 200, formHtml(options))
    if (req.method !== "POST") return plain(res, 405, "method not allowed", { allow: "GET, POST" })
    const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
    if (type !== "application/x-www-form-urlencoded") return plain(res, 415, "expected a form submission")

    const chunks: Array<Buffer> = []
    let size = 0
    let tooLarge = false
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) tooLarge = true
      else chunks.push(chunk)
    })
    req.on("end", () => {
      if (tooLarge) return plain(res, 413, "too large")
      if (burnt) return plain(res, 410, "this page has already been used", { connection: "close" })
      const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"))
      const values: Record<string, string> = {}
      for (const field of options.fields) {
        const value = form.get(field.name) ?? ""
        if (value === "" && field.required !== false) {
          return send(res, 400, formHtml(options, `${field.label}: a value is required.`))
        }
        values[field.name] = value
      }
      burnt = true
      res.on("finish", close)
      send(res, 200, DONE_HTML, { connection: "close" })
      resolveSubmitted(values)
    })
  })
  server.on("clientError", (_error, socket) => socket.destroy())

  let closed = false
  function close() {
    if (closed) return
    closed = true
    burnt = true
    server.close()
    server.closeAllConnections()
    resolveSubmitted(undefined)
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject)
      resolve()
    })
  })
  port = (server.address() as AddressInfo).port
  return { url: `http://127.0.0.1:${port}${path}`, submitted, close }
}

// --- internals ---------------------------------------------------------------------------------

type ElicitParams = Parameters<McpServer["server"]["elicitInput"]>[0]

const optional = (
  request: { readonly signal?: AbortSignal; readonly relatedRequestId?: RequestId; readonly timeoutMs?: number }
) => ({
  ...(request.signal !== undefined ? { signal: request.signal } : {}),
  ...(request.relatedRequestId !== undefined ? { relatedRequestId: request.relatedRequestId } : {}),
  ...(request.timeoutMs !== undefined ? { timeoutMs: request.timeoutMs } : {})
})

type Outcome =
  | { readonly cut?: undefined; readonly result: ElicitResult }
  | { readonly cut: CancelReason }

/**
 * Sends `elicitation/create` bounded by the deadline and the signal. A deadline or an abort is
 * `{cut: reason}` (the SDK then sends `notifications/cancelled` for the request); other errors
 * are rethrown.
 */
const elicit = async (
  server: McpServer,
  params: ElicitParams,
  options: { readonly signal?: AbortSignal; readonly relatedRequestId?: RequestId; readonly timeoutMs?: number }
): Promise<Outcome> => {
  const timeoutMs = options.timeoutMs ?? elicitationTimeoutMs()
  const bound = withDeadline(timeoutMs, options.signal)
  try {
    return await elicitWithin(server, params, bound, timeoutMs, options.relatedRequestId)
  } finally {
    bound.dispose()
  }
}

const elicitWithin = async (
  server: McpServer,
  params: ElicitParams,
  bound: Deadline,
  timeoutMs: number,
  relatedRequestId: RequestId | undefined
): Promise<Outcome> => {
  try {
    const result = await server.server.elicitInput(params, {
      signal: bound.signal,
      // The SDK's own timer (default 60 s) would otherwise cut a person short; ours fires first.
      timeout: timeoutMs + 1000,
      ...(relatedRequestId !== undefined ? { relatedRequestId } : {})
    })
    return { result }
  } catch (error) {
    if (bound.signal.aborted) return { cut: bound.reason() }
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) return { cut: "timeout" }
    throw error
  }
}

type Deadline = ReturnType<typeof withDeadline>

/** A signal that fires at the deadline or when `outer` does, and which of the two it was. */
const withDeadline = (timeoutMs: number, outer: AbortSignal | undefined) => {
  const controller = new AbortController()
  let reason: CancelReason = "timeout"
  const timer = setTimeout(() => controller.abort(new Error("the user did not answer in time")), timeoutMs)
  const onAbort = () => {
    if (!controller.signal.aborted) reason = "aborted"
    controller.abort(new Error("the call was cancelled"))
  }
  if (outer?.aborted) onAbort()
  else outer?.addEventListener("abort", onAbort, { once: true })
  return {
    signal: controller.signal,
    reason: () => reason,
    dispose: () => {
      clearTimeout(timer)
      outer?.removeEventListener("abort", onAbort)
    }
  }
}

/** `promise`'s value, or `undefined` once `signal` fires first. */
const untilAborted = <A>(promise: Promise<A | undefined>, signal: AbortSignal): Promise<A | undefined> => {
  if (signal.aborted) return Promise.resolve(undefined)
  return new Promise<A | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined)
    signal.addEventListener("abort", onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort)
        reject(error)
      }
    )
  })
}
