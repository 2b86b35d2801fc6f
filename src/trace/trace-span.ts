/** An attribute value as OpenTelemetry takes it. */
export type AttributeValue = string | number | boolean | string[];

/** One span of a run's trace, made from its session (docs/traces.md), before any OpenTelemetry type. */
export interface TraceSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** `client` for a model call (a request to another service), `internal` otherwise. */
  kind: 'internal' | 'client';
  startMs: number;
  endMs: number;
  attributes: Record<string, AttributeValue>;
  events: { name: string; atMs: number; attributes: Record<string, AttributeValue> }[];
  status: { code: 'unset' | 'ok' | 'error'; message?: string };
}

/** A message's first line, at most 300 characters: a span's status message. */
export function firstLine(text: string): string {
  const line = text.split('\n')[0]!;
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}
