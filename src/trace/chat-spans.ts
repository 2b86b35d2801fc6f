import { cacheMissOf } from '../session/cache-misses.js';
import type { SessionEvent } from '../session/format.js';
import { firstLine, type TraceSpan } from './trace-span.js';

/** The provider's name in OpenTelemetry's GenAI conventions (`gen_ai.provider.name`). */
const GEN_AI_PROVIDER: Record<string, string> = { anthropic: 'anthropic', bedrock: 'aws.bedrock', vertex: 'gcp.vertex_ai', foundry: 'azure.ai.inference' };

/** A model call that gave no answer to use. */
export type FailedCall = Extract<SessionEvent, { type: 'call_failed' | 'call_interrupted' | 'call_abandoned' | 'context_exceeded' }>;

/** A model call's span attributes in OpenTelemetry's GenAI conventions (docs/traces.md); with `content`, its messages too. */
export function chatAttributes(e: Extract<SessionEvent, { type: 'model_call' }>, model: string, content: boolean): TraceSpan['attributes'] {
  const usage = e.response.usage ?? {};
  const response = e.response as { id?: unknown; model?: unknown };
  const miss = cacheMissOf(e.agent, e.response);
  return {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': GEN_AI_PROVIDER[e.provider ?? 'anthropic']!,
    'gen_ai.request.model': model,
    ...(typeof response.model === 'string' ? { 'gen_ai.response.model': response.model } : {}),
    ...(typeof response.id === 'string' ? { 'gen_ai.response.id': response.id } : {}),
    'gen_ai.usage.input_tokens': usage.input_tokens ?? 0,
    'gen_ai.usage.output_tokens': usage.output_tokens ?? 0,
    'gen_ai.usage.cache_read.input_tokens': usage.cache_read_input_tokens ?? 0,
    'gen_ai.usage.cache_creation.input_tokens': usage.cache_creation_input_tokens ?? 0,
    ...(e.response.stop_reason ? { 'gen_ai.response.finish_reasons': [e.response.stop_reason] } : {}),
    'conclave.cost_usd': e.cost_usd,
    ...(e.cached ? { 'conclave.cached': true } : {}),
    ...(e.batch ? { 'conclave.batch': e.batch } : {}),
    ...(e.answered_by !== undefined ? { 'conclave.fallback.model': e.answered_by } : {}),
    ...(miss ? { 'conclave.cache_miss.reason': miss.reason, 'conclave.cache_miss.tokens': miss.missed_tokens } : {}),
    ...(content
      ? {
          'gen_ai.input.messages': JSON.stringify((e.request as { messages?: unknown }).messages ?? []),
          'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', content: e.response.content }]),
        }
      : {}),
  };
}

/** A failed call's span attributes and status: what became of it, as `error.type`, and why. */
export function failedChat(e: FailedCall, model: string): { attributes: TraceSpan['attributes']; status: TraceSpan['status'] } {
  const type =
    e.type === 'call_failed' ? e.kind : e.type === 'call_interrupted' ? 'interrupted' : e.type === 'call_abandoned' ? `abandoned_${e.why}` : 'context_exceeded';
  const message =
    'error' in e ? firstLine(e.error) : e.type === 'call_abandoned' ? `given up after its request left (${e.why})` : 'abandoned for a message that arrived';
  return {
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': model,
      'error.type': type,
      ...('cost_usd' in e ? { 'conclave.cost_usd': e.cost_usd } : {}),
    },
    status: { code: 'error', message },
  };
}
