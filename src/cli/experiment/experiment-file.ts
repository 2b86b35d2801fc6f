import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { writeWhole } from '../write-whole.js';
import { UsageError } from '../usage-error.js';
import type { ExperimentCase, ExperimentResult, GuardrailLimits, PlannedRun } from './experiment-verdict.js';
import type { RequestChange } from './request-changes.js';
import type { Design } from './statistics.js';

/**
 * `experiment.json`, beside an experiment's sessions (docs/experiments.md: the folder): what was
 * compared and how, every run planned with its session, and the verdict. `--recompute` reads it
 * as hostile input: a case, a run or a session path that does not fit is an error naming it.
 */
export interface ExperimentFile {
  conclave_experiment: 1;
  id: string;
  created_at: string;
  base: { ref: string; commit: string | null };
  head: { ref: string; commit: string | null };
  /** The folder the experiment was started in, relative to the repository's top ('' for the top). */
  cwd: string;
  /** The test files, relative to the repository's top. */
  test_files: string[];
  cases: ExperimentCase[];
  design: Design & { repeat: number };
  guardrails: GuardrailLimits;
  /** `pass` (each run's expectations) or the grader whose bounds in each case decide. */
  primary: string;
  batch: boolean;
  /** Runs park while their batches are processed; `--resume` goes on. */
  park?: boolean;
  changes: RequestChange[];
  estimate: { first_stage_usd: number; most_usd: number } | null;
  runs: PlannedRun[];
  result: ExperimentResult | null;
}

export const EXPERIMENT_FILE = 'experiment.json';

export function writeExperiment(dir: string, experiment: ExperimentFile): void {
  writeWhole(join(dir, EXPERIMENT_FILE), `${JSON.stringify(experiment, null, 2)}\n`);
}

export function readExperiment(dir: string): ExperimentFile {
  const path = join(dir, EXPERIMENT_FILE);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'it does not exist: give the folder an experiment wrote' : (e as Error).message;
    throw new UsageError(`${path}: ${why}`);
  }
  const bad = (what: string) => new UsageError(`${path}: ${what}; it is not an experiment this conclave wrote`);
  const file = value as ExperimentFile;
  if (!isRecord(value) || file.conclave_experiment !== 1) throw bad('no "conclave_experiment": 1');
  if (typeof file.id !== 'string' || file.id === '') throw bad('no id');
  if (!Array.isArray(file.test_files) || !file.test_files.every((f) => typeof f === 'string' && relativeInside(f)))
    throw bad('"test_files" must be paths inside the repository');
  if (typeof file.cwd !== 'string' || (file.cwd !== '' && !relativeInside(file.cwd))) throw bad('"cwd" must be a path inside the repository');
  if (!Array.isArray(file.cases) || !file.cases.every((c) => isRecord(c) && typeof c.name === 'string' && file.test_files.includes(c.file as string)))
    throw bad('every case must name one of "test_files" and have a name');
  const d = file.design as unknown;
  if (
    !isRecord(d) ||
    ![d.minEffect, d.alpha, d.level, d.repeat].every((n) => typeof n === 'number' && Number.isFinite(n)) ||
    (d.stages !== 1 && d.stages !== 2)
  )
    throw bad('"design" must hold minEffect, alpha, level, repeat and stages');
  const g = file.guardrails as unknown;
  if (!isRecord(g) || !['cost_per_run', 'refusals', 'failures', 'duplicate_findings'].every((k) => typeof g[k] === 'number'))
    throw bad('"guardrails" must hold four limits');
  if (typeof file.primary !== 'string') throw bad('no "primary"');
  if (!Array.isArray(file.runs)) throw bad('no "runs"');
  file.runs.forEach((run, i) => {
    const ok =
      isRecord(run) &&
      Number.isInteger(run.case) &&
      run.case >= 0 &&
      run.case < file.cases.length &&
      (run.version === 'base' || run.version === 'head') &&
      (run.stage === 1 || run.stage === 2) &&
      Number.isInteger(run.repeat) &&
      typeof run.session === 'string' &&
      /^runs\/[\w.-]+\.jsonl$/.test(run.session);
    if (!ok) throw bad(`run ${i + 1} must name a case, base or head, stage 1 or 2, a repeat, and a session under runs/`);
  });
  return file;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function relativeInside(path: string): boolean {
  return path !== '' && !isAbsolute(path) && !path.split(/[\\/]/).includes('..');
}
