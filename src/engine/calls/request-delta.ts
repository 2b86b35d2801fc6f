import { createHash } from 'node:crypto';
import type { ModelRequest } from '../../provider/client.js';
import { deepFreeze } from '../../provider/deep-freeze.js';
import type { ControlledRequest } from '../../provider/api-controls.js';

/** With a `context:`, system blocks at least this long are kept once in the session (`shared_text`) and referred to by hash. */
export const SHARED_TEXT_CHARS = 4096;

/** Keeps a shared text in the session once (a `shared_text` event). */
export type KeepText = (sha256: string, text: string) => void;

/**
 * What a model call asked, as the session keeps it: the system prompt and tools when they
 * change, and the messages added since the agent's previous call (from its last one, which
 * gains a cache mark), so that a replay can show where a request differs.
 */
export class RequestDeltas {
  private readonly last = new Map<string, { system: unknown; tools: unknown; messages: readonly unknown[] }>();
  /** Each block's text as recorded, computed once per block object. */
  private readonly recorded = new WeakMap<object, string>();

  constructor(private readonly keep: KeepText = () => {}) {}

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
      ...controlsOf(request),
      ...(request.system !== previous?.system ? { system: this.systemText(request.system as { text: string }[]) } : {}),
      ...(request.tools !== previous?.tools ? { tools: (request.tools ?? []).map((t) => ('name' in t ? t.name : t.type)) } : {}),
      messages_from: from,
      messages: request.messages.slice(from),
    };
  }

  /**
   * The system prompt as recorded. With a workflow's `context:` (more than one block), each
   * block of at least SHARED_TEXT_CHARS is kept once in the session and written here as
   * `[shared_text SHA256]`: a team of 256 sharing a 1 MB diff does not write it 256 times. A
   * prompt of one block (no context) is recorded whole, as sessions always had it.
   */
  private systemText(blocks: readonly { text: string }[]): string {
    if (blocks.length === 1) return blocks[0]!.text;
    return blocks
      .map((block) => {
        if (block.text.length < SHARED_TEXT_CHARS) return block.text;
        let text = this.recorded.get(block);
        if (text === undefined) {
          const sha256 = createHash('sha256').update(block.text).digest('hex');
          this.keep(sha256, block.text);
          text = `[shared_text ${sha256}]`;
          this.recorded.set(block, text);
        }
        return text;
      })
      .join('\n');
  }
}

/** Whether `messages` begins with the same message objects as `previous`, but for its last (which gained a cache mark). */
function extends_(messages: readonly unknown[], previous: readonly unknown[]): boolean {
  if (messages.length < previous.length) return false;
  for (let i = 0; i < previous.length - 1; i++) if (messages[i] !== previous[i]) return false;
  return true;
}

/** The API's controls a request uses (provider/api-controls.ts), recorded so that a replay shows a change of them. */
function controlsOf(request: ModelRequest): Record<string, unknown> {
  const { fallbacks, speed, compaction } = request as ModelRequest & ControlledRequest;
  return {
    ...(fallbacks !== undefined ? { fallbacks } : {}),
    ...(speed !== undefined ? { speed } : {}),
    ...(compaction !== undefined ? { compaction } : {}),
  };
}
