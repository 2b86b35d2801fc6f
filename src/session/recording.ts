import { EXIT, EXIT_OF, type EndStatus, FINISHED_STATUSES } from '../exit-codes.js';
import { STOP_EVENTS, type EventBody, type EventOf, type SessionEvent } from './format.js';
import type { SessionRecord } from './reader.js';

/** How a recorded run ended, if it did. */
export function endOf(record: SessionRecord): EventOf<'run_ended'> | undefined {
  return record.effective.findLast((e): e is EventOf<'run_ended'> => e.type === 'run_ended');
}

/** How a run that is over ended: completed (the lead's `complete`, or idle), or closed as stale (its pull request moved on). */
export const FINISHED: ReadonlySet<string> = new Set(FINISHED_STATUSES);

type Ended = Extract<EventBody, { type: 'run_ended' }>;

/**
 * The one way a `run_ended` event is made, by the engine at a run's end and by a stale close
 * (cli/action/stale-run.ts): its status one of the endings, its exit code its status's unless a signal
 * gave another (130, 143).
 */
export function runEnded(
  status: EndStatus,
  reason: string,
  { exit_code, summary = '', outputs = {}, ...more }: Partial<Omit<Ended, 'type' | 'status' | 'reason'>> = {},
): Ended {
  return { type: 'run_ended', status, exit_code: exit_code ?? (status === 'interrupted' ? EXIT.sigterm : EXIT_OF[status]), reason, summary, outputs, ...more };
}

/** A run that completed or was closed is over; one stopped by a limit, a signal or an error can go on. */
export function isFinished(record: SessionRecord): boolean {
  const end = endOf(record);
  return end !== undefined && FINISHED.has(end.status);
}

/** What a resume re-executes: the run's events up to where it stopped. */
export function replayable(events: readonly SessionEvent[]): SessionEvent[] {
  // The spawned agents stopped with the run are part of its end, written just before run_ended.
  const stop = events.findIndex((e) => STOP_EVENTS.has(e.type) || (e.type === 'agent_ended' && e.status === 'stopped'));
  return stop === -1 ? [...events] : events.slice(0, stop);
}

/** The run time used before the recording ends, for limits.timeout. */
export function elapsedOf(events: readonly SessionEvent[]): number {
  const last = events.findLast((e): e is EventOf<'turn_ended'> => e.type === 'turn_ended');
  return last ? last.elapsed_ms : 0;
}
