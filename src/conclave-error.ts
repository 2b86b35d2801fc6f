import { EXIT } from './exit-codes.js';

/**
 * How a command or a run that meets an error ends: `usage` a user's mistake (exit 2), `error`
 * the run failed (exit 1), `provider_error` the model provider failed (exit 4), `limit` a limit
 * stopped it (exit 3), `refused` it cannot go on as asked (exit 2, the session kept), `aborted`
 * the work was stopped on purpose (the run is already ending for another reason).
 */
export type ErrorEnding = 'usage' | 'error' | 'provider_error' | 'limit' | 'refused' | 'aborted';

const EXIT_OF_ENDING: Record<ErrorEnding, number> = {
  usage: EXIT.usage,
  error: EXIT.failure,
  provider_error: EXIT.provider,
  limit: EXIT.limit,
  refused: EXIT.usage,
  aborted: EXIT.failure,
};

/** Marks conclave's errors across copies of this module (the CLI and the Action are bundled apart). */
const MARK = Symbol.for('conclave.error');

/**
 * The base of every error conclave means to raise: its message is a plain sentence for the user,
 * its ending and exit code are on the error itself, its `name` is its class's, and its `cause` is
 * kept. Anything else that reaches the top is a bug: an "internal error" with its stack.
 */
export class ConclaveError extends Error {
  readonly ending: ErrorEnding;

  constructor(message: string, options: { ending?: ErrorEnding; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.ending = options.ending ?? 'error';
    Object.defineProperty(this, MARK, { value: true });
  }

  get exitCode(): number {
    return EXIT_OF_ENDING[this.ending];
  }

  /** Whether `e` is one of conclave's errors, by its mark rather than by `instanceof`. */
  static is(e: unknown): e is ConclaveError {
    return typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[MARK] === true;
  }
}

/**
 * A user's mistake: a bad argument, file, input, store or credential. Said in one line, exit 2.
 * Each layer's own kind of it (a session file that cannot be read, a cache that cannot be opened…)
 * is a subclass, named for what went wrong.
 */
export class UsageError extends ConclaveError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, ending: 'usage' });
  }
}
