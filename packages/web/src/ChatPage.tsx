/**
 * The Chat page (`/chat`, `/chat/<session>`): the sessions, a new session, the transcript — the
 * user's messages, the assistant's text streaming in, a card per tool call, each turn's usage —
 * the composer (Enter sends, Shift+Enter a new line) and Stop (Esc too). A session opened from
 * the list is replayed from its history, rendered as it was live; a turn still running in it is
 * attached to.
 */
import { type AgentRpcs, TurnEvent } from "@skald/domain"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as Stream from "effect/Stream"
import * as StreamM from "effect/Stream"
import { type FormEvent, type KeyboardEvent, useCallback, useEffect, useRef, useState } from "react"
import { type End, fromHistory, pending, step, type Turn } from "./chat.js"
import * as ChatApi from "./chatApi.js"
import { useAction, useStreamFold } from "./hooks.js"
import { type PageRuntime } from "./HostClient.js"
import { ToolCard } from "./ToolCard.js"

const messageOf = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  return error instanceof Error ? error.message : String(error)
}

const EndLine = ({ end }: { readonly end: End | undefined }) => {
  if (end === undefined) return <p className="muted turn-end" aria-live="polite">Working…</p>
  switch (end._tag) {
    case "Done":
      return end.usage === undefined ? null : (
        <p className="muted turn-end usage" data-testid="usage">
          Tokens: {end.usage.inputTokens} in · {end.usage.outputTokens} out
          {end.rounds === undefined ? null : ` · ${end.rounds} round${end.rounds === 1 ? "" : "s"}`}
          {end.note === undefined ? null : ` · ${end.note}`}
        </p>
      )
    case "Failed":
      return <p className="error turn-end" role="alert">The turn failed: {end.message}</p>
    case "Stopped":
      return <p className="muted turn-end">Stopped.</p>
  }
}

const TurnView = ({ turn }: { readonly turn: Turn }) => (
  <li className="turn">
    <div className="msg user">
      <span className="who">You</span>
      <p className="text">{turn.message}</p>
    </div>
    <div className="msg assistant">
      {turn.parts.map((part, i) =>
        part._tag === "Text"
          ? <p className="text" key={i}>{part.text}</p>
          : <ToolCard key={part.callId} call={part} />
      )}
      <EndLine end={turn.end} />
    </div>
  </li>
)

const titleOf = (s: AgentRpcs.SessionInfo): string => s.title ?? `Session of ${new Date(s.updatedAt).toLocaleString()}`

export const ChatPage = (
  { runtime, sessionId, navigate }: {
    readonly runtime: PageRuntime
    readonly sessionId: string | undefined
    readonly navigate: (path: string) => void
  }
) => {
  const sessionList = useStreamFold(
    runtime,
    () => ChatApi.sessions,
    [] as ReadonlyArray<AgentRpcs.SessionInfo>,
    (_, a) => a,
    []
  )
  const [turns, setTurns] = useState<ReadonlyArray<Turn>>([])
  const [error, setError] = useState<string | undefined>(undefined)
  const [running, setRunning] = useState(false)
  const live = useRef<{ fiber: Fiber.RuntimeFiber<void, unknown>; session: string | undefined } | undefined>(undefined)
  const composer = useRef<HTMLTextAreaElement>(null)
  const stopAction = useAction(runtime)

  /** Follows a turn's events into the last turn of the transcript. */
  const follow = useCallback(
    (events: Stream.Stream<TurnEvent.TurnEvent, unknown, any>, session: string | undefined) => {
      setRunning(true)
      setError(undefined)
      const fiber = runtime.runFork(
        StreamM.runForEach(events, (event) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.sync(() => {
              if (event._tag === "TurnStarted" && live.current !== undefined && live.current.session === undefined) {
                live.current.session = event.sessionId
                navigate(`/chat/${event.sessionId}`)
              }
              if (TurnEvent.isEnd(event)) setRunning(false)
              setTurns((all) => {
                const last = all[all.length - 1]
                // A turn's start replaces the turn being sent (or replayed while running), never an ended one.
                return last === undefined || (event._tag === "TurnStarted" && last.end !== undefined)
                  ? [...all, step(pending(""), event, now)]
                  : [...all.slice(0, -1), step(last, event, now)]
              })
            })))
      )
      live.current = { fiber, session }
      fiber.addObserver((exit) => {
        if (live.current?.fiber === fiber) setRunning(false)
        if (Exit.isFailure(exit) && !Exit.isInterrupted(exit)) setError(messageOf(exit.cause))
      })
    },
    [runtime, navigate]
  )

  // Opening a session: its history, and its running turn attached.
  useEffect(() => {
    if (live.current !== undefined && live.current.session === sessionId && sessionId !== undefined) return
    if (live.current !== undefined) runtime.runFork(Fiber.interrupt(live.current.fiber))
    live.current = undefined
    setTurns([])
    setRunning(false)
    setError(undefined)
    if (sessionId === undefined) return
    const fiber = runtime.runFork(ChatApi.history(sessionId))
    fiber.addObserver((exit) => {
      if (Exit.isFailure(exit)) {
        if (!Exit.isInterrupted(exit)) setError(messageOf(exit.cause))
        return
      }
      const { messages, session } = exit.value
      setTurns(fromHistory(messages, session.running))
      if (session.running) follow(ChatApi.attach(sessionId), sessionId)
    })
    return () => void runtime.runFork(Fiber.interrupt(fiber))
  }, [runtime, sessionId, follow])

  // Leaving the page stops following (the turn goes on in the host).
  useEffect(() => () => {
    if (live.current !== undefined) runtime.runFork(Fiber.interrupt(live.current.fiber))
  }, [runtime])

  const stop = useCallback(() => {
    const session = live.current?.session ?? sessionId
    if (session !== undefined) stopAction.run(ChatApi.stop(session))
  }, [sessionId, stopAction.run])

  // Esc stops the running turn.
  useEffect(() => {
    if (!running) return
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key === "Escape") stop()
    }
    globalThis.addEventListener("keydown", onKey)
    return () => globalThis.removeEventListener("keydown", onKey)
  }, [running, stop])

  const submit = (e?: FormEvent) => {
    e?.preventDefault()
    const box = composer.current
    if (box === null || running) return
    const message = box.value.trim()
    if (message === "") return
    box.value = ""
    setTurns((all) => [...all, pending(message)])
    follow(ChatApi.send(message, sessionId), sessionId)
  }

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault()
      submit()
    }
  }

  return (
    <div className="chat">
      <aside className="sessions" aria-label="Sessions">
        <button type="button" className="new-chat" onClick={() => navigate("/chat")}>New chat</button>
        <ul>
          {sessionList.state.map((s) => (
            <li key={s.id}>
              <a
                href={`/chat/${s.id}`}
                aria-current={s.id === sessionId ? "page" : undefined}
                onClick={(e) => {
                  e.preventDefault()
                  navigate(`/chat/${s.id}`)
                }}
              >
                {titleOf(s)}
                {s.running ? <span className="muted">(running)</span> : null}
              </a>
            </li>
          ))}
        </ul>
      </aside>
      <section className="conversation" aria-label="Conversation">
        <ol className="transcript" data-testid="transcript">
          {turns.map((turn, i) => <TurnView key={i} turn={turn} />)}
        </ol>
        {error === undefined ? null : <p className="error" role="alert">{error}</p>}
        {stopAction.error === undefined ? null : <p className="error" role="alert">{stopAction.error}</p>}
        <form className="composer" onSubmit={submit}>
          <label htmlFor="message">Message</label>
          <textarea
            id="message"
            ref={composer}
            rows={3}
            onKeyDown={onKeyDown}
            placeholder="Ask something (Enter sends, Shift+Enter for a new line)"
          />
          <div className="composer-actions">
            <button type="submit" disabled={running}>Send</button>
            <button type="button" onClick={stop} disabled={!running}>Stop (Esc)</button>
          </div>
        </form>
      </section>
    </div>
  )
}

export default ChatPage
