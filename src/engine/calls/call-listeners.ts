import type { CallListeners } from '../../provider/client.js';
import type { ProgressListener } from '../progress-events.js';
import type { Journal } from '../replay/journal.js';

/** What the provider tells of a live call: retries and waits for rate limits show; a wait is recorded. */
export function callListeners(
  { progress, journal }: { progress: ProgressListener; journal: Journal },
  agent: string,
  turn: number,
  step: number,
  inputTokens: number,
): CallListeners {
  return {
    inputTokens,
    onRetry: (error, waitMs) => progress({ type: 'retry', agent, error, waitMs }),
    onWait: (reason, waitMs) => progress({ type: 'waiting', agent, reason, waitMs }),
    onPaced: (waitedMs, reason) => journal.append({ type: 'rate_waited', agent, turn, step, waited_ms: waitedMs, reason }),
  };
}
