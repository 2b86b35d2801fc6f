import type { Compaction } from '../../agents/compaction.js';
import type { ProgressListener } from '../progress-events.js';
import type { Journal } from '../replay/journal.js';

/**
 * A compaction as the session keeps it (the summary whole, so that the file shows what the agent
 * went on from) and as progress shows it. Resume and replay compact again at the same point, from
 * the recorded summary call, and the event is compared like any other.
 */
export function compactionHook(
  journal: Journal,
  agent: string,
  turn: number,
  progress: ProgressListener,
  /** What the agent's last call cost: the summary's, when there is one. */
  lastCostUsd: () => number,
): (c: Compaction) => void {
  return (c) => {
    journal.append({
      type: 'context_compacted',
      agent,
      turn,
      reason: c.reason,
      tokens_before: c.tokensBefore,
      tokens_after: c.tokensAfter,
      cleared: c.cleared,
      summary: c.summary,
      left_out: c.leftOut,
      ...(c.by ? { by: c.by, cost_usd: lastCostUsd() } : {}),
    });
    progress({
      type: 'compacted',
      agent,
      reason: c.reason,
      tokensBefore: c.tokensBefore,
      tokensAfter: c.tokensAfter,
      cleared: c.cleared,
      summarised: c.summary !== null,
    });
  };
}
