import type { Estimate, EstimateRow } from '../../engine/estimate/estimate.js';
import { formatUsd } from '../../provider/money.js';
import { cell } from '../markdown-tables.js';

const BOUND = { budget_usd: 'limits.budget_usd', max_tokens_total: 'limits.max_tokens_total', turns: 'the turns, tokens and fan-out the limits allow' };

function instancesOf(row: EstimateRow): string {
  if (row.kind === 'agent') return '';
  if (row.instances === null) return ' (per item: items unknown without setup)';
  return row.kind === 'template' ? ` (template, ${row.instances} instance${row.instances === 1 ? '' : 's'} expected)` : ` (${row.instances} items)`;
}

function notes(estimate: Estimate): string[] {
  const lines: string[] = [];
  if (estimate.per_item_usd > 0) lines.push(`plus ${formatUsd(estimate.per_item_usd)} likely per item of a for_each whose items are unknown (--no-setup)`);
  const turns =
    estimate.sessions > 0
      ? `the turns of ${estimate.sessions} earlier session${estimate.sessions === 1 ? '' : 's'} (their median)`
      : "one turn each time an agent is woken (a manager's reports that come together wake it once)";
  const counted = estimate.agents.every((r) => r.counted === 'exact') ? "by the API's token counting" : 'partly from their length (no token counting here)';
  lines.push(`likely: prompts counted ${counted}, ${turns}`);
  return lines;
}

/** The estimate as a person reads it in a terminal. */
export function estimateText(estimate: Estimate, file: string): string {
  const width = Math.max(5, ...estimate.agents.map((r) => r.name.length));
  const lines = [
    `${file}: likely ${formatUsd(estimate.likely_usd)}, at most ${formatUsd(estimate.worst_usd)} (bounded by ${BOUND[estimate.worst_bound]})`,
    '',
    `${'agent'.padEnd(width)}  ${'likely'.padStart(10)}  ${'worst'.padStart(10)}  ${'calls'.padStart(5)}  cached tokens`,
    ...estimate.agents.map(
      (r) =>
        `${r.name.padEnd(width)}  ${formatUsd(r.likely_usd).padStart(10)}  ${formatUsd(r.worst_usd).padStart(10)}  ${String(r.calls).padStart(5)}  ` +
        `${r.cached_tokens}${r.batched ? ' · batched' : ''}${instancesOf(r)}`,
    ),
    '',
    ...notes(estimate),
  ];
  return `${lines.join('\n')}\n`;
}

/** The estimate as a Markdown section: the job summary's first, and `conclave estimate --format markdown`. */
export function estimateMarkdown(estimate: Estimate, heading = '### Estimate before the run'): string[] {
  return [
    heading,
    '',
    `Likely **${formatUsd(estimate.likely_usd)}**, at most **${formatUsd(estimate.worst_usd)}** (bounded by ${BOUND[estimate.worst_bound]}).`,
    '',
    '| agent | likely | worst | calls | cached tokens | |',
    '|---|---:|---:|---:|---:|---|',
    ...estimate.agents.map(
      (r) =>
        `| ${cell(r.name)} | ${formatUsd(r.likely_usd)} | ${formatUsd(r.worst_usd)} | ${r.calls} | ${r.cached_tokens} | ` +
        `${[r.batched ? 'batched' : '', instancesOf(r).trim()].filter(Boolean).join(', ')} |`,
    ),
    '',
    ...notes(estimate).map((n) => `${n[0]!.toUpperCase()}${n.slice(1)}.`),
    '',
  ];
}
