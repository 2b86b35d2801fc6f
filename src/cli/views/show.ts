import { printableJson } from '../command-guard.js';
import { printable } from '../output/terminal-text.js';
import { readSession, SessionFileError } from '../../session/reader.js';
import { summarize, type SessionSummary, type TranscriptMessage } from '../../session/summary.js';
import { EXIT } from '../../exit-codes.js';
import { castLabel } from '../../session/person.js';
import { ballotsSection } from '../github/ballot-section.js';
import { taintSection } from '../github/taint-section.js';
import {
  agentTree,
  indentOf,
  compactionsTable,
  documentsSection,
  documentStepText,
  dollars,
  fenced,
  findingsTable,
  inline,
  outputsTable,
  proposalsTable,
  sharedLimitLines,
  timelineChart,
  usageTable,
} from '../markdown-tables.js';
import { asUsageError } from '../usage-error.js';
import { batchLine, cacheLine, cacheMissLines, fallbackLines } from '../github/saving-lines.js';

export type ShowFormat = 'text' | 'markdown' | 'json';

/** `conclave show SESSION`: the transcript, the proposals, usage and cost. */
export function showCommand(file: string, options: { format: ShowFormat }): number {
  const summary = summarize(asUsageError(() => readSession(file), SessionFileError));
  const render = options.format === 'json' ? (s: SessionSummary) => `${printableJson(s)}\n` : options.format === 'markdown' ? markdown : text;
  process.stdout.write(options.format === 'json' ? render(summary) : printable(render(summary)));
  return EXIT.ok;
}

const from = (m: TranscriptMessage) => (m.kind === 'agent' ? `@${m.sender}` : m.kind);
const to = (m: TranscriptMessage) => (m.recipients.length ? m.recipients.map((r) => `@${r}`).join(', ') : 'no one');

function text(s: SessionSummary): string {
  const lines = [`${s.header.workflow.path} · run ${s.header.run_id} · started ${s.header.started_at}`];
  if (s.header.note) lines.push(`(${s.header.note})`);
  const inputs = Object.entries(s.header.inputs ?? {});
  if (inputs.length) lines.push(`inputs: ${inputs.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')}`);
  lines.push('');
  for (const m of s.messages) {
    lines.push(`#${m.id} ${from(m)} → ${to(m)}`);
    lines.push(indented(m.text));
  }
  if (s.proposals.length) lines.push('', 'Proposals:');
  for (const p of s.proposals) {
    const tally = Object.entries(p.tally)
      .map(([o, n]) => `${o} ${n}`)
      .join(', ');
    lines.push(`  ${p.id}: ${p.question} — ${p.status.replace('_', ' ')}${p.winner ? ` "${p.winner}"` : ''} (${tally}; ${p.rule})`);
    for (const voter of p.voters.filter((v) => p.votes[v] || !p.refused.some((r) => r.voter === v))) {
      const v = p.votes[voter];
      lines.push(`    ${castLabel(voter, p.cast_by?.[voter], (url) => url)}: ${v ? `${v.option}${v.reason ? ` — ${v.reason}` : ''}` : 'did not vote'}`);
    }
    for (const r of p.refused) lines.push(`    @${r.voter}: ${r.option} (not counted: ${r.why})`);
    for (const [agent, v] of Object.entries(p.advice ?? {})) lines.push(`    @${agent} (advice): ${v.option}${v.reason ? ` — ${v.reason}` : ''}`);
  }
  if (s.header.trust?.untrusted) lines.push('', `Untrusted content: ${s.header.trust.why}.`);
  const tainted = Object.entries(s.tainted);
  if (tainted.length) lines.push('', 'Tainted agents (read text from outside the team):');
  for (const [agent, why] of tainted) lines.push(`  @${agent}: ${why}`);
  for (const b of s.ballots) {
    lines.push(
      '',
      `Waiting for a vote from ${b.waiting_for.join(', ')} on ${b.proposal}${b.deadline ? ` (closes by its rule at ${b.deadline})` : ''}; to vote, comment:`,
    );
    for (const command of Object.values(b.commands)) lines.push(`    ${command}`);
  }
  if (s.documents.length) lines.push('', 'Documents:');
  for (const d of s.documents) {
    lines.push(`  ${d.name} (owner @${d.owner}${d.mode === 'append' ? ', append' : ''}): version ${d.version}`);
    for (const step of d.history) lines.push(`    ${step.version === null ? '   ' : `v${String(step.version).padEnd(2)}`} ${documentStepText(step)}`);
    if (d.conflicts.length) lines.push(`    in conflict: ${d.conflicts.join(', ')} (accepted, did not land: edit again against the last version)`);
    if (d.open_edits.length) lines.push(`    open edits: ${d.open_edits.join(', ')} (never reviewed)`);
    lines.push(`    text of version ${d.version}:`, ...d.text.split('\n').map((l) => `      ${l}`));
  }
  if (s.findings.length) lines.push('', 'Findings:');
  for (const f of s.findings) {
    lines.push(`  ${f.level} ${f.path}:${f.line}${f.end_line > f.line ? `-${f.end_line}` : ''} — ${f.title ? `${f.title}: ` : ''}${f.message} (@${f.agent})`);
  }
  if (s.compactions.length) lines.push('', 'Compactions:');
  for (const c of s.compactions) {
    const what = [c.cleared ? `${c.cleared} tool results cleared` : '', c.summary !== null ? 'earlier turns summarised' : ''].filter(Boolean).join(', ');
    lines.push(
      `  @${c.agent} turn ${c.turn}: ${c.tokens_before} → ${c.tokens_after} tokens ` +
        `(${what}${c.reason === 'too_long' ? '; the API said the prompt was too long' : ''})`,
    );
    if (c.summary !== null) lines.push(indented(c.summary));
  }
  lines.push('', 'Usage:');
  // The prompt cache's columns when it was used: "53 in" alone does not explain a cost.
  const cached = s.cache.read_tokens + s.cache.written_tokens > 0;
  const cacheColumns = (u: SessionSummary['total']) =>
    cached ? `${String(u.cache_read_input_tokens).padStart(9)} cache read ${String(u.cache_creation_input_tokens).padStart(8)} cache written ` : '';
  const usageLine = (label: string, u: SessionSummary['total'], after = '') =>
    `  ${label.padEnd(16)} ${String(u.turns).padStart(3)} turns ${String(u.calls).padStart(4)} calls ${String(u.input_tokens).padStart(9)} in ` +
    `${cacheColumns(u)}${String(u.output_tokens).padStart(8)} out  ${dollars(u.cost_usd)}${u.batched_calls ? ` · ${u.batched_calls} batched` : ''}${after}`;
  for (const { name, depth, usage, below } of agentTree(s)) {
    const ended = s.spawned[name]?.ended;
    lines.push(
      usageLine(
        `${indentOf(depth, '  ')}${name}`,
        usage,
        `${below ? ` · ${dollars(below.costUsd)} with the ${below.agents - 1} below` : ''}${ended ? ` (${ended})` : ''}`,
      ),
    );
  }
  lines.push(usageLine('total', s.total));
  for (const line of [cacheLine(s), ...cacheMissLines(s), ...fallbackLines(s), batchLine(s), ...sharedLimitLines(s)].filter(Boolean)) lines.push(`  ${line}`);
  if (s.end) {
    lines.push('', `Ended: ${s.end.status} (exit ${s.end.exit_code}) — ${s.end.reason}`);
    for (const [k, v] of Object.entries(s.end.outputs)) lines.push(`  output ${k}: ${v}`);
  } else {
    lines.push('', 'The run has not ended: continue it with conclave resume.');
  }
  return `${lines.join('\n')}\n`;
}

function markdown(s: SessionSummary): string {
  const lines = [`# ${inline(s.header.workflow.path)}`, '', `Run ${inline(s.header.run_id)}, started ${inline(s.header.started_at)}.`, ''];
  if (s.end) lines.push(`**${inline(s.end.status)}** (exit ${s.end.exit_code}): ${inline(s.end.reason)}`, '');
  lines.push(...ballotsSection(s, '##'), ...taintSection(s, '##'));
  if (s.end) lines.push(...outputsTable(s.end.outputs, '##'));
  lines.push('## Transcript', '');
  // Each message in a fence longer than any run of backticks in it: no line of it is read as Markdown or HTML.
  for (const m of s.messages) lines.push(`**#${inline(String(m.id))} ${inline(from(m))} → ${inline(to(m))}**`, '', fenced(m.text), '');
  lines.push(
    ...findingsTable(s, '##'),
    ...proposalsTable(s, '##'),
    ...documentsSection(s, '##'),
    ...compactionsTable(s, '##'),
    ...timelineChart(s, '##'),
    ...usageTable(s, '## Usage'),
  );
  return `${lines.join('\n')}\n`;
}

/** Text indented under its heading line, as one string (a text of many lines is no argument list). */
function indented(text: string): string {
  return `    ${text.replaceAll('\n', '\n    ')}`;
}
