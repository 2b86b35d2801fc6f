/**
 * A prompt-cache miss the API diagnosed (Anthropic's cache-diagnosis beta, docs/pricing.md: cache
 * misses): the answer's `diagnostics.cache_miss_reason`, when the prefix of the earlier request it
 * was compared with could not be reused. Misses of fewer tokens than the smallest prefix the cache
 * keeps (1,024) are left out: an agent's own instructions after a shared context always differ.
 */
export interface CacheMiss {
  agent: string;
  reason: 'tools_changed' | 'system_changed' | 'model_changed' | 'speed_changed' | 'messages_changed';
  missed_tokens: number;
}

const REASONS = new Set<string>(['tools_changed', 'system_changed', 'model_changed', 'speed_changed', 'messages_changed']);
const SMALLEST_PREFIX = 1_024;

/**
 * The miss a model answer reports, read with the call's usage, as a hostile session's answer may
 * hold anything. The API's diagnosis compares the request's structure with the earlier one it
 * names, whether or not the cache hit (an agent whose tools differ from the lead's is told
 * `tools_changed` though it read the prefix another agent with its tools had written): a miss is
 * what the call wrote to the cache, up to the diagnosis's estimate; a call that read the prefix and
 * wrote little missed nothing (docs/pricing.md: cache misses).
 */
export function cacheMissOf(agent: string, response: unknown): CacheMiss | undefined {
  const diagnostics = (response as { diagnostics?: unknown } | null)?.diagnostics;
  const reason = (diagnostics as { cache_miss_reason?: unknown } | null)?.cache_miss_reason as { type?: unknown; cache_missed_input_tokens?: unknown } | null;
  if (!reason || typeof reason.type !== 'string' || !REASONS.has(reason.type)) return undefined;
  const estimate = reason.cache_missed_input_tokens;
  const usage = (response as { usage?: { cache_creation_input_tokens?: unknown } } | null)?.usage;
  const written = usage?.cache_creation_input_tokens;
  if (typeof estimate !== 'number' || !Number.isFinite(estimate) || typeof written !== 'number' || !Number.isFinite(written)) return undefined;
  const missed = Math.min(estimate, written);
  if (missed < SMALLEST_PREFIX) return undefined;
  return { agent, reason: reason.type as CacheMiss['reason'], missed_tokens: Math.round(missed) };
}

/** What to change for each reason, in a sentence. */
export function cacheMissAdvice(miss: CacheMiss): string {
  switch (miss.reason) {
    case 'tools_changed':
      return `give @${miss.agent} the same tools as the agents whose prefix it missed, or its own context:`;
    case 'model_changed':
      return `give @${miss.agent} the same model as the others, or accept that it writes its own prefix`;
    case 'speed_changed':
      return `give @${miss.agent} the same speed: as the agents whose prefix it missed (fast mode keeps a prompt cache of its own)`;
    case 'system_changed':
      return `keep what differs per agent after the shared context:, not before it`;
    case 'messages_changed':
      return `its conversation changed before its end (a compaction, an edited message): expected after a compaction`;
  }
}
