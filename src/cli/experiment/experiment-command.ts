import { setMaxListeners } from 'node:events';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { EXIT } from '../../exit-codes.js';
import { inGitHubActions } from '../github/github.js';
import { connectionsFor, runProviders } from '../providers.js';
import { newRunId } from '../run-workflow.js';
import { printableJson } from '../command-guard.js';
import { UsageError } from '../usage-error.js';
import { testFiles } from '../test/test-suites.js';
import { contextOf, type LoadedCase, loadExperimentCases } from './experiment-cases.js';
import { readExperiment, writeExperiment, type ExperimentFile } from './experiment-file.js';
import { runStage, runState } from './experiment-runs.js';
import { checkPrimary, estimateStage, plan } from './experiment-plan.js';
import { experimentJson, experimentText } from './experiment-text.js';
import { DEFAULT_GUARDRAILS, noChange, type ExperimentResult, type PlannedRun, verdictOf } from './experiment-verdict.js';
import { outcomeOf, type RunOutcome } from './run-outcome.js';
import { type RequestChange, requestChanges } from './request-changes.js';
import { DEFAULT_DESIGN } from './statistics.js';
import { repositoryTop, writeVersion } from './versions.js';

export interface ExperimentOptions {
  base?: string;
  head?: string;
  repeat?: string;
  maxEstimateUsd?: string;
  minEffect?: string;
  primary?: string;
  concurrency?: string;
  /** commander's `--no-batch`. */
  batch: boolean;
  json?: boolean;
  output?: string;
  recompute?: string;
  park?: boolean;
  resume?: string;
}

/**
 * `conclave experiment [TESTS…] --base REF` (docs/experiments.md): is the team better or worse for
 * an edit? Both versions' requests compared for nothing first; then, within the estimate's ceiling,
 * both versions run every case K times, interleaved in the same message batches, and the verdict
 * comes from the sessions alone. Exit 1 for REJECT, 3 when the estimate is over the ceiling.
 */
export async function experimentCommand(paths: readonly string[], options: ExperimentOptions): Promise<number> {
  if (options.recompute !== undefined) return recompute(options.recompute, options);
  if (options.resume !== undefined) return resume(options.resume, options);
  if (options.base === undefined) throw new UsageError("give --base REF: the revision to compare with, such as the pull request's base (origin/main)");
  const repeat = whole(options.repeat ?? '5', '--repeat', 1, 50);
  const concurrency = whole(options.concurrency ?? '8', '--concurrency', 1, 64);
  const minEffect = options.minEffect === undefined ? DEFAULT_DESIGN.minEffect : whole(options.minEffect, '--min-effect', 1, 100) / 100;
  const ceiling = options.maxEstimateUsd === undefined ? undefined : dollars(options.maxEstimateUsd);
  const top = repositoryTop(process.cwd());
  const cwd = relative(top, process.cwd());
  const tests = testFiles(paths.length > 0 ? paths : ['.']).map((f) => relative(top, resolve(f)));
  const id = newRunId();
  const dir = options.output ?? join('.conclave', 'experiments', id);
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new UsageError(`${dir} is not empty: an experiment writes a folder of its own (-o DIR)`);
  mkdirSync(dir, { recursive: true });
  const base = writeVersion('base', options.base, top, join(dir, 'base'));
  const head = writeVersion('head', options.head, top, join(dir, 'head'));
  const cases = await loadExperimentCases(tests, { base: base.root, head: head.root, cwd });
  if (cases.length === 0) throw new UsageError('the test files hold no case');
  const primary = options.primary ?? 'pass';
  if (primary !== 'pass') checkPrimary(cases, primary);

  const experiment: ExperimentFile = {
    conclave_experiment: 1,
    id,
    created_at: new Date().toISOString(),
    base: { ref: base.ref, commit: base.commit },
    head: { ref: head.ref, commit: head.commit },
    cwd,
    test_files: tests,
    cases: cases.map((c) => c.entry),
    design: { ...DEFAULT_DESIGN, minEffect, repeat },
    guardrails: DEFAULT_GUARDRAILS,
    primary,
    batch: options.batch,
    park: options.park === true,
    changes: [],
    estimate: null,
    runs: [],
    result: null,
  };
  experiment.changes = await changesOf(cases);
  const say = (line: string) => process.stderr.write(`conclave: ${line}\n`);
  if (experiment.changes.length === 0) return finish(experiment, noChange(experiment.cases), dir, options);
  say(`what the edit touches: ${experiment.changes.map((c) => `${c.agent === null ? 'the workflow' : `@${c.agent}`} at ${c.path}`).join('; ')}`);

  // The runs need the key before anything is estimated or paid: a missing one is exit 2 now.
  for (const workflow of new Set(cases.map((c) => c.workflow.head))) await connectionsFor(runProviders(workflow.spec, { batch: options.batch }), true);
  const perStage = await estimateStage(cases, repeat, options.batch);
  experiment.estimate = { first_stage_usd: round(perStage), most_usd: round(perStage * experiment.design.stages) };
  say(
    `estimate: likely $${perStage.toFixed(4)} for the first stage, $${(perStage * experiment.design.stages).toFixed(4)} with the second ` +
      `(conclave estimate, ${options.batch ? 'batch prices' : 'one by one'})`,
  );
  writeExperiment(dir, experiment);
  if (ceiling !== undefined && experiment.estimate.most_usd > ceiling) {
    say(`the experiment would likely cost $${experiment.estimate.most_usd.toFixed(4)}, over --max-estimate-usd ${ceiling}: nothing was run`);
    return EXIT.limit;
  }

  return goOn(experiment, cases, dir, { concurrency, batch: options.batch, park: options.park === true }, options);
}

/** `--resume DIR`: an experiment that parked (or was stopped) goes on where it is: its parked runs resumed, the others begun. */
async function resume(dir: string, options: ExperimentOptions): Promise<number> {
  const experiment = readExperiment(dir);
  if (experiment.result) throw new UsageError(`${dir}: the experiment has its verdict (${experiment.result.verdict}): print it with --recompute ${dir}`);
  const cases = await keptCases(experiment, dir);
  const concurrency = whole(options.concurrency ?? '8', '--concurrency', 1, 64);
  return goOn(experiment, cases, dir, { concurrency, batch: experiment.batch, park: experiment.park === true }, options);
}

/**
 * The experiment's stages from where they stand: each stage's runs (planned once, kept in
 * experiment.json before any begins) made or gone on with, then the verdict, or a second stage
 * when the first is unclear. With --park, a stage whose runs wait for their batches ends the
 * command (exit 75); `--resume` goes on.
 */
async function goOn(
  experiment: ExperimentFile,
  cases: readonly LoadedCase[],
  dir: string,
  settings: { concurrency: number; batch: boolean; park: boolean },
  options: ExperimentOptions,
): Promise<number> {
  const say = (line: string) => process.stderr.write(`conclave: ${line}\n`);
  const controller = new AbortController();
  // Each run in flight listens for the stop.
  setMaxListeners(settings.concurrency + 10, controller.signal);
  const stop = () => controller.abort();
  process.once('SIGINT', stop).once('SIGTERM', stop);
  const outcomes = new Map<string, RunOutcome>();
  const outcome = (run: PlannedRun) => {
    let known = outcomes.get(run.session);
    if (!known) {
      const c = cases[run.case]!;
      known = outcomeOf(join(dir, run.session), c.testCase, contextOf(c.workflow[run.version]));
      outcomes.set(run.session, known);
    }
    return known;
  };
  const { repeat, stages } = experiment.design;
  try {
    for (let stage: 1 | 2 = 1; stage <= stages; stage = 2) {
      let planned = experiment.runs.filter((r) => r.stage === stage);
      if (planned.length === 0) {
        planned = plan(cases.length, repeat, stage);
        experiment.runs.push(...planned);
        writeExperiment(dir, experiment);
        say(
          `stage ${stage}: ${planned.length} runs (${cases.length} cases × 2 versions × ${repeat}), ` +
            `${settings.concurrency} at a time${settings.batch ? ', in shared message batches' : ''}`,
        );
      }
      await runStage(planned, cases, { dir, ...settings }, controller.signal, say);
      if (controller.signal.aborted) {
        say(`stopped: the runs made so far are in ${dir}; go on with conclave experiment --resume ${dir}`);
        return EXIT.sigint;
      }
      const waiting = settings.park ? planned.filter((run) => runState(join(dir, run.session)) !== 'ended').length : 0;
      if (waiting > 0) {
        say(
          `parked: ${waiting} run${waiting === 1 ? '' : 's'} of stage ${stage} wait for message batches; go on later with conclave experiment --resume ${dir}`,
        );
        return EXIT.waiting;
      }
      // A second stage already planned (a resumed experiment) is gone on with before anything is decided.
      if (experiment.runs.some((r) => r.stage > stage)) continue;
      const result = decide(experiment, outcome);
      if (result) return finish(experiment, result, dir, options);
      say('stage 1 is unclear: a second stage of the same size runs');
      if (stage === 2) break;
    }
    throw new Error('an experiment ended with no verdict');
  } finally {
    process.off('SIGINT', stop).off('SIGTERM', stop);
  }
}

/** `--recompute DIR`: the verdict again from the experiment's sessions alone, no request. */
async function recompute(dir: string, options: ExperimentOptions): Promise<number> {
  const experiment = readExperiment(dir);
  const ordered = await keptCases(experiment, dir);
  // No runs: what the versions would send is compared again, for nothing.
  if (experiment.runs.length === 0) {
    if ((await changesOf(ordered)).length === 0) return finish(experiment, noChange(experiment.cases), dir, options, false);
    throw new UsageError(`${dir}: the versions differ but no run was made: go on with conclave experiment --resume ${dir}`);
  }
  const result = decide(experiment, (run) => {
    const c = ordered[run.case]!;
    return outcomeOf(join(dir, run.session), c.testCase, contextOf(c.workflow[run.version]));
  });
  if (!result) throw new UsageError(`${dir}: the experiment's first stage is unclear and its second has not run: there is no verdict yet`);
  return finish(experiment, result, dir, options, false);
}

/** The experiment's cases as it kept them (its copy of the head's test files), in its order. */
async function keptCases(experiment: ExperimentFile, dir: string): Promise<LoadedCase[]> {
  const cases = await loadExperimentCases(experiment.test_files, { base: join(dir, 'base'), head: join(dir, 'head'), cwd: experiment.cwd });
  const byName = new Map(cases.map((c) => [`${c.entry.file}\n${c.entry.name}`, c]));
  return experiment.cases.map((c) => {
    const found = byName.get(`${c.file}\n${c.name}`);
    if (!found) throw new UsageError(`${join(dir, 'experiment.json')}: case "${c.name}" is not in ${c.file} as the experiment kept it`);
    return found;
  });
}

function decide(experiment: ExperimentFile, outcome: (run: PlannedRun) => RunOutcome): ExperimentResult | undefined {
  const pass = experiment.primary === 'pass' ? (o: RunOutcome) => o.pass : (o: RunOutcome) => !o.broke && !o.failed.includes(`graders.${experiment.primary}`);
  return verdictOf(experiment.cases, experiment.runs, outcome, pass, experiment.design, experiment.guardrails, experiment.id, experiment.primary);
}

async function finish(experiment: ExperimentFile, result: ExperimentResult, dir: string, options: ExperimentOptions, write = true): Promise<number> {
  if (write) writeExperiment(dir, { ...experiment, result });
  process.stdout.write(options.json ? `${printableJson(experimentJson(experiment, result, dir))}\n` : experimentText(experiment, result, dir));
  const code = result.verdict === 'REJECT' ? EXIT.failure : EXIT.ok;
  if (inGitHubActions()) {
    const [{ appendSummary, writeOutputs }, { experimentMarkdown }] = await Promise.all([
      import('../github/github-report.js'),
      import('./experiment-markdown.js'),
    ]);
    const warn = (message: string) => process.stderr.write(`conclave: ${message}\n`);
    appendSummary(experimentMarkdown(experiment, result), warn);
    writeOutputs(
      {
        'experiment-verdict': result.verdict,
        'experiment-reason': result.reason,
        'experiment-dir': dir,
        'experiment-spent-usd': result.spent_usd.toFixed(6),
        'exit-code': String(code),
      },
      warn,
    );
  }
  return code;
}

/** What the edit touches: each agent's first difference (and the workflow's), over every test file's cases. */
async function changesOf(cases: readonly LoadedCase[]): Promise<RequestChange[]> {
  const changes: RequestChange[] = [];
  for (const suite of groupedBySuite(cases)) {
    const found = await requestChanges(
      suite[0]!.workflow.base,
      suite[0]!.workflow.head,
      suite.map((c) => ({ name: c.entry.name, inputs: c.testCase.inputs })),
      suite[0]!.workspace,
    );
    changes.push(...found.filter((f) => !changes.some((c) => c.agent === f.agent)));
  }
  return changes;
}

function groupedBySuite(cases: readonly LoadedCase[]): LoadedCase[][] {
  const groups = new Map<string, LoadedCase[]>();
  for (const c of cases) groups.set(c.entry.file, [...(groups.get(c.entry.file) ?? []), c]);
  return [...groups.values()];
}

function whole(text: string, flag: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${flag} takes a whole number from ${min} to ${max}; found "${text}"`);
  return n;
}

function dollars(text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < 0) throw new UsageError(`--max-estimate-usd takes an amount in dollars, such as 5; found "${text}"`);
  return n;
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;
