/** The process exit codes (docs/design.md: ending), defined once (no imports: the CLI's start-up loads this). */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  limit: 3,
  provider: 4,
  sigint: 130,
  sigterm: 143,
} as const;

/**
 * How a run ended. `refused`: the run cannot go on as asked (a cache miss under --offline): a
 * usage error, exit 2, although the session is kept.
 */
export type EndStatus = 'success' | 'failure' | 'idle' | 'limit' | 'provider_error' | 'error' | 'interrupted' | 'refused';

/** The exit code of each way a run ends but a signal (130 or 143, by the signal). */
export const EXIT_OF: Record<Exclude<EndStatus, 'interrupted'>, number> = {
  success: EXIT.ok,
  idle: EXIT.ok,
  failure: EXIT.failure,
  error: EXIT.failure,
  refused: EXIT.usage,
  limit: EXIT.limit,
  provider_error: EXIT.provider,
};
