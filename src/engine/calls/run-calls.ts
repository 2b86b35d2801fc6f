import type { AgentProfile } from '../../agents/profile.js';
import type { CacheTtl } from '../../workflow/types.js';
import type { Limits } from '../../workflow/limits.js';
import { Accounting } from '../ceilings/accounting.js';
import { batchesOf } from '../batches/batch-setup.js';
import { CacheWarming } from '../prompt-cache/cache-warming.js';
import { CacheDiagnosis } from '../prompt-cache/cache-diagnosis.js';
import { ModelCalls } from './model-calls.js';
import { TaskBudgets } from './task-budget.js';
import type { ProgressListener } from '../progress-events.js';
import type { Reservations } from '../ceilings/reservation.js';
import type { RunOptions } from '../run-options.js';
import type { Spawner } from '../teams/spawner.js';

/** What a run's model calls take of its options: the answers, the recording, the prices, where batches are told. */
export type RunCallsOptions = Pick<RunOptions, 'answers' | 'recording' | 'workflow' | 'place' | 'progress'>;

/** What a run's model calls need of the run itself. */
export interface RunCallsHooks {
  cacheTtl: CacheTtl;
  signal: AbortSignal;
  reservations: Reservations;
  limits(): Limits;
  progress: ProgressListener;
  spawner(): Spawner | undefined;
  profile(agent: string): AgentProfile | undefined;
  /** What batched calls wait for changed: the scheduler decides what follows (parking.ts). */
  batchesChanged(): void;
  /** A batched agent's call began or ended waiting for its batch. */
  onBatchWait(agent: string, waiting: boolean): void;
}

/**
 * A run's accounting and model calls, wired to its options: the recording, the response cache,
 * the provider or the workers, the spend pools, the batches and the prompt cache's warming.
 */
export function runCalls(options: RunCallsOptions, hooks: RunCallsHooks): { accounting: Accounting; calls: ModelCalls } {
  const accounting = new Accounting(hooks.limits, {
    pricing: options.workflow.spec.pricing,
    onUnknownModel: (model) =>
      hooks.progress({
        type: 'warning',
        message:
          `the price table does not know model "${model}": its cost is estimated at the highest price, $15 / $75 per million tokens; set pricing: ` +
          `in the workflow`,
      }),
    vertexRegion: options.place.env.CLOUD_ML_REGION,
    cacheTtl: hooks.cacheTtl,
  });
  const warming = new CacheWarming(hooks.cacheTtl);
  const calls = new ModelCalls({
    journal: options.recording.journal,
    accounting,
    callModel: options.answers.call,
    liveCalls: options.answers.live !== false,
    cache: options.answers.cache,
    pools: options.answers.pools,
    signal: hooks.signal,
    progress: hooks.progress,
    failureIsRecorded: (agent) => hooks.spawner()?.isSpawned(agent) === true,
    reservations: hooks.reservations,
    carvesOf: (agent) => hooks.spawner()?.ceilingsOf(agent) ?? [],
    providerOf: (agent) => hooks.profile(agent)?.provider ?? 'anthropic',
    warming,
    ...batchesOf(options, hooks.batchesChanged, warming),
    batchOf: (agent) => hooks.profile(agent)?.batch === true,
    diagnosis: new CacheDiagnosis((agent) => {
      const profile = hooks.profile(agent);
      return profile?.offered !== undefined || profile?.role === 'worker';
    }),
    onBatchWait: hooks.onBatchWait,
    taskBudgets: new TaskBudgets((agent, request) =>
      accounting.tokensLeft(request.model, 'anthropic', false, hooks.spawner()?.spendLeft(agent) ?? Number.POSITIVE_INFINITY),
    ),
    budgetedOf: (agent) => hooks.profile(agent)?.taskBudget === 'auto',
  });
  return { accounting, calls };
}
