/**
 * OpenTelemetry from the standard OTEL_* variables (docs/telemetry.md): traces and metrics
 * exported over OTLP/HTTP (`http/protobuf`, the default, or `http/json`) when a variable asks for
 * them, nothing otherwise. This module only reads the variables; the SDK and the exporters
 * (TelemetrySdk.ts) are imported when one is on, so a process without them never loads them and
 * its hot path stays on Effect's built-in tracer (the engine then makes no span and records no
 * metric: @skald/mcp internal/span.ts).
 *
 * A signal is on when `OTEL_<SIGNAL>_EXPORTER` says `otlp`, or when it is unset and an OTLP
 * endpoint is (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT`); `none`
 * turns it off. Unsupported values are ignored with a warning, as the OpenTelemetry environment
 * specification asks. The exporters themselves read the endpoint, headers and timeouts from the
 * same variables; the resource comes from `OTEL_SERVICE_NAME` (default `skald`) and
 * `OTEL_RESOURCE_ATTRIBUTES`. The layer's finalizer flushes what is buffered, so a process that
 * provides it around its work exports everything before it exits.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/** The wire formats of OTLP over HTTP. */
export type Protocol = "http/protobuf" | "http/json"

/** One signal's export, when it is on. */
export interface Export {
  readonly protocol: Protocol
}

/** What the variables ask for. */
export interface Settings {
  readonly traces: Option.Option<Export>
  readonly metrics: Option.Option<Export>
  /** `OTEL_METRIC_EXPORT_INTERVAL` (default 60 s). */
  readonly metricIntervalMillis: number
  /** Neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names the service: it is `skald`. */
  readonly defaultServiceName: boolean
}

const variable = (name: string) =>
  Config.option(Config.string(name)).pipe(Config.map(Option.filter((value) => value.trim().length > 0)))

const signal = (name: "TRACES" | "METRICS") =>
  Effect.gen(function*() {
    const exporter = yield* variable(`OTEL_${name}_EXPORTER`)
    const endpoint = yield* variable(`OTEL_EXPORTER_OTLP_${name}_ENDPOINT`)
    const sharedEndpoint = yield* variable("OTEL_EXPORTER_OTLP_ENDPOINT")
    const wanted = Option.match(exporter, {
      onNone: () => Option.isSome(endpoint) || Option.isSome(sharedEndpoint),
      onSome: (value) => value.split(",").map((v) => v.trim()).includes("otlp")
    })
    if (Option.isSome(exporter)) {
      const unsupported = exporter.value.split(",").map((v) => v.trim()).filter((v) => v !== "otlp" && v !== "none")
      if (unsupported.length > 0) {
        yield* Effect.logWarning(
          `OTEL_${name}_EXPORTER=${exporter.value}: only otlp and none are supported here; ignored ${
            unsupported.join(", ")
          }`
        )
      }
    }
    if (!wanted) return Option.none<Export>()
    const own = yield* variable(`OTEL_EXPORTER_OTLP_${name}_PROTOCOL`)
    const shared = yield* variable("OTEL_EXPORTER_OTLP_PROTOCOL")
    const protocol = Option.getOrElse(Option.orElse(own, () => shared), () => "http/protobuf")
    if (protocol !== "http/protobuf" && protocol !== "http/json") {
      yield* Effect.logWarning(
        `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported (use http/protobuf or http/json): ${name.toLowerCase()} are not exported`
      )
      return Option.none<Export>()
    }
    return Option.some<Export>({ protocol })
  })

/** The settings from the OTEL_* variables (through `Config`). */
export const settings: Effect.Effect<Settings> = Effect.gen(function*() {
  const traces = yield* signal("TRACES")
  const metrics = yield* signal("METRICS")
  const interval = yield* Config.option(Config.integer("OTEL_METRIC_EXPORT_INTERVAL"))
  const serviceName = yield* variable("OTEL_SERVICE_NAME")
  const resource = yield* variable("OTEL_RESOURCE_ATTRIBUTES")
  const namedInResource = Option.exists(resource, (list) => /(^|,)\s*service\.name\s*=/.test(list))
  return {
    traces,
    metrics,
    metricIntervalMillis: Option.getOrElse(Option.filter(interval, (ms) => ms > 0), () => 60_000),
    defaultServiceName: Option.isNone(serviceName) && !namedInResource
  }
}).pipe(Effect.orDie)

/** True when the settings export anything. */
export const isOn = (settings: Settings): boolean => Option.isSome(settings.traces) || Option.isSome(settings.metrics)

/**
 * OpenTelemetry as the variables ask: the SDK's tracer and metric reader with the OTLP/HTTP
 * exporters; closing the layer flushes and shuts them down. When nothing is exported, Effect's
 * tracer is switched off (`Layer.setTracerEnabled(false)`): a span nobody records is then a
 * no-op (no ids, no attributes, no timing), where the built-in tracer would still make each one
 * — every `Effect.fn`, every SQL statement's `sql.execute` — on the agent's and the engine's paths.
 */
export const layer: Layer.Layer<never> = Layer.unwrapEffect(
  Effect.gen(function*() {
    const wanted = yield* settings
    if (!isOn(wanted)) return Layer.setTracerEnabled(false)
    const Sdk = yield* Effect.promise(() => import("./TelemetrySdk.js"))
    return Sdk.layer(wanted)
  })
)
