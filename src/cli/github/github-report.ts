import type { SessionSummary, TranscriptMessage } from '../../session/summary.js';
import type { RunResult } from '../../engine/run-options.js';
import * as core from '@actions/core';
import { appendFileSync } from 'node:fs';
import { EXIT } from '../../exit-codes.js';
import { END_GROUP, findingAnnotation, group, warningAnnotation } from './github.js';
import { repoPath } from './sarif.js';
import { type GradedSummary, gradersLine } from './graders-line.js';
import { printable } from '../output/terminal-text.js';
import { ballotsSection } from './ballot-section.js';
import { taintSection } from './taint-section.js';
import { estimateMarkdown } from '../estimate/estimate-text.js';
import {
  compactionsTable,
  documentsSection,
  fenced,
  findingsTable,
  inline,
  outputsTable,
  proposalsTable,
  timelineChart,
  usageTable,
} from '../markdown-tables.js';

/** After a run in GitHub Actions: step outputs, the job summary, and each agent's messages in a log group. */
export function reportToGitHub(
  result: RunResult,
  summary: SessionSummary,
  sessionPath: string,
  workspace: string,
  out: { command: (text: string) => void; text: (text: string) => void },
  /** The typed outputs not of type string: their values are JSON, and stay JSON values inside `outputs`. */
  typed: readonly string[] = [],
): void {
  const warn = (message: string) => out.command(warningAnnotation(message));
  // conclave's own outputs last: no workflow output can replace them (validate refuses the names too).
  writeOutputs(
    {
      ...result.outputs,
      status: result.status,
      'exit-code': String(result.exitCode),
      'session-file': sessionPath,
      'cost-usd': result.usage.costUsd.toFixed(6),
      outputs: JSON.stringify(
        Object.fromEntries(Object.entries(result.outputs).map(([name, value]) => [name, typed.includes(name) ? jsonValue(value) : value])),
      ),
    },
    warn,
  );
  // Paths as the repository names them, so that each finding lands on its line of the diff.
  for (const f of summary.findings) out.command(findingAnnotation({ ...f, path: repoPath(workspace, f.path) }));
  appendSummary(jobSummary(summary, result), warn);
  for (const [agent, messages] of byAgent(summary.messages)) {
    out.command(group(`@${agent}: ${messages.length} message${messages.length === 1 ? '' : 's'}`));
    // Model text: the guard on the streams keeps any line of it from being read as a command.
    for (const m of messages) out.text(`#${m.id} → ${to(m)}\n${printable(m.text)}\n\n`);
    out.command(END_GROUP);
  }
}

/** A typed output's value as the JSON it was written as. */
function jsonValue(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

const to = (m: TranscriptMessage) => (m.recipients.length ? m.recipients.map((r) => `@${r}`).join(', ') : 'no one');

function byAgent(messages: readonly TranscriptMessage[]): Map<string, TranscriptMessage[]> {
  const groups = new Map<string, TranscriptMessage[]>();
  for (const m of messages) {
    const sender = m.kind === 'agent' ? m.sender : m.kind;
    groups.set(sender, [...(groups.get(sender) ?? []), m]);
  }
  return groups;
}

/**
 * The job summary: the result, the outputs, the transcript folded per agent, the proposals with
 * their tallies, usage and cost per agent. Long messages are cut, with a note, until it fits
 * GitHub's 1 MiB limit.
 */
export function jobSummary(s: GradedSummary, result: RunResult): string {
  for (const cut of [4000, 1000, 200, 0]) {
    const text = render(s, result, cut);
    if (Buffer.byteLength(text) < SUMMARY_LIMIT - 1024) return text;
  }
  // Still too large (a huge summary or output): cut in bytes, which is what GitHub counts.
  const note = "\n\n*(cut to keep this summary under GitHub's 1 MiB limit: `conclave show` prints the run whole)*\n";
  return `${Buffer.from(render(s, result, 0))
    .subarray(0, SUMMARY_LIMIT - 4096)
    .toString('utf8')
    .replace(/\uFFFD$/, '')}${note}`;
}

function render(s: GradedSummary, result: RunResult, cut: number): string {
  // A parked run (exit 75) is a green step, waiting to be resumed: not a failure.
  const icon = result.exitCode === 0 ? '✅' : result.exitCode === EXIT.waiting ? '⏸️' : '❌';
  const lines = [`## ${icon} conclave: ${inline(s.header.workflow.path)}`, '', `**${result.status}** (exit ${result.exitCode}): ${inline(result.reason)}`, ''];
  if (s.estimate) lines.push(...estimateMarkdown(s.estimate));
  if (result.summary) lines.push(fenced(result.summary), '');
  if (s.graders) lines.push(gradersLine(s.graders), '');
  lines.push(...ballotsSection(s, '###'), ...taintSection(s, '###'), ...outputsTable(result.outputs, '###'));
  lines.push('### Transcript', '');
  let trimmed = 0;
  for (const [agent, messages] of byAgent(s.messages)) {
    lines.push(
      `<details><summary>${agent === 'kickoff' || agent === 'system' ? agent : `@${inline(agent)}`} — ${messages.length} ` +
        `message${messages.length === 1 ? '' : 's'}</summary>`,
      '',
    );
    for (const m of messages) {
      let text = fenced(m.text);
      if (cut > 0 && m.text.length > cut) {
        text = `${fenced(m.text.slice(0, cut))}\n\n*(${m.text.length - cut} more characters in the session file)*`;
        trimmed++;
      } else if (cut === 0) {
        text = `*(${m.text.length} characters in the session file)*`;
        trimmed++;
      }
      lines.push(`**#${inline(String(m.id))} → ${inline(to(m))}**`, '', text, '');
    }
    lines.push('</details>', '');
  }
  if (trimmed > 0)
    lines.push(
      `*${trimmed} long message${trimmed === 1 ? ' was' : 's were'} cut to keep this summary under GitHub's 1 MiB limit: \`conclave show\` prints them whole.*`,
      '',
    );
  lines.push(
    ...findingsTable(s, '###'),
    ...proposalsTable(s, '###'),
    ...documentsSection(s, '###'),
    ...compactionsTable(s, '###'),
    ...timelineChart(s, '###'),
    ...usageTable(s, '### Usage and cost'),
  );
  return `${lines.join('\n')}\n`;
}

/**
 * Step outputs, through @actions/core (GITHUB_OUTPUT, each value safe whatever it holds). A file
 * that cannot be written is a warning: the run's result stands.
 */
export function writeOutputs(outputs: Record<string, string>, warn: (message: string) => void): void {
  if (!process.env.GITHUB_OUTPUT) return;
  try {
    for (const [name, value] of Object.entries(outputs)) core.setOutput(name, value);
  } catch (e) {
    warn(`cannot write the step outputs to GITHUB_OUTPUT (${process.env.GITHUB_OUTPUT}): ${(e as Error).message}`);
  }
}

/** GitHub refuses a step summary over 1 MiB. */
export const SUMMARY_LIMIT = 1024 * 1024;

/** Appends Markdown to the job summary (GITHUB_STEP_SUMMARY); a file that cannot be written is a warning. */
export function appendSummary(markdown: string, warn: (message: string) => void): void {
  const file = process.env.GITHUB_STEP_SUMMARY;
  if (!file) return;
  try {
    appendFileSync(file, markdown);
  } catch (e) {
    warn(`cannot write the job summary to GITHUB_STEP_SUMMARY (${file}): ${(e as Error).message}`);
  }
}
