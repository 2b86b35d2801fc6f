import { codeCell, inline } from '../markdown-text.js';
import type { ExperimentFile } from './experiment-file.js';
import { cases, intervalText, points, sizeLine, versionLine, worstCases } from './experiment-text.js';
import type { ExperimentResult, Guardrail } from './experiment-verdict.js';

/**
 * An experiment's verdict in Markdown (docs/experiments.md: in the Action): the job summary, the
 * pull request's one comment (updated in place: its first line is its marker) and the check run's
 * text. Case names come from the test files of the pull request: written inert.
 */

const ICONS: Record<ExperimentResult['verdict'], string> = { PROMOTE: '✅', REJECT: '❌', INCONCLUSIVE: '⚪', 'NO-CHANGE': '➖' };

/** The comment's first line: one comment per set of test files on a pull request. */
export function experimentMarker(tests: readonly string[]): string {
  return `<!-- conclave experiment: ${tests.join(' ').replace(/--/g, '- -')} -->`;
}

export function experimentMarkdown(experiment: ExperimentFile, result: ExperimentResult, reportUrl?: string): string {
  const pct = (n: number | null) => (n === null ? '—' : `${(n * 100).toFixed(1)} %`);
  const lines = [
    experimentMarker(experiment.test_files),
    `### ${ICONS[result.verdict]} conclave experiment: **${result.verdict}** (\`${result.reason}\`)`,
    '',
    cell(versionLine(experiment)),
    '',
  ];
  if (result.verdict === 'NO-CHANGE') {
    lines.push('No request of any case differs between the versions: nothing was run, nothing was spent.');
    return `${lines.join('\n')}\n`;
  }
  const p = result.primary!;
  lines.push(
    touched(experiment.changes),
    '',
    '| | base | head | effect | interval | p |',
    '|---|---|---|---|---|---|',
    `| ${p.grader === 'pass' ? 'pass rate' : cell(p.grader)} | ${pct(p.base)} | ${pct(p.head)} | ${points(p.effect)} points | ${intervalText(p)} | ${p.p} |`,
    '',
    '| guardrail | base | head | at most | |',
    '|---|---|---|---|---|',
    ...result.guardrails.map(guardrailRow),
    '',
  );
  const worst = worstCases(result.cases);
  if (worst.length > 0) {
    lines.push(
      '| worst cases | base | head |',
      '|---|---|---|',
      ...worst.map((c) => `| ${cell(c.name)} | ${c.base.passes}/${c.base.runs} | ${c.head.passes}/${c.head.runs} |`),
      '',
    );
  }
  if (reportUrl) lines.push(`📄 [The worst case's run](${reportUrl}) on the head: its timeline, every call, message and vote.`, '');
  if (result.says_nothing.length > 0)
    lines.push(`*${cases(result.says_nothing.length)} passed or failed every run in both versions and say nothing of the change.*`, '');
  for (const w of result.warnings) lines.push(`> [!WARNING]\n> ${cell(w)}`, '');
  lines.push(
    `${sizeLine(experiment, result)}${experiment.batch ? ' at the batch price' : ''} · \`conclave experiment --recompute\` gives the same from the sessions`,
  );
  return `${lines.join('\n')}\n`;
}

function touched(changes: ExperimentFile['changes']): string {
  if (changes.length === 0) return '';
  const each = changes.map((c) => (c.agent === null ? `the workflow at ${codeCell(c.path)}` : `@\u200b${cell(c.agent)} at ${codeCell(c.path)}`));
  return `The edit touches ${each.join(', ')}.`;
}

function guardrailRow(g: Guardrail): string {
  const show = (n: number | null) =>
    n === null ? '—' : g.id === 'cost_per_run' ? `$${n.toFixed(4)}` : g.id === 'duplicate_findings' ? n.toFixed(2) : `${(n * 100).toFixed(1)} %`;
  return `| ${g.id.replace(/_/g, ' ')} | ${show(g.base)} | ${show(g.head)} | ${show(g.limit)} | ${g.held ? 'held' : '**failed**'} |`;
}

/** Text from the pull request on one line or in a table cell (markdown-text.ts), mentioning no one and linking no issue. */
function cell(text: string): string {
  return inline(text)
    .replace(/@(?=[A-Za-z0-9_-])/g, '@\u200b')
    .replace(/#(?=\d)/g, '#\u200b');
}
