import { appendFileSync } from 'node:fs';
import type { Diagnostic } from '../../workflow/diagnostic.js';
import { cell, inline } from '../markdown-tables.js';
import { repoPath } from './sarif.js';

/**
 * The job summary of a workflow that could not run: what is wrong, each problem at its place
 * (a summary left empty says nothing to whoever opens the run). A file that cannot be written is
 * passed over: the annotations and the log say it too.
 */
export function writeInvalidSummary(file: string, diagnostics: readonly Diagnostic[], unreadable?: string): void {
  const target = process.env.GITHUB_STEP_SUMMARY;
  if (!target) return;
  const errors = diagnostics.filter((d) => d.severity === 'error');
  const rows = errors.map((d) => `| ${cell(`${repoPath(process.cwd(), d.file)}:${d.line}:${d.col}`)} | ${cell(d.message)} |`);
  const lines = [
    `## ❌ conclave: ${inline(repoPath(process.cwd(), file))}`,
    '',
    `**invalid** (exit 2): ${inline(unreadable ?? `the workflow has ${errors.length} error${errors.length === 1 ? '' : 's'}; nothing was run`)}`,
    '',
  ];
  if (rows.length > 0) lines.push('| where | what |', '|---|---|', ...rows, '');
  try {
    appendFileSync(target, `${lines.join('\n')}\n`);
  } catch {
    // The annotations and the log say what is wrong.
  }
}
