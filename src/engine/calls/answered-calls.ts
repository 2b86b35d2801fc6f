import type { ModelRequest, ModelResponse } from '../../provider/client.js';
import type { ProviderName } from '../../provider/clouds.js';
import { answeredBy, speedOf } from '../../provider/api-controls.js';
import { usageOf } from '../../provider/pricing.js';
import type { Accounting } from '../ceilings/accounting.js';
import type { CacheDiagnosis } from '../prompt-cache/cache-diagnosis.js';
import type { Journal } from '../replay/journal.js';
import { RequestDeltas } from './request-delta.js';

/** Calls of an agent that a server-side fallback answered, by the model that answered them. */
export interface FallbackAnswers {
  agent: string;
  model: string;
  calls: number;
}

/**
 * Each answer recorded as a `model_call` with its cost, and what the answers say, by agent, for
 * those who read it after them: the calls a fallback answered (`--json`, docs/api-controls.md)
 * and what each agent's last call cost (a compaction's event carries its summary call's cost).
 */
export class AnsweredCalls {
  private readonly fallbacks = new Map<string, FallbackAnswers>();
  private readonly lastCost = new Map<string, number>();
  private readonly deltas: RequestDeltas;

  constructor(
    private readonly journal: Journal,
    private readonly accounting: Accounting,
    private readonly diagnosis?: CacheDiagnosis,
  ) {
    this.deltas = new RequestDeltas((sha256, text) => journal.keepText(sha256, text));
  }

  /** Records an answer; `provider` is where it came from (a recorded one: where it came from then). */
  record(
    agent: string,
    turn: number,
    step: number,
    request: ModelRequest,
    hash: string,
    response: ModelResponse,
    cached: boolean,
    live: boolean,
    provider: ProviderName,
    /** The message batch that answered it, if one did. */
    batch?: string,
  ): { response: ModelResponse; costUsd: number } {
    this.diagnosis?.answered(agent, response);
    // A call a server-side fallback answered is priced as the model that answered (docs/api-controls.md).
    const fallback = answeredBy(request, response);
    if (cached) this.accounting.recordCached(usageOf(response.usage));
    const spend = cached
      ? { costUsd: 0 }
      : this.accounting.record(agent, fallback ?? request.model, usageOf(response.usage), live, provider, batch !== undefined, speedOf(response) === 'fast');
    this.journal.append({
      type: 'model_call',
      agent,
      turn,
      step,
      request: this.deltas.of(agent, request),
      request_sha256: hash,
      response,
      cost_usd: spend.costUsd,
      ...(cached ? { cached: true as const } : {}),
      ...(provider !== 'anthropic' ? { provider } : {}),
      ...(batch !== undefined ? { batch } : {}),
      ...(fallback ? { answered_by: fallback } : {}),
    });
    this.answered(agent, spend.costUsd, fallback);
    return { response, costUsd: spend.costUsd };
  }

  private answered(agent: string, costUsd: number, fallback: string | undefined): void {
    this.lastCost.set(agent, costUsd);
    if (fallback === undefined) return;
    const key = `${agent}\n${fallback}`;
    const seen = this.fallbacks.get(key) ?? this.fallbacks.set(key, { agent, model: fallback, calls: 0 }).get(key)!;
    seen.calls++;
  }

  lastCostOf(agent: string): number {
    return this.lastCost.get(agent) ?? 0;
  }

  /** In the order first met. */
  get fallbackAnswers(): readonly FallbackAnswers[] {
    return [...this.fallbacks.values()];
  }
}
