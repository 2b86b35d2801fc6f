import { appendFileSync } from 'node:fs';
import { annotation } from '../github/github.js';
import { cell, inline } from '../markdown-tables.js';
import { repoPath } from '../github/sarif.js';
import type { CaseRun } from './test-case-run.js';
import type { Failure } from './test-expect.js';

/** How one run of a case went: its status, the outputs its expectations look at, and the first expectation it failed. */
export interface RunOutcome {
  run: number;
  result: 'passed' | 'failed';
  /** The run's status (`success`, `failure`, …), or `none` for a run that gave no result. */
  status: string;
  /** The outputs the case's expectations name, as this run gave them. */
  outputs: Record<string, string>;
  cost_usd: number;
  wall_ms: number;
  first_failure?: Failure;
}

/** How one case went: over all its runs (one offline; K with --live --repeat K). */
export interface CaseOutcome {
  file: string;
  name: string;
  result: 'passed' | 'failed';
  passes: number;
  /** Each run, in the order they were started. */
  runs: RunOutcome[];
  /** Repeats: how often each output the expectations name took each value. */
  histogram?: Record<string, Record<string, number>>;
  cost_usd: number;
  wall_ms: number;
  /** The failures of the first run that failed. */
  failures: Failure[];
}

/** One run's outcome: `decided`, the outputs the case's expectations name. */
export function runOutcome(run: number, caseRun: CaseRun, failures: readonly Failure[], decided: readonly string[], live: boolean): RunOutcome {
  const given = caseRun.result?.outputs ?? {};
  const outputs = Object.fromEntries(decided.filter((name) => given[name] !== undefined).map((name) => [name, given[name]!]));
  return {
    run,
    result: failures.length === 0 ? 'passed' : 'failed',
    status: caseRun.result?.status ?? 'none',
    outputs,
    cost_usd: live ? (caseRun.result?.usage.cost_usd ?? 0) : 0,
    wall_ms: caseRun.wallMs,
    ...(failures[0] ? { first_failure: failures[0] } : {}),
  };
}

/** How often each output the expectations name took each value over the runs (a run without it counts as `(none)`). */
export function histogramOf(runs: readonly CaseRun[], decided: readonly string[]): Record<string, Record<string, number>> {
  const histogram: Record<string, Record<string, number>> = {};
  for (const name of new Set(decided)) {
    const counts: Record<string, number> = {};
    for (const run of runs) {
      const value = run.result?.outputs[name] ?? NONE;
      counts[value] = (counts[value] ?? 0) + 1;
    }
    histogram[name] = counts;
  }
  return histogram;
}

const NONE = '(none)';
const shown = (value: string) => (value === NONE ? value : JSON.stringify(value.length > 60 ? `${value.slice(0, 59)}…` : value));

/** A repeated case's runs as lines: each run, then each output's values with their counts. */
function runLines(o: CaseOutcome): string[] {
  if (o.runs.length < 2) return [];
  const lines = o.runs.map((r) => {
    const outputs = Object.entries(r.outputs).map(([name, value]) => `${name}=${shown(value)}`);
    const failure = r.first_failure ? [`${r.first_failure.expectation}: ${r.first_failure.message}`] : [];
    return `  run ${r.run}  ${r.result === 'passed' ? 'pass' : 'FAIL'}  ${[r.status, ...outputs, ...failure].join('  ')}`;
  });
  const histogram = Object.entries(o.histogram ?? {}).map(
    ([name, counts]) =>
      `  ${name}: ${Object.entries(counts)
        .sort((a, b) => b[1] - a[1])
        .map(([value, n]) => `${shown(value)} ×${n}`)
        .join(', ')}`,
  );
  return [`${o.name}: ${o.passes} of ${o.runs.length} runs passed`, ...lines, ...histogram];
}

const where = (o: CaseOutcome, f: Failure) => `${repoPath(process.cwd(), f.file ?? o.file)}:${f.line}:${f.column}`;

/** The table a person reads, then each failure at its place. */
export function resultText(outcomes: readonly CaseOutcome[], live: boolean): string {
  const rows = outcomes.map((o) => [
    `${repoPath(process.cwd(), o.file)} › ${o.name}`,
    o.result === 'passed' ? 'pass' : 'FAIL',
    `${o.passes}/${o.runs.length}`,
    live ? `$${o.cost_usd.toFixed(4)}` : '—',
    `${(o.wall_ms / 1000).toFixed(1)} s`,
  ]);
  const header = ['case', 'result', 'passes', live ? 'cost' : 'cost (offline: none)', 'time'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const out = [line(header), ...rows.map(line)];
  for (const o of outcomes) if (o.runs.length > 1) out.push('', ...runLines(o));
  for (const o of outcomes) for (const f of o.failures) out.push('', `${where(o, f)}: ${o.name}: ${f.expectation}: ${f.message}`);
  const failed = outcomes.filter((o) => o.result === 'failed').length;
  out.push('', `${outcomes.length - failed} passed, ${failed} failed`);
  return `${out.join('\n')}\n`;
}

export function resultJson(outcomes: readonly CaseOutcome[]): string {
  const failed = outcomes.filter((o) => o.result === 'failed').length;
  return `${JSON.stringify({ cases: outcomes, passed: outcomes.length - failed, failed }, null, 2)}\n`;
}

/**
 * JUnit XML as GitHub's test reporters read it, and as the Jenkins schema and tools that recount
 * it (junitparser) agree with: a suite per test file, a testcase per case with one failure (the
 * first that failed, the others in its text), `errors` and `skipped` counted (0: a case that
 * cannot run is a failure), and a repeated case's runs in its system-out: each run's status, the
 * outputs its expectations name and its first failure, then each output's values counted (the
 * Jenkins schema allows no `<properties>` in a testcase, so they are text there).
 */
export function junitXml(outcomes: readonly CaseOutcome[]): string {
  const files = [...new Set(outcomes.map((o) => o.file))];
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const total = (list: readonly CaseOutcome[]) => list.reduce((sum, o) => sum + o.wall_ms, 0);
  const failed = (list: readonly CaseOutcome[]) => list.filter((o) => o.result === 'failed').length;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="conclave test" tests="${outcomes.length}" failures="${failed(outcomes)}" errors="0" skipped="0" time="${seconds(total(outcomes))}">`,
  ];
  for (const file of files) {
    const cases = outcomes.filter((o) => o.file === file);
    const name = xml(repoPath(process.cwd(), file));
    lines.push(`  <testsuite name="${name}" tests="${cases.length}" failures="${failed(cases)}" errors="0" skipped="0" time="${seconds(total(cases))}">`);
    for (const o of cases) {
      const line = o.failures[0]?.line;
      const open = `    <testcase name="${xml(o.name)}" classname="${name}" file="${name}"${line ? ` line="${line}"` : ''} time="${seconds(o.wall_ms)}"`;
      const out = o.runs.length > 1 ? [`      <system-out>${xml(runLines(o).join('\n'))}</system-out>`] : [];
      if (o.result === 'passed') {
        lines.push(out.length ? `${open}>` : `${open}/>`, ...out, ...(out.length ? ['    </testcase>'] : []));
        continue;
      }
      const failures =
        o.failures.length > 0 ? o.failures : [{ expectation: 'pass rate', line: 0, column: 0, message: `${o.passes} of ${o.runs.length} runs passed` }];
      const [first] = failures;
      const text = failures.map((f) => `${where(o, f)}: ${f.message}`).join('\n');
      lines.push(
        `${open}>`,
        `      <failure type="${xml(first!.expectation)}" message="${xml(first!.message)}">${xml(text)}</failure>`,
        ...out,
        '    </testcase>',
      );
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>');
  return `${lines.join('\n')}\n`;
}

/** In GitHub Actions: an annotation at the line of each expectation that failed. */
export function failureAnnotations(outcomes: readonly CaseOutcome[]): string {
  return outcomes
    .flatMap((o) =>
      o.failures.map((f) =>
        annotation(
          { file: f.file ?? o.file, line: f.line, col: f.column, severity: 'error', message: `${o.name}: ${f.message}` },
          `conclave test › ${f.expectation}`,
        ),
      ),
    )
    .join('');
}

/** In GitHub Actions: the job summary's table. A summary that cannot be written is passed over: the log says it all. */
export function writeTestSummary(outcomes: readonly CaseOutcome[], live: boolean): void {
  const target = process.env.GITHUB_STEP_SUMMARY;
  if (!target) return;
  const failed = outcomes.filter((o) => o.result === 'failed').length;
  const lines = [
    `## ${failed === 0 ? '✅' : '❌'} conclave test: ${outcomes.length - failed} passed, ${failed} failed`,
    '',
    `| case | result | passes | ${live ? 'cost | ' : ''}time |`,
    `|---|---|---|${live ? '---|' : ''}---|`,
    ...outcomes.map(
      (o) =>
        `| ${cell(`${repoPath(process.cwd(), o.file)} › ${o.name}`)} | ${o.result === 'passed' ? '✅ pass' : '❌ fail'} | ${o.passes}/${o.runs.length} | ` +
        `${live ? `$${o.cost_usd.toFixed(4)} | ` : ''}${(o.wall_ms / 1000).toFixed(1)} s |`,
    ),
    '',
  ];
  for (const o of outcomes) for (const f of o.failures) lines.push(`- ${inline(`${where(o, f)}`)}: ${inline(`${o.name}: ${f.message}`)}`);
  try {
    appendFileSync(target, `${lines.join('\n')}\n`);
  } catch {
    // The log and the annotations say it.
  }
}

/** Text as XML attribute or element content: escaped, and without the characters XML 1.0 cannot hold. */
function xml(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}
