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
export type EndStatus = 'success' | 'failure' | 'idle' | 'limit' | 'provider_error' | 'error' | 'interrupted' | 'refused' | 'waiting';

/** The exit code of each way a run ends but a signal (130 or 143, by the signal). */
export const EXIT_OF: Record<Exclude<EndStatus, 'interrupted'>, number> = {
  success: EXIT.ok,
  idle: EXIT.ok,
  failure: EXIT.failure,
  error: EXIT.failure,
  refused: EXIT.usage,
  limit: EXIT.limit,
  provider_error: EXIT.provider,
  waiting: EXIT.waiting,
};
