import type { ModelResponse } from '../../provider/client.js';
import { type CacheMiss, cacheMissOf } from '../../session/cache-misses.js';

/**
 * Which earlier answer a live call's prompt is compared with, for the API's cache diagnosis
 * (docs/pricing.md: cache misses): the agent's own previous answer; for the first call of an agent
 * that shares the team's prefix, the first answer of any agent that does (the one that wrote it):
 * every agent of a `context:` sent the team's tools, else the workers; for another agent's first
 * call, none (it writes its own). And the misses the answers reported, recorded or live, so that
 * a replay says the same.
 */
export class CacheDiagnosis {
  private readonly last = new Map<string, string>();
  private firstSharer: string | undefined;
  readonly misses: CacheMiss[] = [];

  constructor(private readonly sharesPrefix: (agent: string) => boolean) {}

  of(agent: string): { previous_message_id: string | null } {
    return { previous_message_id: this.last.get(agent) ?? (this.sharesPrefix(agent) ? (this.firstSharer ?? null) : null) };
  }

  answered(agent: string, response: ModelResponse): void {
    if (typeof response.id === 'string' && response.id !== '') {
      this.last.set(agent, response.id);
      if (this.sharesPrefix(agent)) this.firstSharer ??= response.id;
    }
    const miss = cacheMissOf(agent, response);
    if (miss) this.misses.push(miss);
  }
}
