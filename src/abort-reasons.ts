/**
 * Why a signal was aborted. Every abort in conclave carries one of these as its reason, and what
 * an abort means (record an interrupted call, keep a message batch or cancel it) is read from
 * `signal.reason`, not from which of the signals that were joined fired first.
 * Their name is `AbortError`, so that fetch and the SDK take them as the aborts they are.
 */
export abstract class AbortReason extends Error {
  override name = 'AbortError';
}

/** An agent stops: cancelled by another (`by` is `@lead`), or ended by its own limit or failure. */
export class Cancelled extends AbortReason {
  constructor(readonly by: string) {
    super(`cancelled by ${by}`);
  }
}

/** The run ends (a limit, a failure, its end, a signal). `keepsBatches`: its message batches are left running for a resume. */
export class RunStopped extends AbortReason {
  constructor(
    readonly reason: string,
    readonly keepsBatches = false,
  ) {
    super(`the run stopped: ${reason}`);
  }
}

/** The run parks (`--park`): it stops, and what it waits for goes on without it. */
export class Parked extends RunStopped {
  constructor(reason: string) {
    super(reason, true);
  }
}

/** `queue: interrupt`: message `messageId` arrived for the agent, and its call in flight is given up to be made again with it. */
export class Interrupted extends AbortReason {
  constructor(readonly messageId: number) {
    super(`interrupted by message ${messageId}`);
  }
}

/** The signal's reason when it is one of these. */
export function abortReason(signal: AbortSignal | undefined): AbortReason | undefined {
  return signal?.aborted && signal.reason instanceof AbortReason ? signal.reason : undefined;
}

/** Whether any of these calls was given up by a run that leaves its message batches running (it parks, or Ctrl-C): else their batch is cancelled. */
export function keepsBatches(calls: readonly { signal: AbortSignal }[]): boolean {
  return calls.some(({ signal }) => {
    const reason = abortReason(signal);
    return reason instanceof RunStopped && reason.keepsBatches;
  });
}
