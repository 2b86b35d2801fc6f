import { UsageError } from '../conclave-error.js';

export { UsageError };

/** Runs `work`, turning the listed error types (each already a plain sentence) into a UsageError. */
export function asUsageError<T>(work: () => T, ...types: (abstract new (...args: never[]) => Error)[]): T {
  try {
    return work();
  } catch (e) {
    if (types.some((type) => e instanceof type)) throw new UsageError((e as Error).message);
    throw e;
  }
}
