import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { detectResources, envDetector, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import pkg from '../../package.json' with { type: 'json' };
import type { TraceSpan } from './spans.js';

// OpenTelemetry's packages, loaded only by `conclave trace` and by a run with OTEL_EXPORTER_OTLP_*
// set (docs/traces.md): a run without them starts as fast as before.

const SCOPE = { name: 'conclave', version: pkg.version };
const KIND = { internal: 0, client: 2 } as const;
const STATUS = { unset: 0, ok: 1, error: 2 } as const;

/** conclave as the service that made the spans; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win. */
export function traceResource(env: NodeJS.ProcessEnv): Resource {
  const base = resourceFromAttributes({ 'service.name': 'conclave', 'service.version': pkg.version });
  return env.OTEL_SERVICE_NAME || env.OTEL_RESOURCE_ATTRIBUTES ? base.merge(detectResources({ detectors: [envDetector] })) : base;
}

const hrTime = (ms: number): [number, number] => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)];

/** Our spans as the SDK's exporters take them. */
export function readableSpans(spans: readonly TraceSpan[], resource: Resource): ReadableSpan[] {
  return spans.map((s) => ({
    name: s.name,
    kind: KIND[s.kind],
    spanContext: () => ({ traceId: s.traceId, spanId: s.spanId, traceFlags: 1 }),
    ...(s.parentSpanId ? { parentSpanContext: { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: 1 } } : {}),
    startTime: hrTime(s.startMs),
    endTime: hrTime(s.endMs),
    duration: hrTime(s.endMs - s.startMs),
    status: { code: STATUS[s.status.code], ...(s.status.message ? { message: s.status.message } : {}) },
    attributes: s.attributes,
    links: [],
    events: s.events.map((e) => ({ name: e.name, time: hrTime(e.atMs), attributes: e.attributes })),
    ended: true,
    resource,
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  }));
}

/** The spans as an OTLP/JSON export request (`conclave trace --format json`). */
export function otlpJson(spans: readonly TraceSpan[], env: NodeJS.ProcessEnv): string {
  const bytes = JsonTraceSerializer.serializeRequest(readableSpans(spans, traceResource(env)));
  return Buffer.from(bytes ?? new Uint8Array()).toString('utf8');
}

export type OtlpProtocol = 'http/json' | 'http/protobuf';

/** The protocol the standard variables ask for (http/protobuf when none does); grpc is not spoken here. */
export function protocolOf(env: NodeJS.ProcessEnv): OtlpProtocol | { unsupported: string } {
  const asked = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  return asked === 'http/json' || asked === 'http/protobuf' ? asked : { unsupported: asked };
}

/** Sends spans to an OTLP/HTTP endpoint; `url` (--otlp) or else the OTEL_* variables say where. */
export interface SpanSender {
  send(spans: readonly TraceSpan[]): Promise<void>;
  shutdown(): Promise<void>;
}

/** The OTLP/HTTP traces URL of a collector given as its base (`http://host:4318`) or in full. */
export function tracesUrl(url: string): string {
  const parsed = new URL(url);
  if (!/\/v1\/traces\/?$/.test(parsed.pathname)) parsed.pathname = `${parsed.pathname.replace(/\/$/, '')}/v1/traces`;
  return parsed.toString();
}

export async function spanSender(env: NodeJS.ProcessEnv, protocol: OtlpProtocol, url?: string): Promise<SpanSender> {
  const { OTLPTraceExporter } =
    protocol === 'http/json' ? await import('@opentelemetry/exporter-trace-otlp-http') : await import('@opentelemetry/exporter-trace-otlp-proto');
  const exporter = new OTLPTraceExporter(url ? { url: tracesUrl(url) } : {});
  const resource = traceResource(env);
  return {
    send: (spans) =>
      new Promise((resolve, reject) => {
        if (spans.length === 0) return resolve();
        exporter.export(readableSpans(spans, resource), (result) =>
          result.code === 0 ? resolve() : reject(result.error ?? new Error('the collector refused the spans')),
        );
      }),
    shutdown: () => exporter.shutdown(),
  };
}
