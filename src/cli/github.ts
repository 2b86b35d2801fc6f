import { appendFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Diagnostic } from '../workflow/diagnostic.js';

/** GitHub Actions' workflow commands and files, used when conclave runs as a step (GITHUB_ACTIONS=true). */

export function inGitHubActions(): boolean {
  return process.env.GITHUB_ACTIONS === 'true';
}

/** A property of a workflow command (`file=…`): %, CR, LF, `:` and `,` escaped. */
function property(value: string): string {
  return value.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/:/g, '%3A').replace(/,/g, '%2C');
}

/** A workflow command's message: %, CR and LF escaped. */
function data(value: string): string {
  return value.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** `::error file=…,line=…,col=…::message`: GitHub shows it on the line of the file. */
export function annotation(d: Diagnostic): string {
  const level = d.severity === 'warning' ? 'warning' : 'error';
  return `::${level} file=${property(d.file)},line=${d.line},col=${d.col}::${data(d.message)}\n`;
}

/** Tells GitHub to hide a value in every log line from here on. */
export function addMask(value: string): string {
  return value.split(/\r?\n/).filter((line) => line.trim() !== '').map((line) => `::add-mask::${data(line)}\n`).join('');
}

export function group(title: string): string {
  return `::group::${data(title)}\n`;
}

export const END_GROUP = '::endgroup::\n';

/** Writes step outputs to GITHUB_OUTPUT, each as name<<DELIMITER so that any value, multi-line included, is safe. */
export function writeOutputs(outputs: Record<string, string>): void {
  const file = process.env.GITHUB_OUTPUT;
  if (!file) return;
  let text = '';
  for (const [name, value] of Object.entries(outputs)) {
    let delimiter: string;
    do delimiter = `conclave_${randomBytes(8).toString('hex')}`;
    while (value.includes(delimiter));
    text += `${name}<<${delimiter}\n${value}\n${delimiter}\n`;
  }
  appendFileSync(file, text);
}

/** GitHub refuses a step summary over 1 MiB. */
export const SUMMARY_LIMIT = 1024 * 1024;

/** Appends Markdown to the job summary (GITHUB_STEP_SUMMARY). */
export function appendSummary(markdown: string): void {
  const file = process.env.GITHUB_STEP_SUMMARY;
  if (file) appendFileSync(file, markdown);
}
