import { describeOutputError } from '../../workflow/typed-outputs.js';
import type { OutputsJob, OutputsVerdict } from './outputs-worker.js';
import { bundledWorker } from './worker-file.js';
import { detached, nothingToDo } from '../../detached.js';

/** The longest a check of complete's outputs may take (a backtracking `pattern` is stopped here). */
export const OUTPUTS_CHECK_MS = 2_000;

/**
 * What is wrong with `value` as complete's outputs, in words, or undefined: checked in the
 * outputs worker within OUTPUTS_CHECK_MS, and stopped when the run is (ajv loads there only).
 */
export async function checkOutputs(schema: unknown, value: unknown, signal: AbortSignal): Promise<string | undefined> {
  const file = bundledWorker('outputs-worker', import.meta.url);
  if (!file) return 'the outputs cannot be checked: the outputs worker is missing from this build of conclave';
  // Loaded when first used: worker threads are not loaded at a run's start.
  const { Worker } = await import('node:worker_threads');
  return new Promise((resolve) => {
    const worker = new Worker(file, { workerData: { schema, value } satisfies OutputsJob, resourceLimits: { maxOldGenerationSizeMb: 256 } });
    const end = (problem: string | undefined) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      detached(worker.terminate(), nothingToDo); // a thread that is gone already
      resolve(problem);
    };
    const timer = setTimeout(
      () => end(`checking the outputs took over ${OUTPUTS_CHECK_MS / 1000} s (a pattern that backtracks?): give shorter or simpler values`),
      OUTPUTS_CHECK_MS,
    );
    const onAbort = () => end('the run stopped while the outputs were checked');
    signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: OutputsVerdict | { failed: string }) =>
      end('failed' in m ? `the outputs cannot be checked: ${m.failed}` : m.errors.length ? m.errors.map(describeOutputError).join('; ') : undefined),
    );
    worker.on('error', (e) => end(`the outputs cannot be checked: ${e.message}`));
    worker.on('exit', () => end('the outputs cannot be checked: the checker stopped'));
  });
}
