/**
 * A tool call as a card: its name, status, duration (live calls), arguments, and result — pretty
 * JSON when the result is JSON, the text otherwise — with its media inline (images, audio, video
 * from `/api/mcp-media/…`) and other files as links.
 */
import { type Call, mediaKind, prettyResult } from "./chat.js"

const duration = (call: Call): string | undefined => {
  if (call.startedAt === undefined || call.endedAt === undefined) return undefined
  const ms = call.endedAt - call.startedAt
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`
}

const fileName = (url: string): string => decodeURIComponent(url.split("/").pop() ?? url)

const Media = ({ url }: { readonly url: string }) => {
  switch (mediaKind(url)) {
    case "image":
      return <img className="media" src={url} alt={`Image from the tool: ${fileName(url)}`} />
    case "audio":
      return <audio className="media" src={url} controls aria-label={`Audio from the tool: ${fileName(url)}`} />
    case "video":
      return <video className="media" src={url} controls aria-label={`Video from the tool: ${fileName(url)}`} />
    case "file":
      return <a href={url} target="_blank" rel="noopener noreferrer">{fileName(url)}</a>
  }
}

export const ToolCard = ({ call }: { readonly call: Call }) => {
  const took = duration(call)
  return (
    <article className="tool-card" aria-label={`Tool call ${call.name}`} data-status={call.status}>
      <header>
        <code className="tool-name">{call.name}</code>
        <span className={`call-status ${call.status}`}>{call.status}</span>
        {took === undefined ? null : <span className="muted">{took}</span>}
      </header>
      <details>
        <summary>Arguments</summary>
        <pre className="json arguments">{JSON.stringify(call.arguments, null, 2)}</pre>
      </details>
      {call.result === undefined ?
        null :
        (
          <pre className={call.resultType === "json" ? "json result" : "text result"} data-testid="result">
          {prettyResult(call.result, call.resultType)}
          </pre>
        )}
      {call.truncated === true ? <p className="muted">The result was cut at the size cap.</p> : null}
      {call.mediaUrls.length === 0 ? null : (
        <div className="media-list">
          {call.mediaUrls.map((url) => <Media key={url} url={url} />)}
        </div>
      )}
    </article>
  )
}
