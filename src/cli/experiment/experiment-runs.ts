import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { startSharedBatches } from '../test/shared-batches.js';
import { cleanUp, runCase } from '../test/test-case-run.js';
import type { LoadedCase } from './experiment-cases.js';
import type { PlannedRun } from './experiment-verdict.js';

export interface StageSettings {
  dir: string;
  /** How many runs at once. */
  concurrency: number;
  /** Every call through the Message Batches API (`conclave run --batch`), the runs' batches shared. */
  batch: boolean;
}

/**
 * Runs a stage of an experiment: each planned run as `conclave run` on a copy of its version's
 * workspace (test-case-run.ts), its session kept in the experiment's folder; a few at a time, in
 * the order planned (base and head side by side). With batches, what the runs ask of the Message
 * Batches API together goes upstream as one batch (shared-batches.ts): both versions, every case.
 */
export async function runStage(
  planned: readonly PlannedRun[],
  cases: readonly LoadedCase[],
  settings: StageSettings,
  signal: AbortSignal,
  say: (line: string) => void,
): Promise<void> {
  const shared = settings.batch ? await startSharedBatches(process.env.ANTHROPIC_BASE_URL || 'https://api.anthropic.com', settings.concurrency) : undefined;
  for (const run of planned) mkdirSync(dirname(resolve(settings.dir, run.session)), { recursive: true });
  const queue = [...planned];
  let done = 0;
  let next = 25;
  const worker = async () => {
    for (let run = queue.shift(); run && !signal.aborted; run = queue.shift()) {
      const c = cases[run.case]!;
      const made = await runCase(
        c.test[run.version],
        { ...c.testCase, workspace: c.workspace[run.version] },
        {
          live: true,
          timeoutMs: c.workflow[run.version].limits.timeoutMs + 60_000,
          session: resolve(settings.dir, run.session),
          ...(shared ? { env: { ANTHROPIC_BASE_URL: shared.url }, args: ['--batch'] } : {}),
        },
        signal,
      );
      cleanUp(made);
      if (!existsSync(made.session) && !signal.aborted) {
        const why =
          made.broken ??
          made.stderr
            .trim()
            .split('\n')
            .at(-1)
            ?.replace(/^conclave: /, '') ??
          `conclave exited with ${made.code}`;
        say(`${run.session} was not written: ${why}`);
      }
      done++;
      if ((done * 100) / planned.length >= next) {
        say(`${done} of ${planned.length} runs done`);
        next = Math.floor((done * 100) / planned.length / 25) * 25 + 25;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(settings.concurrency, planned.length) }, worker));
  } finally {
    await shared?.close();
  }
}
