/**
 * Shown while the host needs its access token (`NeedsToken`): what is wrong and a field to paste
 * the token into. The input is uncontrolled and the form reset on submit, so the token is in no
 * DOM node afterwards; it lives in this tab's `sessionStorage` and the page's client (Token.ts).
 */
import type { FormEvent } from "react"

export const TokenPrompt = ({ refused, onToken }: {
  /** A token was presented and refused (else there was none). */
  readonly refused: boolean
  readonly onToken: (token: string) => void
}) => {
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const form = e.currentTarget
    const value = new FormData(form).get("token")
    form.reset()
    if (typeof value === "string" && value.trim() !== "") onToken(value.trim())
  }
  return (
    <form className="token-prompt" aria-label="Access token" onSubmit={submit}>
      <p role="alert">
        {refused
          ? "The host did not accept the access token this page has. Paste the right one to connect."
          : "This host needs its access token to connect. Open the address skald serve printed (it carries " +
            "the token after #token=), or paste the token here."}
      </p>
      <div className="field">
        <label htmlFor="access-token">Access token</label>
        <input id="access-token" name="token" type="password" autoComplete="off" spellCheck={false} required />
      </div>
      <button type="submit">Connect</button>
    </form>
  )
}
