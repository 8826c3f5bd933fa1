/**
 * A loopback OTLP/HTTP receiver for the telemetry tests: it takes what an exporter POSTs to
 * `/v1/traces` and `/v1/metrics` (answering 200 with an empty export response), keeps every
 * request's raw bytes, and reads the OTLP JSON encoding (`http/json`) into flat spans and metric
 * names. `http/protobuf` bodies are kept as bytes only (the 0.223 transformer encodes but does not
 * decode): a test looks for strings in them.
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import * as Http from "node:http"

/** One POST the receiver took. */
export interface Received {
  readonly path: string
  readonly contentType: string
  readonly body: Buffer
}

/** A span as exported, its attributes as plain values. */
export interface ExportedSpan {
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly kind: number
  readonly attributes: Record<string, unknown>
  readonly status: { readonly code?: number; readonly message?: string }
  readonly resource: Record<string, unknown>
}

export interface Receiver {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string
  readonly received: () => ReadonlyArray<Received>
  /** The spans of every `http/json` trace export. */
  readonly spans: () => ReadonlyArray<ExportedSpan>
  /** The metric data points of every `http/json` metric export: name and attributes. */
  readonly points: () => ReadonlyArray<{ readonly name: string; readonly attributes: Record<string, unknown> }>
}

interface AnyValue {
  readonly stringValue?: string
  readonly intValue?: number | string
  readonly doubleValue?: number
  readonly boolValue?: boolean
  readonly arrayValue?: { readonly values?: ReadonlyArray<AnyValue> }
}
interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}

const valueOf = (v: AnyValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ??
    v.arrayValue?.values?.map(valueOf)

const attributesOf = (list: ReadonlyArray<KeyValue> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]))

const jsonBodies = (received: ReadonlyArray<Received>, path: string): Array<any> =>
  received.filter((r) => r.path === path && r.contentType.startsWith("application/json")).map((r) =>
    JSON.parse(r.body.toString("utf8"))
  )

/** Starts the receiver on 127.0.0.1; it stops when the scope closes. */
export const otlpReceiver: Effect.Effect<Receiver, never, Scope.Scope> = Effect.gen(function*() {
  const received: Array<Received> = []
  const server = yield* Effect.acquireRelease(
    Effect.async<Http.Server>((resume) => {
      const server = Http.createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const contentType = request.headers["content-type"] ?? ""
          received.push({ path: request.url ?? "", contentType, body: Buffer.concat(chunks) })
          const json = contentType.startsWith("application/json")
          response.writeHead(200, { "content-type": json ? "application/json" : "application/x-protobuf" })
          response.end(json ? "{}" : undefined)
        })
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
  const address = server.address()
  if (address === null || typeof address === "string") return yield* Effect.die("the receiver has no port")
  return {
    url: `http://127.0.0.1:${address.port}`,
    received: () => received,
    spans: () =>
      jsonBodies(received, "/v1/traces").flatMap((body) =>
        (body.resourceSpans ?? []).flatMap((rs: any) =>
          (rs.scopeSpans ?? []).flatMap((ss: any) =>
            (ss.spans ?? []).map((span: any): ExportedSpan => ({
              name: span.name,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? "",
              kind: span.kind,
              attributes: attributesOf(span.attributes),
              status: span.status ?? {},
              resource: attributesOf(rs.resource?.attributes)
            }))
          )
        )
      ),
    points: () =>
      jsonBodies(received, "/v1/metrics").flatMap((body) =>
        (body.resourceMetrics ?? []).flatMap((rm: any) =>
          (rm.scopeMetrics ?? []).flatMap((sm: any) =>
            (sm.metrics ?? []).flatMap((metric: any) => {
              const data = metric.histogram ?? metric.sum ?? metric.gauge ?? {}
              return (data.dataPoints ?? []).map((point: any) => ({
                name: metric.name,
                attributes: attributesOf(point.attributes)
              }))
            })
          )
        )
      )
  }
})
