import { formatUsd } from '../../provider/money.js';
import type { Price } from '../../provider/pricing.js';
import type { ProviderName } from '../../provider/clouds.js';
import type { Limits } from '../../workflow/limits.js';
import type { Scope } from '../../workflow/evaluate.js';
import { limitEnding, type Ending } from '../ending.js';
import { estimateRun } from './estimate.js';
import { estimateGroups, firstMessageOf } from './estimate-team.js';
import type { RunOptions } from '../run-options.js';
import type { Team } from '../teams/team.js';

/** What the estimate before the run takes of the run's options. */
export type EstimateGateOptions = Pick<RunOptions, 'workflow' | 'recording' | 'answers' | 'estimateFirst'>;

/** What it takes of the run itself: its limits now, its team as assembled, the scope, the prices. */
export interface EstimateGateSources {
  limits: Limits;
  /** The run's: a stop or a signal ends the counting. */
  signal: AbortSignal;
  team: Team;
  scope: Scope;
  price(model: string, provider: ProviderName, batch: boolean): Price;
}

/**
 * Before the run's first call (docs/pricing.md: before a run): with `--max-estimate-usd`, or when
 * the job summary shows it, the run's estimate is made and noted (`estimate`), and a likely cost
 * over the ceiling stops the run as a limit, nothing spent. A resume compares the noted estimate
 * with its ceiling, raised or not; a recording that goes past the start without one is not judged.
 */
export async function estimateGate(options: EstimateGateOptions, sources: EstimateGateSources): Promise<Ending | undefined> {
  const { journal } = options.recording;
  const most = sources.limits.maxEstimateUsd;
  if (most === undefined && !options.estimateFirst) return undefined;
  let estimate: { likely_usd: number; worst_usd: number } | undefined = journal.recorded.estimate;
  if (!estimate) {
    if (journal.replaying) return undefined;
    const made = await estimateRun({
      limits: sources.limits,
      groups: estimateGroups(sources.team.sources, sources.team.expanded),
      firstMessage: firstMessageOf(options.workflow, sources.scope),
      count: (request, provider) => options.answers.count?.(request, provider, sources.signal) ?? Promise.resolve(undefined),
      price: sources.price,
      history: [],
    });
    // Stopped while counting (a signal, the timeout): the run ends as it was stopped, with no estimate.
    if (sources.signal.aborted) return undefined;
    journal.append({ type: 'estimate', ...made });
    estimate = made;
  }
  if (most === undefined || estimate.likely_usd <= most) return undefined;
  return limitEnding(
    'max_estimate_usd',
    `(likely ${formatUsd(estimate.likely_usd)} > ${formatUsd(most)}; at most ${formatUsd(estimate.worst_usd)}): the run did not start, nothing was spent`,
  );
}
