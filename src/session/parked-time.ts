import type { SessionEvent } from './format.js';

/** How often a run parked (`run_ended` waiting) and the time from each park to the resume that followed it. */
export function parkedTime(events: readonly SessionEvent[]): { parked: number; parked_ms: number } {
  let parked = 0;
  let parkedMs = 0;
  let since: number | undefined;
  for (const e of events) {
    if (e.type === 'run_ended' && e.status === 'waiting') {
      parked++;
      since = e.at_ms;
    } else if (e.type === 'resumed' && since !== undefined && e.at_ms !== undefined) {
      parkedMs += Math.max(0, e.at_ms - since);
      since = undefined;
    }
  }
  return { parked, parked_ms: parkedMs };
}
