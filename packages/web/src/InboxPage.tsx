/**
 * The Inbox page (`/inbox`): what waits for the person, live (`Inbox.Watch`, folded in the shell
 * so the navigation shows the count on every page). Approvals (the tool, why, its arguments;
 * Allow / Deny / Always allow), elicitations (a form built from the item's fields, masked fields
 * as password inputs; a yes/no confirmation; URL mode: the link, opened on consent, then shown as
 * waiting), notifications (when posted, the body's line breaks kept, a link to the session they came from;
 * Dismiss); a countdown to each deadline.
 *
 * The form's inputs are uncontrolled: typed values live only in the DOM inputs, are read once on
 * submit, and the form is reset at once — a secret never enters React state.
 */
import { InboxItem } from "@skald/domain"
import * as Clock from "effect/Clock"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { type FormEvent, type MouseEvent, useState } from "react"
import { useAction, useStreamFold } from "./hooks.js"
import type { PageRuntime } from "./HostClient.js"
import * as InboxApi from "./inboxApi.js"

const now = Stream.repeatEffectWithSchedule(Clock.currentTimeMillis, Schedule.spaced("1 second"))

const Countdown = ({ runtime, deadline }: { readonly runtime: PageRuntime; readonly deadline: number }) => {
  const { state: t } = useStreamFold(runtime, () => now, 0, (_, n) => n, [])
  if (t === 0) return null
  const left = Math.max(0, Math.round((deadline - t) / 1000))
  const text = left >= 60 ? `${Math.floor(left / 60)} min ${left % 60} s` : `${left} s`
  return (
    <span className="countdown" role="timer" aria-label="Time left to answer">
      {left === 0 ? "expiring" : `${text} left`}
    </span>
  )
}

const originOf = (item: InboxItem.InboxItem): string =>
  [
    item.origin.server === undefined ? undefined : `server ${item.origin.server}`,
    item.origin.tool === undefined ? undefined : `tool ${item.origin.tool}`
  ].filter((s) => s !== undefined).join(", ")

const inputType = (field: typeof InboxItem.StringField.Type): string => {
  if (field.masked) return "password"
  switch (field.format) {
    case "email":
      return "email"
    case "uri":
      return "url"
    case "date":
      return "date"
    case "date-time":
      return "datetime-local"
    default:
      return "text"
  }
}

const FieldInput = ({ field, form }: { readonly field: InboxItem.Field; readonly form: string }) => {
  const id = `${form}-${field.name}`
  const label = (
    <label htmlFor={id}>
      {field.title ?? field.name}
      {field.required ? " (required)" : ""}
    </label>
  )
  const hint = field.description === undefined ? null : <small className="muted">{field.description}</small>
  switch (field.kind) {
    case "string":
      return (
        <div className="field">
          {label}
          <input
            id={id}
            name={field.name}
            type={inputType(field)}
            required={field.required}
            minLength={field.minLength}
            maxLength={field.maxLength}
            defaultValue={field.masked ? undefined : field.default}
            autoComplete={field.masked ? "off" : undefined}
          />
          {hint}
        </div>
      )
    case "number":
    case "integer":
      return (
        <div className="field">
          {label}
          <input
            id={id}
            name={field.name}
            type="number"
            step={field.kind === "integer" ? 1 : "any"}
            min={field.minimum}
            max={field.maximum}
            required={field.required}
            defaultValue={field.default}
          />
          {hint}
        </div>
      )
    case "boolean":
      return (
        <div className="field checkbox">
          <input id={id} name={field.name} type="checkbox" defaultChecked={field.default === true} />
          {label}
          {hint}
        </div>
      )
    case "enum":
      return (
        <div className="field">
          {label}
          <select id={id} name={field.name} required={field.required} defaultValue={field.default ?? ""}>
            {field.required && field.default !== undefined ? null : <option value="">—</option>}
            {field.choices.map((c) => <option key={c.value} value={c.value}>{c.title ?? c.value}</option>)}
          </select>
          {hint}
        </div>
      )
    case "multi-enum":
      return (
        <fieldset className="field">
          <legend>{field.title ?? field.name}{field.required ? " (required)" : ""}</legend>
          {field.choices.map((c) => (
            <label key={c.value} className="choice">
              <input
                type="checkbox"
                name={field.name}
                value={c.value}
                defaultChecked={field.default?.includes(c.value) === true}
              />
              {c.title ?? c.value}
            </label>
          ))}
          {hint}
        </fieldset>
      )
  }
}

/** The form's content, read from the DOM once: empty optional fields are left out. */
const contentOf = (fields: ReadonlyArray<InboxItem.Field>, data: FormData): Record<string, unknown> => {
  const content: Record<string, unknown> = {}
  for (const field of fields) {
    switch (field.kind) {
      case "boolean":
        content[field.name] = data.has(field.name)
        break
      case "multi-enum":
        content[field.name] = data.getAll(field.name).map(String)
        break
      default: {
        const raw = data.get(field.name)
        const value = typeof raw === "string" ? raw : ""
        if (value === "" && !field.required) break
        content[field.name] = field.kind === "number" || field.kind === "integer" ? Number(value) : value
      }
    }
  }
  return content
}

type Runner = ReturnType<typeof useAction<any>>

const Answers = (
  { action, children }: {
    readonly action: Runner
    readonly children: React.ReactNode
  }
) => (
  <div className="answers">
    {children}
    {action.pending ? <span className="muted">Sending…</span> : null}
    {action.error === undefined ? null : <p className="error" role="alert">{action.error}</p>}
  </div>
)

const ApprovalCard = ({ item, runtime }: { readonly item: InboxItem.Approval; readonly runtime: PageRuntime }) => {
  const action = useAction(runtime)
  const answer = (a: InboxItem.InboxAnswer) => action.run(InboxApi.resolve(item.id, a))
  return (
    <>
      <h3>
        Allow <code>{item.tool}</code>?
      </h3>
      <p className="muted">{item.reason}</p>
      <pre className="json arguments" aria-label="Arguments">{JSON.stringify(item.arguments, null, 2)}</pre>
      <Answers action={action}>
        <button
          type="button"
          disabled={action.pending}
          onClick={() => answer(InboxItem.Approve.make({ always: false }))}
          aria-label={`Allow ${item.tool}`}
        >
          Allow
        </button>
        <button
          type="button"
          disabled={action.pending}
          onClick={() => answer(InboxItem.Deny.make({}))}
          aria-label={`Deny ${item.tool}`}
        >
          Deny
        </button>
        <button
          type="button"
          disabled={action.pending}
          onClick={() => answer(InboxItem.Approve.make({ always: true }))}
          aria-label={`Always allow ${item.tool}`}
        >
          Always allow
        </button>
      </Answers>
    </>
  )
}

const ElicitationCard = (
  { item, runtime, onOpened }: {
    readonly item: InboxItem.Elicitation
    readonly runtime: PageRuntime
    readonly onOpened: (item: InboxItem.Elicitation) => void
  }
) => {
  const action = useAction(runtime)
  const answer = (a: InboxItem.InboxAnswer) => action.run(InboxApi.resolve(item.id, a))
  const formId = `form-${item.id}`
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const form = e.currentTarget
    const content = contentOf(item.fields, new FormData(form))
    // The typed values leave the DOM now; only `content` (sent, then dropped) holds them.
    form.reset()
    answer(InboxItem.Accept.make({ content }))
  }
  const declineCancel = (
    <>
      <button type="button" disabled={action.pending} onClick={() => answer(InboxItem.Decline.make({}))}>
        Decline
      </button>
      <button type="button" disabled={action.pending} onClick={() => answer(InboxItem.Cancel.make({}))}>Cancel</button>
    </>
  )
  if (item.mode === "url") {
    return (
      <>
        <h3>{item.message}</h3>
        <p>
          The server asks you to open: <a href={item.url} target="_blank" rel="noopener noreferrer">{item.url}</a>
        </p>
        <Answers action={action}>
          <button
            type="button"
            disabled={action.pending || item.url === undefined}
            onClick={() => {
              if (item.url !== undefined) globalThis.open(item.url, "_blank", "noopener,noreferrer")
              onOpened(item)
              answer(InboxItem.Accept.make({}))
            }}
          >
            Open the page
          </button>
          {declineCancel}
        </Answers>
      </>
    )
  }
  if (item.confirmation) {
    return (
      <>
        <h3>{item.message}</h3>
        <Answers action={action}>
          <button type="button" disabled={action.pending} onClick={() => answer(InboxItem.Accept.make({}))}>Yes</button>
          {declineCancel}
        </Answers>
      </>
    )
  }
  return (
    <form id={formId} onSubmit={submit} aria-label={item.message}>
      <h3>{item.message}</h3>
      {item.fields.map((f) => <FieldInput key={f.name} field={f} form={formId} />)}
      <Answers action={action}>
        <button type="submit" disabled={action.pending}>Submit</button>
        {declineCancel}
      </Answers>
    </form>
  )
}

/** A link inside the app: followed with the History API unless a modifier asks for a tab. */
const PageLink = (
  { to, navigate, children }: {
    readonly to: string
    readonly navigate: (to: string) => void
    readonly children: React.ReactNode
  }
) => (
  <a
    href={to}
    onClick={(e: MouseEvent) => {
      if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return
      e.preventDefault()
      navigate(to)
    }}
  >
    {children}
  </a>
)

/**
 * A notification: its title, the body as written (its line breaks kept: a TIC briefing is a few
 * short lines), the session it came from (the TIC turn's transcript), and Dismiss, named with
 * the title (several may be pending).
 */
const NotificationCard = (
  { item, runtime, navigate }: {
    readonly item: InboxItem.Notification
    readonly runtime: PageRuntime
    readonly navigate: (to: string) => void
  }
) => {
  const action = useAction(runtime)
  const session = item.origin.sessionId
  return (
    <>
      <h3>{item.title}</h3>
      <p className="body">{item.body}</p>
      {session === undefined ? null : (
        <p className="muted">
          <PageLink to={`/chat/${encodeURIComponent(session)}`} navigate={navigate}>Open the session</PageLink>
        </p>
      )}
      <Answers action={action}>
        <button
          type="button"
          disabled={action.pending}
          onClick={() => action.run(InboxApi.resolve(item.id, InboxItem.Dismiss.make({})))}
          aria-label={`Dismiss ${item.title}`}
        >
          Dismiss
        </button>
      </Answers>
    </>
  )
}

const kindName = { Approval: "Approval", Elicitation: "Question", Notification: "Notification" } as const

export const InboxPage = (
  { runtime, items, navigate }: {
    readonly runtime: PageRuntime
    readonly items: ReadonlyArray<InboxItem.InboxItem>
    readonly navigate: (to: string) => void
  }
) => {
  const [waiting, setWaiting] = useState<ReadonlyArray<InboxItem.Elicitation>>([])
  return (
    <section className="inbox" aria-label="Inbox">
      <h2>Inbox</h2>
      {items.length === 0 ? <p className="muted">Nothing waits for you.</p> : null}
      <ul className="items">
        {items.map((item) => (
          <li key={item.id} className={`item ${item._tag.toLowerCase()}`} data-kind={item._tag}>
            <article aria-label={`${kindName[item._tag]} ${item.id}`}>
              <p className="meta muted">
                {kindName[item._tag]}
                {originOf(item) === "" ? "" : ` · ${originOf(item)}`}
                {item._tag === "Notification"
                  ? (
                    <>
                      {" · posted "}
                      <time dateTime={new Date(item.createdAt).toISOString()}>
                        {new Date(item.createdAt).toLocaleTimeString()}
                      </time>
                    </>
                  )
                  : null}
                {item.deadline === undefined ? null : (
                  <>
                    {" · "}
                    <Countdown runtime={runtime} deadline={item.deadline} />
                  </>
                )}
              </p>
              {item._tag === "Approval"
                ? <ApprovalCard item={item} runtime={runtime} />
                : item._tag === "Elicitation"
                ? <ElicitationCard item={item} runtime={runtime} onOpened={(i) => setWaiting((w) => [...w, i])} />
                : <NotificationCard item={item} runtime={runtime} navigate={navigate} />}
            </article>
          </li>
        ))}
      </ul>
      {waiting.length === 0 ? null : (
        <>
          <h3>Opened in another tab</h3>
          <ul className="waiting">
            {waiting.map((w) => (
              <li key={w.id}>
                <span>Waiting for you to finish at</span>
                <a href={w.url} target="_blank" rel="noopener noreferrer">{w.url}</a>{" "}
                <button type="button" onClick={() => setWaiting((all) => all.filter((x) => x.id !== w.id))}>
                  Hide
                </button>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  )
}

export default InboxPage
