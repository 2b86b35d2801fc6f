import { setMaxListeners } from 'node:events';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { EXIT } from '../../exit-codes.js';
import { replayable } from '../../session/recording.js';
import { formatDiagnostic } from '../../workflow/diagnostic.js';
import { writeCommand } from '../command-guard.js';
import { annotation, inGitHubActions } from '../github/github.js';
import { realBelow } from './test-paths.js';
import { startSharedBatches } from './shared-batches.js';
import { cleanUp, runCase, type CaseRun } from './test-case-run.js';
import { checkCase, type Failure } from './test-expect.js';
import type { TestCase } from './expectations.js';
import { checkContextOf, loadSuites, type Suite, testFiles } from './test-suites.js';
import { type CaseOutcome, histogramOf, runOutcome, failureAnnotations, junitXml, resultJson, resultText, writeTestSummary } from './test-report.js';
import { writeWhole } from '../write-whole.js';
import { UsageError } from '../usage-error.js';

export interface TestOptions {
  live?: boolean;
  repeat?: string;
  minPassRate?: string;
  update?: boolean;
  json?: boolean;
  junit?: string;
  /** --case PATTERN: only the cases whose name it is (`*` for any text). */
  case?: string;
  /** --bail: stop at the first case that fails. */
  bail?: boolean;
}

/** A replay that has not ended in this long is stuck: the journal's own watchdog ends a stuck replay long before. */
const OFFLINE_TIMEOUT_MS = 120_000;

/** `conclave test [PATHS…]` (docs/testing-workflows.md): every case of every test file; the exit says whether all held. */
export async function testCommand(paths: readonly string[], options: TestOptions): Promise<number> {
  const repeat = options.repeat === undefined ? 1 : whole(options.repeat, '--repeat');
  const minPassRate = options.minPassRate === undefined ? 1 : rate(options.minPassRate);
  if (!options.live && (options.repeat !== undefined || options.update))
    throw new UsageError(`${options.update ? '--update' : '--repeat'} runs cases against the API: add --live`);
  const files = testFiles(paths.length > 0 ? paths : ['.']);
  const only = options.case === undefined ? undefined : namePattern(options.case);
  const { suites, diagnostics } = await loadSuites(files, { ...options, ...(only ? { only } : {}) });
  if (only && suites.length === 0 && diagnostics.length === 0) throw new UsageError(`no case is named ${JSON.stringify(options.case)} in ${files.join(', ')}`);
  if (diagnostics.length > 0) {
    for (const d of diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
    if (inGitHubActions()) for (const d of diagnostics) writeCommand(options.json ? process.stderr : process.stdout, annotation(d));
    const failing = new Set(diagnostics.map((d) => d.file)).size;
    throw new UsageError(`${failing === 1 ? 'a test file is' : `${failing} files are`} invalid (listed above); no case was run`);
  }
  const controller = new AbortController();
  // Each repeat in flight listens for the stop.
  setMaxListeners(repeat + 10, controller.signal);
  const stop = () => controller.abort();
  process.once('SIGINT', stop).once('SIGTERM', stop);
  const outcomes: CaseOutcome[] = [];
  let apiFailed = false;
  try {
    for (const suite of suites) {
      for (const testCase of suite.test.cases) {
        if (controller.signal.aborted) break;
        const outcome = await runCaseRepeats(
          suite,
          testCase,
          { live: options.live === true, repeat, minPassRate, update: options.update === true },
          controller.signal,
        );
        apiFailed ||= outcome.apiFailed;
        outcomes.push(outcome.outcome);
        if (options.bail && outcome.outcome.result === 'failed') {
          const left = suites.reduce((n, s) => n + s.test.cases.length, 0) - outcomes.length;
          if (left > 0) process.stderr.write(`conclave: --bail: stopped at the first case that failed; ${left} not run\n`);
          break;
        }
      }
      if (options.bail && outcomes.some((o) => o.result === 'failed')) break;
    }
  } finally {
    process.off('SIGINT', stop).off('SIGTERM', stop);
  }
  report(outcomes, options);
  if (controller.signal.aborted) return EXIT.sigint;
  if (apiFailed) return EXIT.provider;
  return outcomes.every((o) => o.result === 'passed') ? EXIT.ok : EXIT.failure;
}

function report(outcomes: readonly CaseOutcome[], options: TestOptions): void {
  process.stdout.write(options.json ? resultJson(outcomes) : resultText(outcomes, options.live === true));
  if (options.junit) {
    mkdirSync(dirname(resolve(options.junit)), { recursive: true });
    writeWhole(options.junit, junitXml(outcomes));
  }
  if (inGitHubActions()) {
    writeCommand(options.json ? process.stderr : process.stdout, failureAnnotations(outcomes));
    writeTestSummary(outcomes, options.live === true);
  }
}

interface CaseMode {
  live: boolean;
  repeat: number;
  minPassRate: number;
  update: boolean;
}

/** A case's K runs (one offline): its passes, its cost and time, the failures of its first failing run; with --update, the first passing live run kept. */
async function runCaseRepeats(suite: Suite, testCase: TestCase, mode: CaseMode, signal: AbortSignal) {
  const timeoutMs = mode.live ? suite.workflow.limits.timeoutMs + 60_000 : OFFLINE_TIMEOUT_MS;
  const started = Date.now();
  const recording = suite.recordings.get(testCase) ?? [];
  // The repeats' calls to the Message Batches API go in one batch each time they ask together.
  const shared =
    mode.live && mode.repeat > 1 && suite.workflow.batched
      ? await startSharedBatches(process.env.ANTHROPIC_BASE_URL || 'https://api.anthropic.com', mode.repeat)
      : undefined;
  let runs: CaseRun[];
  try {
    runs = await Promise.all(
      Array.from({ length: mode.repeat }, async () => {
        const run = await runCase(suite.test, testCase, { live: mode.live, timeoutMs, ...(shared ? { env: { ANTHROPIC_BASE_URL: shared.url } } : {}) }, signal);
        // A replay writes only what goes past its recording: what it re-executed is the recording's.
        return mode.live ? run : { ...run, events: [...replayable(recording), ...run.events] };
      }),
    );
  } finally {
    await shared?.close();
  }
  const checked = runs.map((run) => ({ run, failures: checkCase(testCase, run, checkContextOf(suite, testCase)) }));
  const passing = checked.filter((c) => c.failures.length === 0);
  if (mode.update && passing[0]) keep(passing[0].run, testCase, suite.test.workflow);
  const firstFailing = checked.find((c) => c.failures.length > 0);
  const failures: Failure[] = firstFailing
    ? firstFailing.failures.map((f) => (mode.repeat > 1 ? { ...f, message: `run ${checked.indexOf(firstFailing) + 1} of ${mode.repeat}: ${f.message}` } : f))
    : [];
  const passes = passing.length;
  const decided = testCase.expect.flatMap((e) => (e.kind === 'output' ? [e.name] : []));
  const outcome: CaseOutcome = {
    file: suite.test.file,
    name: testCase.name,
    result: passes / runs.length >= mode.minPassRate ? 'passed' : 'failed',
    passes,
    runs: checked.map(({ run, failures }, i) => runOutcome(i + 1, run, failures, decided, mode.live)),
    ...(runs.length > 1 ? { histogram: histogramOf(runs, decided) } : {}),
    cost_usd: mode.live ? Number(runs.reduce((sum, r) => sum + (r.result?.usage.cost_usd ?? 0), 0).toFixed(6)) : 0,
    wall_ms: Date.now() - started,
    failures: passes / runs.length >= mode.minPassRate && mode.minPassRate < 1 ? [] : failures,
  };
  for (const run of runs) cleanUp(run);
  return { outcome, apiFailed: mode.live && runs.some((r) => r.result?.status === 'provider_error') };
}

/** --update: the passing run's session becomes the case's recording, written whole. */
function keep(run: CaseRun, testCase: TestCase, workflow: string): void {
  // Checked again as it is written: a link put in its way since the test file was read leads nowhere else.
  if (realBelow(process.cwd(), testCase.session!) !== testCase.session) {
    process.stderr.write(`conclave: ${testCase.sessionText}: not recorded: it now leaves the current folder through a link\n`);
    return;
  }
  const [first, ...rest] = readFileSync(run.session, 'utf8').split('\n');
  // The header names where the run was made (a scratch folder): the kept file names where it is kept, as a person would type it.
  const header = JSON.parse(first!) as { session?: string; workflow?: { path?: string } };
  header.session = relative(process.cwd(), testCase.session!).split(sep).join('/');
  if (header.workflow) header.workflow.path = relative(process.cwd(), workflow).split(sep).join('/');
  mkdirSync(dirname(testCase.session!), { recursive: true });
  writeWhole(testCase.session!, [JSON.stringify(header), ...rest].join('\n'));
  process.stderr.write(`conclave: ${relative(process.cwd(), testCase.session!)}: recorded "${testCase.name}" from a passing live run\n`);
}

function whole(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 100) throw new UsageError(`${flag} takes a whole number from 1 to 100; found "${text}"`);
  return n;
}

function rate(text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1)
    throw new UsageError(`--min-pass-rate takes a number from 0 to 1, such as 0.8; found "${text}"`);
  return n;
}

/** --case: a case's name, whole, where `*` stands for any text. */
function namePattern(pattern: string): (name: string) => boolean {
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    'u',
  );
  return (name) => re.test(name);
}
