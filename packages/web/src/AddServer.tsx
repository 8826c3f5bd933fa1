/**
 * Adding a server from the Servers page: a stdio server (command, arguments, environment) or an
 * HTTP one (URL, api key). Every secret is entered as a reference, `${NAME}`, to a secret in the
 * host's store — the page never sends nor keeps a secret's value: a secret field holding anything
 * else is refused and emptied at once. The form is decoded with the Mcp group's `AddRequest` (the
 * `Add` payload with the host's rules as refinements; and `McpRpcs.SecretReference` for the secret fields), and its errors are shown by field;
 * the host's refusals (a name taken, a registration it cannot take) are shown under the form.
 *
 * The inputs are uncontrolled (read once on submit with `FormData`), as in the inbox's forms.
 */
import { McpRpcs, ServerConfig } from "@skald/domain"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { type FormEvent, useState } from "react"

/** What `Mcp.Add` takes. */
export type AddPayload = typeof McpRpcs.Add.payloadSchema.Type

/** A problem with the form: the field it concerns (its input's name) and what to do. */
export interface FormProblem {
  readonly field: string
  readonly message: string
}

/** `KEY=VALUE` lines into a record (blank lines skipped); a line without `=` is a problem. */
const linesToRecord = (text: string, field: string, problems: Array<FormProblem>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim()
    if (line === "") continue
    const eq = line.indexOf("=")
    if (eq <= 0) {
      problems.push({ field, message: `line ${i + 1} is not KEY=VALUE` })
      continue
    }
    const key = line.slice(0, eq).trim()
    if (Object.hasOwn(out, key)) problems.push({ field, message: `${key} is given twice` })
    out[key] = line.slice(eq + 1).trim()
  }
  return out
}

const text = (data: FormData, name: string): string => {
  const v = data.get(name)
  return typeof v === "string" ? v : ""
}

const decodeAdd = Schema.decodeUnknownEither(McpRpcs.AddRequest, { errors: "all" })
const isReference = Schema.is(McpRpcs.SecretReference)
const referenceMessage = (value: string) =>
  Either.match(Schema.decodeUnknownEither(McpRpcs.SecretReference)(value), {
    onLeft: (e) => ParseResult.ArrayFormatter.formatErrorSync(e)[0]?.message ?? "not a reference",
    onRight: () => ""
  })

/** The OAuth inputs and the `oauth` keys they fill. */
const OAUTH_FIELDS = {
  oauthClientId: "clientId",
  oauthClientSecret: "clientSecret",
  oauthPrivateKey: "privateKey",
  oauthSigningAlgorithm: "signingAlgorithm",
  oauthClientMetadataUrl: "clientMetadataUrl",
  oauthScope: "scope",
  oauthGrant: "grant"
} as const

/** The form's field an issue's path points at. */
const fieldOf = (path: ReadonlyArray<PropertyKey>): string => {
  const [top, second, third] = path
  if (top === "transport" && second === "oauth" && typeof third === "string") {
    return Object.entries(OAUTH_FIELDS).find(([, key]) => key === third)?.[0] ?? "oauth"
  }
  if (top === "transport" && typeof second === "string") return second
  return typeof top === "string" ? top : "form"
}

/**
 * The form read into an `Add` payload, or its problems. Secret fields that are not references are
 * reported in `refused` (the caller empties them).
 */
export const readForm = (data: FormData): Either.Either<AddPayload, {
  readonly problems: ReadonlyArray<FormProblem>
  readonly refused: ReadonlyArray<string>
}> => {
  const problems: Array<FormProblem> = []
  const refused = new Set<string>()
  const optional = (name: string) => {
    const v = text(data, name).trim()
    return v === "" ? {} : { [name]: v }
  }
  const kind = text(data, "transport")
  let transport: unknown
  if (kind === "http") {
    const apiKey = text(data, "apiKey").trim()
    if (apiKey !== "" && !isReference(apiKey)) {
      problems.push({ field: "apiKey", message: referenceMessage(apiKey) })
      refused.add("apiKey")
    }
    // OAuth client settings; their secrets, like the api key, as references only.
    for (const secret of ["oauthClientSecret", "oauthPrivateKey"]) {
      const value = text(data, secret).trim()
      if (value !== "" && !isReference(value)) {
        problems.push({ field: secret, message: referenceMessage(value) })
        refused.add(secret)
      }
    }
    const oauth = Object.fromEntries(
      Object.entries(OAUTH_FIELDS).flatMap(([field, key]) => {
        const value = text(data, field).trim()
        return value === "" ? [] : [[key, value]]
      })
    )
    transport = {
      _tag: "http",
      url: text(data, "url").trim(),
      ...(apiKey === "" ? {} : { apiKey }),
      ...(Object.keys(oauth).length === 0 ? {} : { oauth })
    }
  } else {
    const secretEnv = linesToRecord(text(data, "secretEnv"), "secretEnv", problems)
    for (const [key, value] of Object.entries(secretEnv)) {
      if (!isReference(value)) {
        problems.push({ field: "secretEnv", message: `${key}: ${referenceMessage(value)}` })
        refused.add("secretEnv")
      }
    }
    const args = text(data, "args").split("\n").map((a) => a.trim()).filter((a) => a !== "")
    transport = {
      _tag: "stdio",
      command: text(data, "command").trim(),
      args,
      env: linesToRecord(text(data, "env"), "env", problems),
      secretEnv
    }
  }
  const decoded = decodeAdd({
    name: text(data, "name").trim(),
    transport,
    ...optional("friendlyName"),
    ...optional("description")
  })
  if (Either.isLeft(decoded)) {
    for (const issue of ParseResult.ArrayFormatter.formatErrorSync(decoded.left)) {
      problems.push({ field: fieldOf(issue.path), message: issue.message })
    }
  }
  if (problems.length > 0 || Either.isLeft(decoded)) return Either.left({ problems, refused: [...refused] })
  return Either.right(decoded.right)
}

const labels: Record<string, string> = {
  name: "Name",
  friendlyName: "Friendly name",
  description: "Description",
  command: "Command",
  args: "Arguments",
  env: "Environment",
  secretEnv: "Secret environment",
  url: "URL",
  apiKey: "API key",
  oauth: "OAuth",
  oauthClientId: "OAuth client id",
  oauthClientSecret: "OAuth client secret",
  oauthPrivateKey: "OAuth private key",
  oauthSigningAlgorithm: "Its signing algorithm",
  oauthClientMetadataUrl: "Client ID Metadata Document URL",
  oauthScope: "OAuth scope",
  oauthGrant: "OAuth grant",
  form: "Form"
}

export const AddServerForm = ({ onAdd, onDone, pending, error }: {
  /** Sends the payload (the page's action). */
  readonly onAdd: (payload: AddPayload) => void
  readonly onDone: () => void
  readonly pending: boolean
  /** The host's refusal of the last attempt. */
  readonly error: string | undefined
}) => {
  const [kind, setKind] = useState<"stdio" | "http">("stdio")
  const [problems, setProblems] = useState<ReadonlyArray<FormProblem>>([])
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const element = e.currentTarget
    const read = readForm(new FormData(element))
    if (Either.isLeft(read)) {
      // A secret field holding a value rather than a reference is emptied now: never kept, never sent.
      for (const name of read.left.refused) {
        const input = element.elements.namedItem(name)
        if (input instanceof HTMLInputElement || input instanceof HTMLTextAreaElement) input.value = ""
      }
      setProblems(read.left.problems)
      return
    }
    setProblems([])
    onAdd(read.right)
  }
  const problemsOf = (field: string) => problems.filter((p) => p.field === field)
  const describedBy = (field: string) => problemsOf(field).length > 0 ? `add-${field}-problem` : undefined
  const fieldProblems = (field: string) =>
    problemsOf(field).length === 0 ? null : (
      <small id={`add-${field}-problem`} className="error">
        {problemsOf(field).map((p) => p.message).join("; ")}
      </small>
    )
  const input = (name: string, props: { readonly required?: boolean; readonly placeholder?: string } = {}) => (
    <div className="field">
      <label htmlFor={`add-${name}`}>{labels[name]}{props.required === true ? " (required)" : ""}</label>
      <input
        id={`add-${name}`}
        name={name}
        autoComplete="off"
        aria-invalid={problemsOf(name).length > 0}
        aria-describedby={describedBy(name)}
        placeholder={props.placeholder}
      />
      {fieldProblems(name)}
    </div>
  )
  const area = (name: string, hint: string, placeholder: string) => (
    <div className="field">
      <label htmlFor={`add-${name}`}>{labels[name]}</label>
      <textarea
        id={`add-${name}`}
        name={name}
        rows={2}
        spellCheck={false}
        aria-invalid={problemsOf(name).length > 0}
        aria-describedby={describedBy(name) ?? `add-${name}-hint`}
        placeholder={placeholder}
      />
      <small id={`add-${name}-hint`} className="muted">{hint}</small>
      {fieldProblems(name)}
    </div>
  )
  return (
    <form className="add-server" aria-label="Add a server" onSubmit={submit} noValidate>
      <h3>Add a server</h3>
      {input("name", { required: true, placeholder: "weather" })}
      {input("friendlyName")}
      {input("description")}
      <fieldset className="field">
        <legend>Transport</legend>
        <label className="choice">
          <input
            type="radio"
            name="transport"
            value="stdio"
            checked={kind === "stdio"}
            onChange={() => setKind("stdio")}
          />{" "}
          stdio (a local command)
        </label>
        <label className="choice">
          <input
            type="radio"
            name="transport"
            value="http"
            checked={kind === "http"}
            onChange={() => setKind("http")}
          />{" "}
          HTTP (a URL)
        </label>
      </fieldset>
      {kind === "stdio"
        ? (
          <>
            {input("command", { required: true, placeholder: "npx" })}
            {area("args", "One argument a line, passed as given.", "-y\n@modelcontextprotocol/server-everything")}
            {area("env", "KEY=VALUE a line, stored as given: no secrets here.", "LOG_LEVEL=debug")}
            {area(
              "secretEnv",
              "KEY=${NAME} a line: the secret NAME from the host's secret store, never its value.",
              "API_TOKEN=${WEATHER_TOKEN}"
            )}
          </>
        )
        : (
          <>
            {input("url", { required: true, placeholder: "https://example.com/mcp" })}
            <div className="field">
              <label htmlFor="add-apiKey">{labels["apiKey"]}</label>
              <input
                id="add-apiKey"
                name="apiKey"
                autoComplete="off"
                spellCheck={false}
                aria-invalid={problemsOf("apiKey").length > 0}
                aria-describedby={describedBy("apiKey") ?? "add-apiKey-hint"}
                placeholder="${WEATHER_API_KEY}"
              />
              <small id="add-apiKey-hint" className="muted">
                Sent as Authorization: Bearer. A reference, ${"{NAME}"}, to the host's secret store, never the key
                itself.
              </small>
              {fieldProblems("apiKey")}
            </div>
            <details className="field">
              <summary>OAuth client (optional)</summary>
              <p className="muted">
                Without an API key the server's OAuth login is used: discovered and registered by itself, or with the
                client below. Authorize it from its row once added.
              </p>
              {input("oauthClientId", { placeholder: "a pre-registered client id" })}
              {input("oauthClientSecret", { placeholder: "${CRM_CLIENT_SECRET}" })}
              {input("oauthPrivateKey", { placeholder: "${CRM_PRIVATE_KEY} (private_key_jwt)" })}
              <div className="field">
                <label htmlFor="add-oauthSigningAlgorithm">{labels["oauthSigningAlgorithm"]}</label>
                <select id="add-oauthSigningAlgorithm" name="oauthSigningAlgorithm" defaultValue="">
                  <option value="">ES256 (default)</option>
                  {ServerConfig.OAuthSigningAlgorithm.literals.map((alg) => <option key={alg} value={alg}>{alg}
                  </option>)}
                </select>
              </div>
              {input("oauthClientMetadataUrl", { placeholder: "https://example.com/skald-client.json" })}
              {input("oauthScope", { placeholder: "read write" })}
              <div className="field">
                <label htmlFor="add-oauthGrant">{labels["oauthGrant"]}</label>
                <select id="add-oauthGrant" name="oauthGrant" defaultValue="">
                  <option value="">authorization code (a person logs in)</option>
                  <option value="client_credentials">client credentials (a machine client, no login)</option>
                </select>
              </div>
              <small className="muted">
                Secrets are references, ${"{NAME}"}, to the host's secret store, never the values.
              </small>
            </details>
          </>
        )}
      {problemsOf("form").length > 0 || problemsOf("transport").length > 0
        ? (
          <p className="error">
            {[...problemsOf("form"), ...problemsOf("transport")].map((p) => p.message).join("; ")}
          </p>
        )
        : null}
      {problems.length > 0
        ? (
          <div role="alert" className="error">
            The server was not added: {problems.map((p) => `${labels[p.field] ?? p.field}: ${p.message}`).join("; ")}
          </div>
        )
        : null}
      {error !== undefined ? <div role="alert" className="error">{error}</div> : null}
      <div className="actions">
        <button type="submit" disabled={pending}>Add</button>
        <button type="button" onClick={onDone}>Cancel</button>
        {pending ? <span className="muted">Adding…</span> : null}
      </div>
    </form>
  )
}
