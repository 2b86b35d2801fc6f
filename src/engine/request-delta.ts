import type { ModelRequest } from '../provider/client.js';
import { deepFreeze } from '../provider/deep-freeze.js';

/**
 * What a model call asked, as the session keeps it: the system prompt and tools when they
 * change, and the messages added since the agent's previous call (from its last one, which
 * gains a cache mark), so that a replay can show where a request differs.
 */
export class RequestDeltas {
  private readonly last = new Map<string, { system: unknown; tools: unknown; messages: readonly unknown[] }>();

  of(agent: string, request: ModelRequest): Record<string, unknown> {
    // An agent's system blocks and tools are the same objects call after call (agents/turn.ts),
    // and so are the messages a conversation keeps: a compacted one has new ones, and is kept whole.
    const previous = this.last.get(agent);
    const from = previous && extends_(request.messages, previous.messages) ? Math.max(0, previous.messages.length - 1) : 0;
    // Compared by identity at the next call: frozen, so that none can change in place meanwhile.
    this.last.set(agent, deepFreeze({ system: request.system, tools: request.tools, messages: [...request.messages] }));
    return {
      model: request.model,
      max_tokens: request.max_tokens,
      ...(request.thinking ? { thinking: request.thinking } : {}),
      ...(request.output_config ? { output_config: request.output_config } : {}),
      ...(request.tool_choice ? { tool_choice: request.tool_choice } : {}),
      ...(request.system !== previous?.system ? { system: (request.system as { text: string }[]).map((b) => b.text).join('\n') } : {}),
      ...(request.tools !== previous?.tools ? { tools: (request.tools ?? []).map((t) => ('name' in t ? t.name : t.type)) } : {}),
      messages_from: from,
      messages: request.messages.slice(from),
    };
  }
}

/** Whether `messages` begins with the same message objects as `previous`, but for its last (which gained a cache mark). */
function extends_(messages: readonly unknown[], previous: readonly unknown[]): boolean {
  if (messages.length < previous.length) return false;
  for (let i = 0; i < previous.length - 1; i++) if (messages[i] !== previous[i]) return false;
  return true;
}
