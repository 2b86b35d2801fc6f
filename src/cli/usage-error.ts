import { ConclaveError } from '../conclave-error.js';
/** A user's mistake (a bad argument, file or input): main.ts prints it in one line and exits 2. */
export class UsageError extends ConclaveError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, ending: 'usage' });
  }
}

/** Runs `work`, turning the listed error types (each already a plain sentence) into a UsageError. */
export function asUsageError<T>(work: () => T, ...types: (abstract new (...args: never[]) => Error)[]): T {
  try {
    return work();
  } catch (e) {
    if (types.some((type) => e instanceof type)) throw new UsageError((e as Error).message);
    throw e;
  }
}
