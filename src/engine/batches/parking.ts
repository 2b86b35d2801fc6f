import { Parked, RunStopped } from '../../abort-reasons.js';
import { formatUsd } from '../../provider/money.js';
import type { BatchCalls } from './batch-calls.js';
import { ending, interrupted, type Ending } from '../ending.js';

/**
 * Parking (docs/workflow.md: message batches and `--park`): when every running turn (`running`
 * of them) waits for a message batch, nothing can go on until one ends, and a `--park` run stops
 * as `waiting` (exit 75), its batches kept running for a resume to poll: how it ends (its reason
 * names the batches, the calls that wait and the most they can cost) and the abort that keeps
 * its batches. Undefined while a turn does something else.
 */
export function parkingStop(batches: BatchCalls | undefined, running: number): [Ending, Parked] | undefined {
  return batches && running > 0 && batches.waitingCalls >= running ? parkedStop(batches) : undefined;
}

function parkedStop(batches: BatchCalls): [Ending, Parked] {
  const ids = batches.waitedFor;
  batches.park();
  const { waiting_calls: calls = 0, reserved_usd: usd = 0 } = batches.reserved();
  const end = ending(
    'waiting',
    `parked: waiting for message batch${ids.length === 1 ? '' : 'es'} ${ids.join(', ')} (${calls} call${calls === 1 ? '' : 's'}, ` +
      `at most ${formatUsd(usd)} at the batch price, held against the budget)`,
  );
  return [end, new Parked(end.reason)];
}

/**
 * A signal stops the run. Calls waiting for a message batch: Ctrl-C (SIGINT, a person at a
 * terminal) leaves their batches running, as parking does, so that a resume takes their answers
 * instead of paying for them again; SIGTERM (a cancelled CI job, which may never be resumed)
 * cancels them. Either way the reason says which.
 */
export function interruptedStop(signal: 'SIGINT' | 'SIGTERM', batches: BatchCalls | undefined): [Ending, RunStopped] {
  const end = interruptedEnding(signal, batches);
  return [end, new RunStopped(end.reason, signal === 'SIGINT')];
}

function interruptedEnding(signal: 'SIGINT' | 'SIGTERM', batches: BatchCalls | undefined): Ending {
  const end = interrupted(signal);
  const ids = batches?.waitedFor ?? [];
  if (!batches || ids.length === 0) return end;
  const which = `message batch${ids.length === 1 ? '' : 'es'} ${ids.join(', ')}`;
  const them = ids.length === 1 ? 'its' : 'their';
  if (signal === 'SIGINT') batches.park();
  return {
    ...end,
    reason:
      signal === 'SIGINT'
        ? `${end.reason}; ${which} left running: a resume takes ${them} answers, paying nothing again`
        : `${end.reason}; ${which} cancelled: a resume sends ${them} calls again`,
  };
}
