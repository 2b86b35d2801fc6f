import type { SessionEvent } from '../../session/format.js';
import type { TokenUsage } from '../../provider/pricing.js';

/** One recorded call: its usage, and the model the workflow named for it. */
export interface RecordedCall {
  usage: TokenUsage;
  model: string;
}

/** What one earlier session says of the run: each agent's calls in order, and the template of each spawned agent. */
export interface RecordedRun {
  calls: Map<string, RecordedCall[]>;
  /** Spawned agents by template (`(fork)` for forks). */
  spawned: Map<string, string[]>;
  /** What each setup step printed. */
  setup: Record<string, string>;
}

/** The calls a session recorded, by agent (`conclave estimate --from`, docs/pricing.md). */
export function recordedRunOf(events: readonly SessionEvent[]): RecordedRun {
  const calls = new Map<string, RecordedCall[]>();
  const spawned = new Map<string, string[]>();
  const setup: Record<string, string> = {};
  for (const event of events) {
    if (event.type === 'setup_finished') setup[event.id] = event.stdout;
    if (event.type === 'agent_spawned') spawned.set(event.template, [...(spawned.get(event.template) ?? []), event.agent]);
    if (event.type !== 'model_call') continue;
    const usage = (event.response.usage ?? {}) as Partial<Record<keyof TokenUsage, number | null>>;
    const call: RecordedCall = {
      usage: {
        input_tokens: usage.input_tokens ?? 0,
        output_tokens: usage.output_tokens ?? 0,
        cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
        cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
      },
      model: typeof event.request.model === 'string' ? event.request.model : '',
    };
    calls.set(event.agent, [...(calls.get(event.agent) ?? []), call]);
  }
  return { calls, spawned, setup };
}

/** The middle value of `values` by `key` (the lower of the two middle ones), or undefined when there are none. */
export function medianBy<T>(values: readonly T[], key: (value: T) => number): T | undefined {
  const sorted = [...values].sort((a, b) => key(a) - key(b));
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** The tokens of a call's prompt: what it read from the cache, wrote to it, and sent uncached. */
export function promptTokens(usage: TokenUsage): number {
  return usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
}
