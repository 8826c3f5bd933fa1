/**
 * The OpenTelemetry SDK with the OTLP/HTTP exporters, as Telemetry.ts's settings ask. Imported
 * only when an OTEL_* variable turns a signal on: nothing here loads otherwise.
 *
 * `@opentelemetry/exporter-trace-otlp-http` and `exporter-metrics-otlp-http` send JSON; for
 * `http/protobuf` the same exporter bases are given the protobuf serializers of
 * `@opentelemetry/otlp-transformer` (what the `-proto` exporter packages do). Either way the
 * exporters read the endpoint, headers and timeout from the OTEL_EXPORTER_OTLP_* variables.
 *
 * @since 0.1.0
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPMetricExporter, OTLPMetricExporterBase } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { OTLPExporterBase } from "@opentelemetry/otlp-exporter-base"
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from "@opentelemetry/otlp-exporter-base/node-http"
import {
  MetricsExporterMetricsHelper,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
  TraceExporterMetricsHelper
} from "@opentelemetry/otlp-transformer"
import { PeriodicExportingMetricReader, type PushMetricExporter } from "@opentelemetry/sdk-metrics"
import {
  AlwaysOffSampler,
  BatchSpanProcessor,
  NoopSpanProcessor,
  type SpanExporter
} from "@opentelemetry/sdk-trace-base"
import * as Option from "effect/Option"
import type * as Telemetry from "./Telemetry.js"

const PROTOBUF = { "Content-Type": "application/x-protobuf" }

const spanExporter = (exporter: Telemetry.Export): SpanExporter =>
  exporter.protocol === "http/json"
    ? new OTLPTraceExporter()
    : new OTLPExporterBase(
      createOtlpHttpExportDelegate(
        convertLegacyHttpOptions({}, "TRACES", "v1/traces", PROTOBUF),
        ProtobufTraceSerializer,
        "otlp_http_span_exporter",
        TraceExporterMetricsHelper,
        undefined
      )
    )

const metricExporter = (exporter: Telemetry.Export): PushMetricExporter =>
  exporter.protocol === "http/json"
    ? new OTLPMetricExporter()
    : new OTLPMetricExporterBase(
      createOtlpHttpExportDelegate(
        convertLegacyHttpOptions({}, "METRICS", "v1/metrics", PROTOBUF),
        ProtobufMetricsSerializer,
        "otlp_http_metric_exporter",
        MetricsExporterMetricsHelper,
        undefined
      )
    )

/**
 * The SDK layer. With metrics but no traces a tracer is installed all the same, one that samples
 * nothing: the engine records its metrics only under an installed tracer.
 */
export const layer = (settings: Telemetry.Settings) =>
  NodeSdk.layer(() => ({
    spanProcessor: Option.match(settings.traces, {
      onNone: () => new NoopSpanProcessor(),
      onSome: (traces) => new BatchSpanProcessor(spanExporter(traces))
    }),
    ...(Option.isNone(settings.traces) ? { tracerConfig: { sampler: new AlwaysOffSampler() } } : {}),
    ...(Option.isSome(settings.metrics)
      ? {
        metricReader: new PeriodicExportingMetricReader({
          exporter: metricExporter(settings.metrics.value),
          exportIntervalMillis: settings.metricIntervalMillis,
          exportTimeoutMillis: Math.min(30_000, settings.metricIntervalMillis)
        })
      }
      : {}),
    ...(settings.defaultServiceName ? { resource: { serviceName: "skald" } } : {})
  }))
