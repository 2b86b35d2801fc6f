/** The process exit codes (docs/design.md: ending), defined once (no imports: the CLI's start-up loads this). */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  limit: 3,
  provider: 4,
  /** Parked (--park): the run waits for a message batch, its session written; resume it later. EX_TEMPFAIL. */
  waiting: 75,
  sigint: 130,
  sigterm: 143,
} as const;

/**
 * How a run ended. `refused`: the run cannot go on as asked (a cache miss under --offline): a
 * usage error, exit 2, although the session is kept. `waiting`: parked until a message batch ends.
 */
export const END_STATUSES = ['success', 'failure', 'idle', 'limit', 'provider_error', 'error', 'interrupted', 'refused', 'waiting', 'stale'] as const;

/**
 * How a run ended (the session's `run_ended` status, `--json`'s status). `stale`: a run on a pull
 * request closed without going on when a vote came after the pull request moved on (nothing paid).
 */
export type EndStatus = (typeof END_STATUSES)[number];

/** The endings after which a run is over: a resume refuses it, and a copy taken before it is refused too. */
export const FINISHED_STATUSES: readonly EndStatus[] = ['success', 'failure', 'idle', 'stale'];

/** The exit code of each way a run ends but a signal (130 or 143, by the signal). */
export const EXIT_OF: Record<Exclude<EndStatus, 'interrupted'>, number> = {
  success: EXIT.ok,
  idle: EXIT.ok,
  stale: EXIT.ok,
  failure: EXIT.failure,
  error: EXIT.failure,
  refused: EXIT.usage,
  limit: EXIT.limit,
  provider_error: EXIT.provider,
  waiting: EXIT.waiting,
};
