import type { ModelResponse } from '../provider/client.js';
import { type CacheMiss, cacheMissOf } from '../session/cache-misses.js';

/**
 * Which earlier answer a live call's prompt is compared with, for the API's cache diagnosis
 * (docs/pricing.md: cache misses): the agent's own previous answer; for a worker's first call, the
 * first answer of any worker (the one that wrote the team's shared prefix); a manager's first
 * call, none (it writes its own). And the misses the answers reported, recorded or live, so that
 * a replay says the same.
 */
export class CacheDiagnosis {
  private readonly last = new Map<string, string>();
  private firstWorker: string | undefined;
  readonly misses: CacheMiss[] = [];

  constructor(private readonly isWorker: (agent: string) => boolean) {}

  of(agent: string): { previous_message_id: string | null } {
    return { previous_message_id: this.last.get(agent) ?? (this.isWorker(agent) ? (this.firstWorker ?? null) : null) };
  }

  answered(agent: string, response: ModelResponse): void {
    if (typeof response.id === 'string' && response.id !== '') {
      this.last.set(agent, response.id);
      if (this.isWorker(agent)) this.firstWorker ??= response.id;
    }
    const miss = cacheMissOf(agent, response);
    if (miss) this.misses.push(miss);
  }
}
