import type { EventBody, SessionEvent, SessionHeader } from '../../session/format.js';
import type { TraceSpan } from '../../trace/spans.js';
import { collectorHost } from './collector-host.js';
import { detached, nothingToDo } from '../../detached.js';

/** A run's spans, sent to an OTLP collector as they end (docs/traces.md). */
export interface LiveTrace {
  /** An event as the session file records it, written at `atMs`. */
  add(event: EventBody, atMs: number): void;
  /** Ends the spans still open, sends what is left, and waits for it a little: never long. */
  end(): Promise<void>;
}

/** How long the end of a run waits for its last spans to reach the collector. */
const END_WAIT_MS = 2_000;

export interface LiveTraceOptions {
  env: NodeJS.ProcessEnv;
  header: SessionHeader;
  /** A resumed run's recorded events: their spans were sent by the run that wrote them. */
  recorded: readonly SessionEvent[];
  /** Masks an event as the session file masks it. */
  mask: <T>(value: T) => T;
  warn: (message: string) => void;
  /** --trace-content */
  content: boolean;
}

/**
 * Live traces, when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (and
 * OTEL_TRACES_EXPORTER is not `none`); OpenTelemetry's packages load only then. A collector that
 * fails is said once, and the run goes on without traces: it never waits on one.
 */
export async function liveTrace(options: LiveTraceOptions): Promise<LiveTrace | undefined> {
  const { env, warn } = options;
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_TRACES_EXPORTER === 'none' || env.OTEL_SDK_DISABLED === 'true') return undefined;
  try {
    return await startTrace(options, endpoint);
  } catch (e) {
    // A variable the exporter cannot use (a malformed endpoint or header): said, and the run goes on.
    warn(`traces: cannot send them (${e instanceof Error ? e.message : String(e)}); the run goes on without traces`);
    return undefined;
  }
}

async function startTrace(options: LiveTraceOptions, endpoint: string): Promise<LiveTrace | undefined> {
  const { env, warn } = options;
  if (!/^https?:\/\/[^/]/.test(endpoint)) {
    warn(`traces: the OTLP endpoint "${endpoint}" is not an http:// or https:// URL; the run goes on without traces`);
    return undefined;
  }
  const [{ SpanBuilder }, { protocolOf, spanSender }] = await Promise.all([import('../../trace/spans.js'), import('../../trace/otlp.js')]);
  const protocol = protocolOf(env);
  if (typeof protocol !== 'string') {
    warn(`traces: OTEL_EXPORTER_OTLP_PROTOCOL ${protocol.unsupported} is not spoken here (http/protobuf or http/json); the run goes on without traces`);
    return undefined;
  }
  const where = collectorHost(endpoint);
  const sender = await spanSender(env, protocol);
  const builder = new SpanBuilder(options.header, { content: options.content });
  for (const e of options.recorded) builder.add(e);
  let queue: TraceSpan[] = [];
  let failed = false;
  const pending = new Set<Promise<void>>();
  const flush = () => {
    if (failed || queue.length === 0) return;
    const batch = queue;
    queue = [];
    const sent = sender.send(batch).catch((e: unknown) => {
      if (failed) return;
      failed = true;
      warn(`traces: the collector at ${where} did not take them (${e instanceof Error ? e.message : String(e)}); the run goes on without traces`);
    });
    pending.add(sent);
    detached(
      sent.finally(() => pending.delete(sent)),
      nothingToDo,
    ); // sent says its own failure, once
  };
  const timer = setInterval(flush, 1_000);
  timer.unref();
  // Traces never fail a run: a span that cannot be made is said once, and tracing stops.
  const guarded = (work: () => void) => {
    try {
      work();
    } catch (e) {
      failed = true;
      warn(`traces: a span could not be made (${e instanceof Error ? e.message : String(e)}); the run goes on without traces`);
    }
  };
  return {
    add(event, atMs) {
      if (failed) return;
      guarded(() => queue.push(...builder.add(options.mask({ ...event, seq: 0, at_ms: atMs } as SessionEvent))));
      if (queue.length >= 512) flush();
    },
    async end() {
      clearInterval(timer);
      if (!failed) guarded(() => queue.push(...builder.finish()));
      flush();
      const waited = await Promise.race([
        Promise.all([...pending]).then(() => true),
        new Promise<false>((r) => setTimeout(() => r(false), END_WAIT_MS).unref()),
      ]);
      if (!waited && !failed) warn(`traces: the collector at ${where} did not answer within ${END_WAIT_MS / 1000} s; the last spans may be lost`);
      await Promise.race([sender.shutdown().catch(() => {}), new Promise((r) => setTimeout(r, 500).unref())]);
    },
  };
}
