import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { readSession } from '../../session/reader.js';
import { writeWhole } from '../write-whole.js';
import { type KeptMembers, startSharedBatches } from '../test/shared-batches.js';
import { cleanUp, runCase } from '../test/test-case-run.js';
import type { LoadedCase } from './experiment-cases.js';
import type { PlannedRun } from './experiment-verdict.js';

export interface StageSettings {
  dir: string;
  /** How many runs at once. */
  concurrency: number;
  /** Every call through the Message Batches API (`conclave run --batch`), the runs' batches shared. */
  batch: boolean;
  /** Each run parks while its batch is processed (`--park`): the stage ends with the runs that wait, for a later `--resume`. */
  park: boolean;
}

/** Where a planned run stands, from its session: not begun, parked (or stopped mid-way), or ended. */
export type RunState = 'none' | 'waiting' | 'ended';

export function runState(session: string): RunState {
  if (!existsSync(session)) return 'none';
  try {
    const last = readSession(session).effective.at(-1);
    return last?.type === 'run_ended' && last.status !== 'waiting' ? 'ended' : 'waiting';
  } catch {
    // A session that cannot be read is not gone on with: its outcome says why.
    return 'ended';
  }
}

/**
 * Runs what is left of a stage of an experiment: each planned run not yet begun as `conclave run` on
 * a copy of its version's workspace (test-case-run.ts), its session kept in the experiment's folder;
 * each parked one as `conclave resume`; a few at a time, in the order planned (base and head side by
 * side). With batches, what the runs ask of the Message Batches API together goes upstream as one
 * batch (shared-batches.ts): both versions, every case; which run owns which results is kept in
 * `batches.json`, so that a run resumed by a later process reads its own.
 */
export async function runStage(
  planned: readonly PlannedRun[],
  cases: readonly LoadedCase[],
  settings: StageSettings,
  signal: AbortSignal,
  say: (line: string) => void,
): Promise<void> {
  const sessionOf = (run: PlannedRun) => resolve(settings.dir, run.session);
  const left = planned.map((run) => ({ run, state: runState(sessionOf(run)) })).filter((r) => r.state !== 'ended');
  if (left.length === 0) return;
  const kept: KeptMembers = {
    load: () => {
      try {
        return JSON.parse(readFileSync(join(settings.dir, 'batches.json'), 'utf8'));
      } catch {
        return [];
      }
    },
    save: (members) => writeWhole(join(settings.dir, 'batches.json'), `${JSON.stringify(members)}\n`),
  };
  const shared = settings.batch
    ? await startSharedBatches(process.env.ANTHROPIC_BASE_URL || 'https://api.anthropic.com', settings.concurrency, undefined, kept)
    : undefined;
  for (const { run } of left) mkdirSync(dirname(sessionOf(run)), { recursive: true });
  const queue = [...left];
  let done = 0;
  let next = 25;
  const worker = async () => {
    for (let item = queue.shift(); item && !signal.aborted; item = queue.shift()) {
      const { run, state } = item;
      const c = cases[run.case]!;
      const made = await runCase(
        c.test[run.version],
        { ...c.testCase, workspace: c.workspace[run.version] },
        {
          live: true,
          timeoutMs: c.workflow[run.version].limits.timeoutMs + 60_000,
          session: sessionOf(run),
          resume: state === 'waiting',
          ...(shared ? { env: { ANTHROPIC_BASE_URL: shared.url } } : {}),
          args: [...(shared ? ['--batch'] : []), ...(settings.park ? ['--park'] : [])],
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
      if ((done * 100) / left.length >= next) {
        say(`${done} of ${left.length} runs ${settings.park ? 'gone on' : 'done'}`);
        next = Math.floor((done * 100) / left.length / 25) * 25 + 25;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(settings.concurrency, left.length) }, worker));
  } finally {
    await shared?.close();
  }
}
