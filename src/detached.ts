/**
 * A promise nobody awaits, handed to what becomes of its failure (docs/ARCHITECTURE.md: one
 * guarded way in). Inside the run that is the run's step, which stops it with the reason; outside
 * it, each caller names its own (refuse the calls waiting, give the batch's calls the error, say it
 * in the worker's log) or, where a failure changes nothing, `nothingToDo` says so. Never an
 * unhandled rejection: a failure handler that throws is the last word, and is dropped.
 * `npm run lint` (scripts/void-promises.js) refuses a promise let go any other way.
 */
export function detached(promise: PromiseLike<unknown> | undefined, onFailure: (error: unknown) => void): void {
  void promise?.then(undefined, (error: unknown) => {
    try {
      onFailure(error);
    } catch {
      // nowhere left to say it
    }
  });
}

/** For a promise whose failure changes nothing: best-effort bookkeeping, a worker thread or store already gone. */
export function nothingToDo(): void {}
