import { appendFileSync } from 'node:fs';
import { annotation } from '../github/github.js';
import { cell, inline } from '../markdown-tables.js';
import { repoPath } from '../github/sarif.js';
import type { Failure } from './test-expect.js';

/** How one case went: over all its runs (one offline; K with --live --repeat K). */
export interface CaseOutcome {
  file: string;
  name: string;
  result: 'passed' | 'failed';
  runs: number;
  passes: number;
  cost_usd: number;
  wall_ms: number;
  /** The failures of the first run that failed. */
  failures: Failure[];
}

const where = (o: CaseOutcome, f: Failure) => `${repoPath(process.cwd(), o.file)}:${f.line}:${f.column}`;

/** The table a person reads, then each failure at its place. */
export function resultText(outcomes: readonly CaseOutcome[], live: boolean): string {
  const rows = outcomes.map((o) => [
    `${repoPath(process.cwd(), o.file)} › ${o.name}`,
    o.result === 'passed' ? 'pass' : 'FAIL',
    `${o.passes}/${o.runs}`,
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
  for (const o of outcomes) for (const f of o.failures) out.push('', `${where(o, f)}: ${o.name}: ${f.expectation}: ${f.message}`);
  const failed = outcomes.filter((o) => o.result === 'failed').length;
  out.push('', `${outcomes.length - failed} passed, ${failed} failed`);
  return `${out.join('\n')}\n`;
}

export function resultJson(outcomes: readonly CaseOutcome[]): string {
  const failed = outcomes.filter((o) => o.result === 'failed').length;
  return `${JSON.stringify({ cases: outcomes, passed: outcomes.length - failed, failed }, null, 2)}\n`;
}

/** JUnit XML as GitHub's test reporters read it: a suite per test file, a testcase per case, a failure per expectation that failed. */
export function junitXml(outcomes: readonly CaseOutcome[]): string {
  const files = [...new Set(outcomes.map((o) => o.file))];
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const total = (list: readonly CaseOutcome[]) => list.reduce((sum, o) => sum + o.wall_ms, 0);
  const failed = (list: readonly CaseOutcome[]) => list.filter((o) => o.result === 'failed').length;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="conclave test" tests="${outcomes.length}" failures="${failed(outcomes)}" time="${seconds(total(outcomes))}">`,
  ];
  for (const file of files) {
    const cases = outcomes.filter((o) => o.file === file);
    const name = xml(repoPath(process.cwd(), file));
    lines.push(`  <testsuite name="${name}" tests="${cases.length}" failures="${failed(cases)}" time="${seconds(total(cases))}">`);
    for (const o of cases) {
      const line = o.failures[0]?.line;
      const open = `    <testcase name="${xml(o.name)}" classname="${name}" file="${name}"${line ? ` line="${line}"` : ''} time="${seconds(o.wall_ms)}"`;
      if (o.result === 'passed') {
        lines.push(`${open}/>`);
        continue;
      }
      lines.push(`${open}>`);
      const failures = o.failures.length > 0 ? o.failures : [{ expectation: 'pass rate', line: 0, column: 0, message: `${o.passes} of ${o.runs} runs passed` }];
      for (const f of failures)
        lines.push(`      <failure type="${xml(f.expectation)}" message="${xml(f.message)}">${xml(`${where(o, f)}: ${f.message}`)}</failure>`);
      lines.push('    </testcase>');
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>');
  return `${lines.join('\n')}\n`;
}

/** In GitHub Actions: an annotation at the line of each expectation that failed. */
export function failureAnnotations(outcomes: readonly CaseOutcome[]): string {
  return outcomes
    .flatMap((o) => o.failures.map((f) => annotation({ file: o.file, line: f.line, col: f.column, severity: 'error', message: `${o.name}: ${f.message}` })))
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
        `| ${cell(`${repoPath(process.cwd(), o.file)} › ${o.name}`)} | ${o.result === 'passed' ? '✅ pass' : '❌ fail'} | ${o.passes}/${o.runs} | ` +
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
