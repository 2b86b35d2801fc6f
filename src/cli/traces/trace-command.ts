import { ConclaveError } from '../../conclave-error.js';
import { readSession, SessionFileError } from '../../session/reader.js';
import { spansOf } from '../../trace/spans.js';
import { collectorError, collectorHost } from './collector-host.js';
import { otlpJson, protocolOf, spanSender, tracesUrl } from '../../trace/otlp.js';
import { asUsageError, UsageError } from '../usage-error.js';

export interface TraceOptions {
  otlp?: string;
  format?: 'json';
  traceContent?: boolean;
}

/**
 * `conclave trace SESSION`: the run's spans, made from its session file (docs/traces.md), sent to
 * an OTLP/HTTP collector (--otlp URL, else the OTEL_EXPORTER_OTLP_* variables) or printed as an
 * OTLP/JSON request (--format json). The ids come from the session: exporting twice sends the same spans.
 */
export async function traceCommand(file: string, options: TraceOptions): Promise<number> {
  if (options.otlp && options.format) throw new UsageError('--otlp sends the spans and --format json prints them: give one of them');
  const record = asUsageError(() => readSession(file), SessionFileError);
  const spans = spansOf(record.header, record.effective, { content: options.traceContent === true });
  if (options.format === 'json') {
    process.stdout.write(`${otlpJson(spans, process.env)}\n`);
    return 0;
  }
  const env = process.env;
  const endpoint = options.otlp ?? (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (!endpoint)
    throw new UsageError(
      'say where the spans go: --otlp URL (an OTLP/HTTP collector, such as http://localhost:4318), OTEL_EXPORTER_OTLP_ENDPOINT, or --format json to print them',
    );
  if (options.otlp !== undefined && !/^https?:\/\/[^/]/.test(options.otlp))
    throw new UsageError(`--otlp must be an http:// or https:// URL of an OTLP/HTTP collector, such as http://localhost:4318; not "${options.otlp}"`);
  const protocol = protocolOf(env);
  if (typeof protocol !== 'string')
    throw new UsageError(`OTEL_EXPORTER_OTLP_PROTOCOL ${protocol.unsupported} is not spoken here: use http/protobuf (the default) or http/json`);
  const sender = await spanSender(env, protocol, options.otlp);
  try {
    await sender.send(spans);
  } catch (e) {
    const why = collectorError(e instanceof Error ? e.message : String(e), options.otlp ? tracesUrl(options.otlp) : endpoint);
    throw new ConclaveError(`the collector at ${collectorHost(endpoint)} did not take the spans: ${why}`);
  } finally {
    await sender.shutdown().catch(() => {});
  }
  process.stdout.write(`sent ${spans.length} spans of trace ${spans[0]?.traceId ?? ''} (${protocol})\n`);
  return 0;
}
