import type { ModelRequest } from '../../provider/client.js';
import type { ProviderName } from '../../provider/clouds.js';
import { costOf, inputTokensAtMost, NO_USAGE } from '../../provider/pricing.js';
import { CallInterrupted, type PromptTooLong, ProviderError } from '../../provider/provider-errors.js';
import { requestBytes } from '../../provider/request-hash.js';
import type { Accounting } from '../ceilings/accounting.js';
import type { Journal } from '../replay/journal.js';
import type { SpawnBudgetReached } from '../teams/spawner.js';

/**
 * A call that gave no answer, recorded at its place so that a resume and a replay meet it too,
 * and what it cost counted: a spawned agent's failure, a call interrupted or abandoned after its
 * request left (its prompt paid, estimated from its size), a prompt refused as too long.
 */
export class CallRecords {
  constructor(
    private readonly journal: Journal,
    private readonly accounting: Accounting,
  ) {}

  /** A spawned agent's call that failed for good, recorded at its place so that resume and replay meet it too. */
  failed<E extends ProviderError | SpawnBudgetReached>(agent: string, turn: number, step: number, error: E): E {
    const [kind, status] = error instanceof ProviderError ? [error.kind, error.status ?? null] : (['budget', null] as const);
    this.journal.append({ type: 'call_failed', agent, turn, step, error: error.message, kind, status });
    return error;
  }

  /**
   * A call abandoned for a message that arrived (`queue: interrupt`): its prompt is counted as paid,
   * estimated from its size as a reservation is, and recorded at its place for resume and replay.
   */
  interrupted(
    agent: string,
    turn: number,
    step: number,
    request: ModelRequest,
    provider: ProviderName,
    live: boolean,
    inputTokens = inputTokensAtMost(requestBytes(request)),
    batched = false,
  ): CallInterrupted {
    const usage = { ...NO_USAGE, input_tokens: inputTokens };
    const spend = this.accounting.record(agent, request.model, usage, live, provider, batched);
    this.journal.append({ type: 'call_interrupted', agent, turn, step, cost_usd: spend.costUsd });
    return new CallInterrupted(spend.costUsd);
  }

  /**
   * A live call given up after its request had left (aborted, or made again after its worker
   * stopped): its prompt is counted as paid, estimated from its size, in a note that a resume
   * counts again without making the call.
   */
  abandoned(
    agent: string,
    turn: number,
    step: number,
    request: ModelRequest,
    provider: ProviderName,
    inputTokens: number,
    why: 'aborted' | 'worker_lost',
  ): number {
    const costUsd = costOf({ ...NO_USAGE, input_tokens: inputTokens }, this.accounting.priceOf(request.model, provider));
    this.accounting.recordAbandoned(agent, inputTokens, costUsd, true);
    this.journal.append({ type: 'call_abandoned', agent, turn, step, input_tokens: inputTokens, cost_usd: costUsd, why });
    return costUsd;
  }

  /** A "prompt is too long" refusal, recorded at its place so that resume and replay meet it too. */
  tooLong(agent: string, turn: number, step: number, error: PromptTooLong): PromptTooLong {
    this.journal.append({ type: 'context_exceeded', agent, turn, step, error: error.message });
    return error;
  }
}
