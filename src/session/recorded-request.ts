import type { EventOf, SessionEvent } from './format.js';

/** A recorded model call's request made whole: the session keeps only what changed since the agent's previous call (engine/calls/request-delta.ts). */
export interface RecordedRequest {
  model: unknown;
  system: string;
  tools: unknown[];
  messages: unknown[];
  /** The rest of the request as recorded (max_tokens, thinking, output_config, tool_choice). */
  settings: Record<string, unknown>;
}

/**
 * The whole request of the model call recorded at `seq`: the system prompt and tools of the
 * agent's last call that recorded them, the messages its previous call sent before
 * `messages_from`, and shared texts written out. Undefined when `seq` is not a model call.
 */
export function recordedRequest(events: readonly SessionEvent[], seq: number): RecordedRequest | undefined {
  const agent = events.find((e): e is EventOf<'model_call'> => e.seq === seq && e.type === 'model_call')?.agent;
  if (agent === undefined) return undefined;
  const texts = new Map<string, string>();
  let system = '';
  let tools: unknown[] = [];
  let messages: unknown[] = [];
  for (const event of events) {
    if (event.type === 'shared_text') texts.set(event.sha256, event.text);
    if (event.type !== 'model_call' || event.agent !== agent) continue;
    const request = event.request as Record<string, unknown>;
    if (typeof request.system === 'string') system = request.system;
    if (Array.isArray(request.tools)) tools = request.tools;
    const from = typeof request.messages_from === 'number' ? request.messages_from : 0;
    messages = [...messages.slice(0, from), ...(Array.isArray(request.messages) ? request.messages : [])];
    if (event.seq === seq) {
      const { model, system: _s, tools: _t, messages: _m, messages_from: _f, ...settings } = request;
      return { model, system: system.replace(/\[shared_text ([0-9a-f]{64})\]/g, (whole, sha: string) => texts.get(sha) ?? whole), tools, messages, settings };
    }
  }
  return undefined;
}
